//! The AdmissionReview in an HTTP request, checked as far as the rules need before they see
//! it: anything else is the client's error, answered with 400 and what is wrong.

use kube::core::DynamicObject;

use super::admission::Review;
use crate::api::AppWrapper;

const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
const REVIEW_KIND: &str = "AdmissionReview";
const APPWRAPPER_API_VERSION: &str = "workload.codeflare.dev/v1beta2";
const APPWRAPPER_KIND: &str = "AppWrapper";

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("Content-Type is {0}; an AdmissionReview is sent as application/json")]
    ContentType(String),
    #[error("the request body is empty")]
    Empty,
    #[error("the body is not an AdmissionReview: {0}")]
    NotAReview(String),
    #[error("expected an {REVIEW_API_VERSION} {REVIEW_KIND}, got {api_version:?} {kind:?}")]
    ReviewType { api_version: String, kind: String },
    #[error("the AdmissionReview holds no request")]
    NoRequest,
    #[error("the request has no uid")]
    NoUid,
    #[error("the request's {which} is not a {APPWRAPPER_API_VERSION} {APPWRAPPER_KIND}: {why}")]
    NotAnAppWrapper { which: &'static str, why: String },
}

/// The review in `body`, sent with `content_type`.
pub fn decode(content_type: Option<&str>, body: &[u8]) -> Result<Review, DecodeError> {
    check_content_type(content_type)?;
    if body.is_empty() {
        return Err(DecodeError::Empty);
    }
    let mut json = serde_json::Deserializer::from_slice(body);
    let review: Review = serde_path_to_error::deserialize(&mut json)
        .map_err(|e| DecodeError::NotAReview(e.to_string()))?;
    json.end()
        .map_err(|e| DecodeError::NotAReview(e.to_string()))?;
    if review.types.api_version != REVIEW_API_VERSION || review.types.kind != REVIEW_KIND {
        return Err(DecodeError::ReviewType {
            api_version: review.types.api_version,
            kind: review.types.kind,
        });
    }
    let request = review.request.as_ref().ok_or(DecodeError::NoRequest)?;
    if request.uid.is_empty() {
        return Err(DecodeError::NoUid);
    }
    check_appwrapper("object", request.object.as_ref())?;
    check_appwrapper("oldObject", request.old_object.as_ref())?;
    Ok(review)
}

fn check_content_type(content_type: Option<&str>) -> Result<(), DecodeError> {
    let Some(content_type) = content_type else {
        return Err(DecodeError::ContentType("missing".to_owned()));
    };
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    if media_type.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(DecodeError::ContentType(format!("{content_type:?}")))
    }
}

/// An absent object is left to the rules (they know which operations need one).
fn check_appwrapper(
    which: &'static str,
    object: Option<&DynamicObject>,
) -> Result<(), DecodeError> {
    let Some(object) = object else {
        return Ok(());
    };
    let not = |why: String| DecodeError::NotAnAppWrapper { which, why };
    let (api_version, kind) = object
        .types
        .as_ref()
        .map(|t| (t.api_version.as_str(), t.kind.as_str()))
        .unwrap_or_default();
    if api_version != APPWRAPPER_API_VERSION || kind != APPWRAPPER_KIND {
        return Err(not(format!("it is {api_version:?} {kind:?}")));
    }
    serde_json::to_value(object)
        .and_then(serde_json::from_value::<AppWrapper>)
        .map_err(|e| not(e.to_string()))?;
    Ok(())
}
