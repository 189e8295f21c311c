//! The user RBAC check (§6.3 step 4) against a fake API server: discovery and
//! SubjectAccessReviews answered by an in-process router.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use k8s_openapi::api::authentication::v1::UserInfo;
use kube::api::GroupVersionKind;
use serde_json::{Value, json};

use crate::webhook::{Access, AccessReviewer};

#[derive(Clone, Default)]
struct Fake {
    /// The spec of every SubjectAccessReview posted.
    reviews: Arc<Mutex<Vec<Value>>>,
    /// Every discovery path read.
    discovery: Arc<Mutex<Vec<String>>>,
    /// Answer SubjectAccessReviews with 500.
    broken: bool,
}

/// A JSON answer. axum's own `Json` needs its `json` feature, which turns on serde_json's
/// `raw_value` for the whole build, and with it a map whose first key is
/// `$serde_json::private::RawValue` stops parsing as a map (see `api::tests`).
struct Json<T>(T);

impl IntoResponse for Json<Value> {
    fn into_response(self) -> Response {
        ([(CONTENT_TYPE, "application/json")], self.0.to_string()).into_response()
    }
}

fn resource(name: &str, kind: &str) -> Value {
    json!({"name": name, "singularName": "", "namespaced": true, "kind": kind, "verbs": ["create"]})
}

fn resource_list(group_version: &str, resources: Vec<Value>) -> Json<Value> {
    Json(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": resources}),
    )
}

/// Pods are allowed, everything else denied.
async fn review(State(fake): State<Fake>, body: Bytes) -> impl IntoResponse {
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    if fake.broken {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({}))).into_response();
    }
    let spec = review["spec"].clone();
    fake.reviews.lock().unwrap().push(spec.clone());
    let allowed = spec["resourceAttributes"]["resource"] == "pods";
    Json(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": spec, "status": {"allowed": allowed}}),
    )
    .into_response()
}

async fn core(State(fake): State<Fake>) -> Json<Value> {
    fake.discovery.lock().unwrap().push("/api/v1".into());
    // Another kind first, and a subresource of the kind before the kind itself.
    resource_list(
        "v1",
        vec![
            resource("bindings", "Binding"),
            resource("pods/status", "Pod"),
            resource("pods", "Pod"),
        ],
    )
}

async fn apps(State(fake): State<Fake>) -> Json<Value> {
    fake.discovery.lock().unwrap().push("/apis/apps/v1".into());
    resource_list(
        "apps/v1",
        vec![
            resource("deployments/scale", "Scale"),
            resource("deployments", "Deployment"),
        ],
    )
}

async fn unknown(State(fake): State<Fake>) -> StatusCode {
    fake.discovery
        .lock()
        .unwrap()
        .push("/apis/example.com/v1".into());
    StatusCode::NOT_FOUND
}

fn reviewer(fake: &Fake) -> AccessReviewer {
    let router = Router::new()
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(review),
        )
        .route("/api/v1", get(core))
        .route("/apis/apps/v1", get(apps))
        .route("/apis/example.com/v1", get(unknown))
        .with_state(fake.clone());
    AccessReviewer::new(kube::Client::new(router, "default"))
}

fn alice() -> UserInfo {
    UserInfo {
        username: Some("alice".into()),
        uid: Some("u-42".into()),
        groups: Some(vec!["devs".into()]),
        extra: Some(BTreeMap::from([("scope".into(), vec!["x".into()])])),
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

#[tokio::test]
async fn each_component_is_reviewed_as_a_create_by_the_requesting_user() {
    let fake = Fake::default();
    let requests = [
        (0, gvk("", "v1", "Pod")),
        (2, gvk("apps", "v1", "Deployment")),
    ];
    let outcomes = reviewer(&fake)
        .review_all(&requests, "team-a", &alice())
        .await;
    assert_eq!(
        outcomes,
        BTreeMap::from([
            (0, Access::Allowed),
            (
                2,
                Access::Denied {
                    user: "alice".into(),
                    resource: "deployments".into(),
                    namespace: "team-a".into(),
                }
            ),
        ])
    );
    let user =
        json!({"user": "alice", "uid": "u-42", "groups": ["devs"], "extra": {"scope": ["x"]}});
    let expected: Vec<Value> = [("", "pods"), ("apps", "deployments")]
        .into_iter()
        .map(|(group, resource)| {
            let mut spec = user.clone();
            spec["resourceAttributes"] = json!({"namespace": "team-a", "verb": "create",
                "group": group, "version": "v1", "resource": resource});
            spec
        })
        .collect();
    assert_eq!(*fake.reviews.lock().unwrap(), expected);
}

/// The plural name comes from discovery (subresources skipped) and is cached per kind; a kind
/// that discovery does not know is reviewed as `*` and looked up again next time.
#[tokio::test]
async fn resources_are_discovered_once_and_unknown_kinds_are_reviewed_as_any() {
    let fake = Fake::default();
    let reviewer = reviewer(&fake);
    for _ in 0..2 {
        reviewer
            .review(&gvk("apps", "v1", "Deployment"), "team-a", &alice())
            .await;
        let outcome = reviewer
            .review(&gvk("example.com", "v1", "Thing"), "team-a", &alice())
            .await;
        assert_eq!(
            outcome,
            Access::Denied {
                user: "alice".into(),
                resource: "*".into(),
                namespace: "team-a".into(),
            }
        );
    }
    assert_eq!(
        *fake.discovery.lock().unwrap(),
        [
            "/apis/apps/v1",
            "/apis/example.com/v1",
            "/apis/example.com/v1"
        ]
    );
}

#[tokio::test]
async fn a_review_that_cannot_be_made_is_a_failure() {
    let fake = Fake {
        broken: true,
        ..Fake::default()
    };
    let outcome = reviewer(&fake)
        .review(&gvk("", "v1", "Pod"), "team-a", &alice())
        .await;
    assert!(matches!(outcome, Access::Failed(_)), "{outcome:?}");
}
