//! The TokenReviews and SubjectAccessReviews behind `/metrics`, with their answers cached for
//! controller-runtime's periods (failures are not cached).

use std::sync::Mutex;
use std::time::Instant;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::Client;
use kube::api::{Api, PostParams};

use super::metrics_auth::{
    ALLOW_TTL, Authentication, Authorization, DENY_TTL, Refusal, TOKEN_TTL, access_review,
    authentication, authorization, bearer_token, refuse_unauthenticated, refuse_unauthorized,
};
use super::ttl_cache::TtlCache;

/// The API server could not make a review.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub String);

/// Who makes the reviews: the API server, or a test's stand-in.
pub trait Reviewer: Send + Sync {
    fn token_review(&self, review: TokenReview) -> BoxFuture<'_, Result<TokenReview, ReviewError>>;
    fn access_review(
        &self,
        review: SubjectAccessReview,
    ) -> BoxFuture<'_, Result<SubjectAccessReview, ReviewError>>;
}

struct ApiServer(Client);

impl Reviewer for ApiServer {
    fn token_review(&self, review: TokenReview) -> BoxFuture<'_, Result<TokenReview, ReviewError>> {
        Box::pin(async move {
            Api::<TokenReview>::all(self.0.clone())
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| ReviewError(e.to_string()))
        })
    }

    fn access_review(
        &self,
        review: SubjectAccessReview,
    ) -> BoxFuture<'_, Result<SubjectAccessReview, ReviewError>> {
        Box::pin(async move {
            Api::<SubjectAccessReview>::all(self.0.clone())
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| ReviewError(e.to_string()))
        })
    }
}

pub struct MetricsAuth {
    reviewer: Box<dyn Reviewer>,
    tokens: Mutex<TtlCache<String, Authentication>>,
    decisions: Mutex<TtlCache<String, Authorization>>,
}

impl MetricsAuth {
    pub fn new(client: Client) -> Self {
        Self::with_reviewer(ApiServer(client))
    }

    pub fn with_reviewer(reviewer: impl Reviewer + 'static) -> Self {
        MetricsAuth {
            reviewer: Box::new(reviewer),
            tokens: Mutex::default(),
            decisions: Mutex::default(),
        }
    }

    /// `Ok` when the request (its `Authorization` header, method and path) may be answered.
    pub async fn check(
        &self,
        header: Option<&str>,
        method: &str,
        path: &str,
    ) -> Result<(), Refusal> {
        let authenticated = match bearer_token(header) {
            Some(token) => self.authenticate(token).await,
            None => Authentication::Rejected,
        };
        if let Some(refusal) = refuse_unauthenticated(&authenticated) {
            if let Authentication::Failed(why) = &authenticated {
                tracing::error!("metrics: authentication failed: {why}");
            }
            return Err(refusal);
        }
        let Authentication::User(user) = authenticated else {
            return Ok(());
        };
        let authorized = self.authorize(&user, method, path).await;
        if let Authorization::Failed(why) = &authorized {
            tracing::error!("metrics: authorization failed: {why}");
        }
        refuse_unauthorized(&user, &authorized).map_or(Ok(()), Err)
    }

    async fn authenticate(&self, token: &str) -> Authentication {
        let now = Instant::now();
        if let Some(known) = self
            .tokens
            .lock()
            .ok()
            .and_then(|mut c| c.get(&token.to_owned(), now))
        {
            return known;
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = match self.reviewer.token_review(review).await {
            Ok(answer) => authentication(answer.status.as_ref()),
            Err(e) => return Authentication::Failed(e.to_string()),
        };
        if let Ok(mut cache) = self.tokens.lock() {
            cache.insert(token.to_owned(), answer.clone(), TOKEN_TTL, now);
        }
        answer
    }

    async fn authorize(&self, user: &UserInfo, method: &str, path: &str) -> Authorization {
        let spec = access_review(user, method, path);
        let key = serde_json::to_string(&spec).unwrap_or_default();
        let now = Instant::now();
        if let Some(known) = self
            .decisions
            .lock()
            .ok()
            .and_then(|mut c| c.get(&key, now))
        {
            return known;
        }
        let review = SubjectAccessReview {
            spec,
            ..Default::default()
        };
        let answer = match self.reviewer.access_review(review).await {
            Ok(answer) => authorization(answer.status.as_ref()),
            Err(e) => return Authorization::Failed(e.to_string()),
        };
        let ttl = match answer {
            Authorization::Allowed => ALLOW_TTL,
            _ => DENY_TTL,
        };
        if let Ok(mut cache) = self.decisions.lock() {
            cache.insert(key, answer.clone(), ttl, now);
        }
        answer
    }
}
