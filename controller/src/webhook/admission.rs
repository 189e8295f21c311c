//! AdmissionReview in, AdmissionReview out: decoding, the defaulting and validation rules, and
//! the response. No HTTP here.

use kube::Client;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use super::defaulting::{default_labels, labels_patch};
use super::field::{FieldError, denied_status};
use super::rbac::AccessReviewer;
use super::validate_create::{access_requests, validate_create};
use super::validate_update::validate_update;
use crate::api::AppWrapper;
use crate::config::Config;

pub type Review = AdmissionReview<DynamicObject>;

/// A response that ends the review early (the request cannot be read).
type Early = Box<AdmissionResponse>;

/// The two AppWrapper webhooks.
pub struct Webhooks {
    default_queue_name: String,
    /// `None` when `userRBACAdmissionCheck` is off.
    reviewer: Option<AccessReviewer>,
}

impl Webhooks {
    pub fn new(config: &Config, client: Client) -> Self {
        Webhooks {
            default_queue_name: config.appwrapper.default_queue_name.clone(),
            reviewer: config
                .appwrapper
                .user_rbac_admission_check
                .then(|| AccessReviewer::new(client)),
        }
    }

    /// The webhooks as with `userRBACAdmissionCheck` off: they need no API server, and so no
    /// tokio runtime to build a client in.
    pub fn without_access_review(default_queue_name: &str) -> Self {
        Webhooks {
            default_queue_name: default_queue_name.to_owned(),
            reviewer: None,
        }
    }

    /// The mutating webhook: labels on CREATE.
    pub fn mutate(&self, review: Review) -> Review {
        let request = match request(review) {
            Ok(request) => request,
            Err(response) => return response.into_review(),
        };
        let response = AdmissionResponse::from(&request);
        if request.operation != Operation::Create {
            return response.into_review();
        }
        let aw = match appwrapper(&request, false) {
            Ok(aw) => aw,
            Err(response) => return response.into_review(),
        };
        let before = aw.metadata.labels.clone().unwrap_or_default();
        let after = default_labels(&before, &self.default_queue_name, &request.user_info);
        let Some(patch) = labels_patch(aw.metadata.labels.as_ref(), &after) else {
            return response.into_review();
        };
        let patched = serde_json::from_value(patch)
            .map_err(|e| e.to_string())
            .and_then(|patch| {
                response
                    .clone()
                    .with_patch(patch)
                    .map_err(|e| e.to_string())
            });
        match patched {
            Ok(response) => response.into_review(),
            Err(e) => errored(&request, 500, &format!("building the patch: {e}")).into_review(),
        }
    }

    /// The validating webhook: structural rules and RBAC on CREATE, immutability on UPDATE.
    pub async fn validate(&self, review: Review) -> Review {
        let request = match request(review) {
            Ok(request) => request,
            Err(response) => return response.into_review(),
        };
        let errors = match request.operation {
            Operation::Create => match appwrapper(&request, false) {
                Ok(aw) => self.validate_create(&aw, &request).await,
                Err(response) => return response.into_review(),
            },
            Operation::Update => match (appwrapper(&request, true), appwrapper(&request, false)) {
                (Ok(old), Ok(new)) => validate_update(&old, &new),
                (Err(response), _) | (_, Err(response)) => return response.into_review(),
            },
            _ => Vec::new(),
        };
        let mut response = AdmissionResponse::from(&request);
        if !errors.is_empty() {
            response.allowed = false;
            response.result = denied_status(&errors);
        }
        response.into_review()
    }

    async fn validate_create(
        &self,
        aw: &AppWrapper,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Vec<FieldError> {
        let access = match &self.reviewer {
            Some(reviewer) => {
                let namespace = aw.metadata.namespace.as_deref().unwrap_or_default();
                reviewer
                    .review_all(&access_requests(aw), namespace, &request.user_info)
                    .await
            }
            None => Default::default(),
        };
        validate_create(aw, &access)
    }
}

fn request(review: Review) -> Result<AdmissionRequest<DynamicObject>, Early> {
    review.try_into().map_err(|_| {
        Box::new(AdmissionResponse::invalid(
            "the AdmissionReview holds no request",
        ))
    })
}

/// The new object (or the old one), as an AppWrapper in the request's namespace.
fn appwrapper(request: &AdmissionRequest<DynamicObject>, old: bool) -> Result<AppWrapper, Early> {
    let object = if old {
        request.old_object.as_ref()
    } else {
        request.object.as_ref()
    };
    let which = if old { "old object" } else { "object" };
    let object =
        object.ok_or_else(|| errored(request, 400, &format!("the request has no {which}")))?;
    let mut aw: AppWrapper = serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|e| errored(request, 400, &format!("decoding the {which}: {e}")))?;
    if aw
        .metadata
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        aw.metadata.namespace = request.namespace.clone();
    }
    Ok(aw)
}

/// controller-runtime's `admission.Errored`: denied, with the code and the error as message.
fn errored(
    request: &AdmissionRequest<DynamicObject>,
    code: u16,
    message: &str,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request).deny(message);
    response.result.code = code;
    response
}
