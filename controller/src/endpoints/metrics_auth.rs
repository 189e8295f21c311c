//! Who may read `/metrics`, decided as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` decides it: the bearer token is authenticated
//! by a TokenReview, the user authorized by a SubjectAccessReview for the request's path and
//! verb (a non-resource URL), and refusals answered with its status codes and messages.

use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};

/// How long a token's review is kept, authenticated or not.
pub const TOKEN_TTL: Duration = Duration::from_secs(60);
/// How long an allowing review is kept.
pub const ALLOW_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a denying review is kept.
pub const DENY_TTL: Duration = Duration::from_secs(30);

const AUTHENTICATED_GROUP: &str = "system:authenticated";
const ANONYMOUS_USER: &str = "system:anonymous";

#[derive(Clone, Debug, PartialEq)]
pub enum Authentication {
    User(UserInfo),
    /// No usable bearer token, or the API server did not accept it.
    Rejected,
    /// The review could not be made.
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authorization {
    Allowed,
    /// Denied, or no authorizer had an opinion.
    Denied(String),
    Failed(String),
}

/// An answer in place of the metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

/// The token of an `Authorization: Bearer <token>` header, read as the API server's bearer
/// authenticator reads it.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let header = header?.trim();
    let mut parts = header.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// What a TokenReview's status says about the token. An authenticated user also belongs to
/// `system:authenticated`.
pub fn authentication(status: Option<&TokenReviewStatus>) -> Authentication {
    let Some(status) = status.filter(|s| s.authenticated == Some(true)) else {
        return Authentication::Rejected;
    };
    let mut user = status.user.clone().unwrap_or_default();
    let groups = user.groups.get_or_insert_with(Vec::new);
    let anonymous = user.username.as_deref() == Some(ANONYMOUS_USER);
    if !anonymous && !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    Authentication::User(user)
}

/// The SubjectAccessReview for `user` requesting `path` with HTTP `method`.
pub fn access_review(user: &UserInfo, method: &str, path: &str) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: user.username.clone(),
        groups: user.groups.clone(),
        uid: user.uid.clone(),
        extra: user.extra.clone(),
        non_resource_attributes: Some(NonResourceAttributes {
            path: Some(path.to_owned()),
            verb: Some(method.to_ascii_lowercase()),
        }),
        ..Default::default()
    }
}

pub fn authorization(status: Option<&SubjectAccessReviewStatus>) -> Authorization {
    match status {
        Some(s) if s.allowed => Authorization::Allowed,
        Some(s) => Authorization::Denied(s.reason.clone().unwrap_or_default()),
        None => Authorization::Denied(String::new()),
    }
}

pub fn refuse_unauthenticated(authentication: &Authentication) -> Option<Refusal> {
    match authentication {
        Authentication::User(_) => None,
        Authentication::Rejected => Some(refusal(401, "Unauthorized")),
        Authentication::Failed(_) => Some(refusal(500, "Authentication failed")),
    }
}

pub fn refuse_unauthorized(user: &UserInfo, authorization: &Authorization) -> Option<Refusal> {
    let name = user.username.as_deref().unwrap_or_default();
    match authorization {
        Authorization::Allowed => None,
        Authorization::Denied(_) => Some(refusal(
            403,
            &format!("Authorization denied for user {name}"),
        )),
        Authorization::Failed(_) => Some(refusal(
            500,
            &format!("Authorization for user {name} failed"),
        )),
    }
}

