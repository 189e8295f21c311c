//! The webhooks end to end without HTTP: an AdmissionReview (JSON) is decoded, defaulted,
//! validated and encoded. Every review is answered, the answer carries the request's uid, and
//! a request whose object cannot be read is an error (code 400), never an allow.
#![no_main]

use std::sync::OnceLock;

use appwrapper_controller::api::AppWrapper;
use appwrapper_controller::webhook::{Review, Webhooks};
use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn webhooks() -> &'static Webhooks {
    static WEBHOOKS: OnceLock<Webhooks> = OnceLock::new();
    WEBHOOKS.get_or_init(|| Webhooks::without_access_review("default-queue"))
}

/// Why the controller cannot read the request's AppWrapper(s) for `operation`, if it cannot.
/// Absent metadata is empty metadata, as in Go's decoding (and kube's `DynamicObject`).
fn unreadable(review: &Value, operation: &str) -> Option<String> {
    let request = &review["request"];
    let needed: &[&str] = match operation {
        "CREATE" => &["object"],
        "UPDATE" => &["oldObject", "object"],
        _ => &[],
    };
    needed.iter().find_map(|field| match request.get(*field) {
        None | Some(Value::Null) => Some(format!("no {field}")),
        Some(object) => {
            let mut object = object.clone();
            if let Some(fields) = object.as_object_mut() {
                fields.entry("metadata").or_insert_with(|| json!({}));
            }
            serde_json::from_value::<AppWrapper>(object)
                .err()
                .map(|e| format!("{field}: {e}"))
        }
    })
}

fn check(answer: &Review, review: &Value, unreadable: Option<String>) {
    let encoded = serde_json::to_vec(answer).expect("an answer encodes");
    let answer: Value = serde_json::from_slice(&encoded).expect("an answer is JSON");
    let response = &answer["response"];
    assert!(response.is_object(), "unanswered: {answer}");
    let allowed = response["allowed"].as_bool().expect("allowed is a bool");
    if review["request"].is_object() {
        assert_eq!(response["uid"], review["request"]["uid"], "{answer}");
    } else {
        assert!(!allowed, "a review without a request is allowed: {answer}");
    }
    if let Some(why) = unreadable {
        assert!(!allowed, "allowed although {why}: {answer}");
        assert_eq!(response["status"]["code"], 400, "{why}: {answer}");
    }
    if let Some(patch) = response.get("patch").and_then(Value::as_str) {
        assert!(allowed, "a patch in a denial: {answer}");
        assert!(!patch.is_empty(), "an empty patch: {answer}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(review) = serde_json::from_slice::<Review>(data) else {
        return;
    };
    // A field the review ignores may hold what serde_json's Value refuses (a lone surrogate);
    // then the review as decoded stands for the input.
    let raw: Value = serde_json::from_slice(data)
        .unwrap_or_else(|_| serde_json::to_value(&review).expect("a review encodes"));
    let operation = raw["request"]["operation"].as_str().unwrap_or_default();

    let mutated = webhooks().mutate(review.clone());
    let create_unreadable = (operation == "CREATE")
        .then(|| unreadable(&raw, operation))
        .flatten();
    check(&mutated, &raw, create_unreadable);

    let validated = block_on(webhooks().validate(review));
    check(&validated, &raw, unreadable(&raw, operation));
});