fn refusal(status: u16, message: &str) -> Refusal {
    Refusal {
        status,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::none(None, None)]
    #[case::empty(Some(""), None)]
    #[case::bearer(Some("Bearer abc"), Some("abc"))]
    #[case::any_case(Some("bEaReR abc"), Some("abc"))]
    #[case::surrounding_space(Some("  Bearer abc  "), Some("abc"))]
    #[case::extra_parts_ignored(Some("Bearer abc def"), Some("abc"))]
    #[case::space_before_the_token(Some("Bearer  abc"), None)]
    #[case::no_token(Some("Bearer"), None)]
    #[case::basic(Some("Basic dXNlcjpwYXNz"), None)]
    fn bearer_tokens(#[case] header: Option<&str>, #[case] token: Option<&str>) {
        assert_eq!(bearer_token(header), token);
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: Some(name.to_owned()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::no_status(None, Authentication::Rejected)]
    #[case::not_authenticated(
        Some(TokenReviewStatus { authenticated: Some(false), error: Some("invalid bearer token".into()), ..Default::default() }),
        Authentication::Rejected
    )]
    #[case::authenticated_gets_the_group(
        Some(TokenReviewStatus { authenticated: Some(true), user: Some(user("sa", &["system:serviceaccounts"])), ..Default::default() }),
        Authentication::User(user("sa", &["system:serviceaccounts", "system:authenticated"]))
    )]
    #[case::group_not_repeated(
        Some(TokenReviewStatus { authenticated: Some(true), user: Some(user("sa", &["system:authenticated"])), ..Default::default() }),
        Authentication::User(user("sa", &["system:authenticated"]))
    )]
    #[case::anonymous_stays_anonymous(
        Some(TokenReviewStatus { authenticated: Some(true), user: Some(user("system:anonymous", &[])), ..Default::default() }),
        Authentication::User(user("system:anonymous", &[]))
    )]
    fn token_reviews(#[case] status: Option<TokenReviewStatus>, #[case] want: Authentication) {
        assert_eq!(authentication(status.as_ref()), want);
    }

    #[rstest]
    #[case::allowed(Some(SubjectAccessReviewStatus { allowed: true, ..Default::default() }), Authorization::Allowed)]
    #[case::denied(Some(SubjectAccessReviewStatus { allowed: false, denied: Some(true), reason: Some("no".into()), ..Default::default() }), Authorization::Denied("no".into()))]
    #[case::no_opinion(Some(SubjectAccessReviewStatus { allowed: false, ..Default::default() }), Authorization::Denied(String::new()))]
    #[case::no_status(None, Authorization::Denied(String::new()))]
    fn access_reviews(
        #[case] status: Option<SubjectAccessReviewStatus>,
        #[case] want: Authorization,
    ) {
        assert_eq!(authorization(status.as_ref()), want);
    }

    #[test]
    fn the_review_asks_for_the_non_resource_url_and_verb() {
        let spec = access_review(&user("sa", &["g"]), "GET", "/metrics");
        let attributes = spec.non_resource_attributes.unwrap();
        assert_eq!(attributes.path.as_deref(), Some("/metrics"));
        assert_eq!(attributes.verb.as_deref(), Some("get"));
        assert_eq!(spec.user.as_deref(), Some("sa"));
        assert_eq!(spec.groups, Some(vec!["g".to_owned()]));
        assert!(spec.resource_attributes.is_none());
    }

    #[rstest]
    #[case::rejected(Authentication::Rejected, Some((401, "Unauthorized")))]
    #[case::review_failed(Authentication::Failed("timeout".into()), Some((500, "Authentication failed")))]
    #[case::user(Authentication::User(user("sa", &[])), None)]
    fn refusals_before_authorization(
        #[case] authentication: Authentication,
        #[case] want: Option<(u16, &str)>,
    ) {
        assert_eq!(
            refuse_unauthenticated(&authentication),
            want.map(|(status, message)| refusal(status, message))
        );
    }

    #[rstest]
    #[case::allowed(Authorization::Allowed, None)]
    #[case::denied(Authorization::Denied("no".into()), Some((403, "Authorization denied for user sa")))]
    #[case::review_failed(Authorization::Failed("timeout".into()), Some((500, "Authorization for user sa failed")))]
    fn refusals_after_authorization(
        #[case] authorization: Authorization,
        #[case] want: Option<(u16, &str)>,
    ) {
        assert_eq!(
            refuse_unauthorized(&user("sa", &[]), &authorization),
            want.map(|(status, message)| refusal(status, message))
        );
    }
}
