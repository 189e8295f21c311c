//! The mutating webhook's defaulting on CREATE (§6.2), as a pure function of the labels.

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::UserInfo;

use super::sanitize::sanitize;
use crate::api::{QUEUE_NAME_LABEL, USER_LABEL, USERID_LABEL};

/// The labels a new AppWrapper should have: the default queue name unless one is set, and the
/// requesting user's sanitized name and UID, replacing whatever the user wrote there.
pub fn default_labels(
    labels: &BTreeMap<String, String>,
    default_queue_name: &str,
    user: &UserInfo,
) -> BTreeMap<String, String> {
    let mut labels = labels.clone();
    if !default_queue_name.is_empty() {
        labels
            .entry(QUEUE_NAME_LABEL.to_owned())
            .or_insert_with(|| default_queue_name.to_owned());
    }
    let name = user.username.as_deref().unwrap_or_default();
    let uid = user.uid.as_deref().unwrap_or_default();
    labels.insert(USER_LABEL.to_owned(), sanitize(name));
    labels.insert(USERID_LABEL.to_owned(), sanitize(uid));
    labels
}

/// The JSON Patch that turns `before` into `after`: `metadata.labels` written as a whole.
pub fn labels_patch(
    before: Option<&BTreeMap<String, String>>,
    after: &BTreeMap<String, String>,
) -> Option<serde_json::Value> {
    (before != Some(after))
        .then(|| serde_json::json!([{ "op": "add", "path": "/metadata/labels", "value": after }]))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn user(name: &str, uid: &str) -> UserInfo {
        UserInfo {
            username: Some(name.to_owned()),
            uid: Some(uid.to_owned()),
            ..Default::default()
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[rstest]
    #[case::default_queue_is_set(
        &[], "system-default-queue", "limited-user", "8da0",
        &[(QUEUE_NAME_LABEL, "system-default-queue"), (USER_LABEL, "limited-user"), (USERID_LABEL, "8da0")])]
    #[case::user_queue_wins(
        &[(QUEUE_NAME_LABEL, "user-provided-queue")], "system-default-queue", "u", "1",
        &[(QUEUE_NAME_LABEL, "user-provided-queue"), (USER_LABEL, "u"), (USERID_LABEL, "1")])]
    #[case::no_default_queue(
        &[], "", "u", "1",
        &[(USER_LABEL, "u"), (USERID_LABEL, "1")])]
    #[case::user_values_are_overwritten(
        &[(USER_LABEL, "bad"), (USERID_LABEL, "bad"), ("app", "x")], "", "system:serviceaccount:ns:sa", "",
        &[("app", "x"), (USER_LABEL, "system_serviceaccount_ns_sa"), (USERID_LABEL, "")])]
    fn defaults(
        #[case] existing: &[(&str, &str)],
        #[case] queue: &str,
        #[case] name: &str,
        #[case] uid: &str,
        #[case] expected: &[(&str, &str)],
    ) {
        assert_eq!(
            default_labels(&labels(existing), queue, &user(name, uid)),
            labels(expected)
        );
    }

    #[test]
    fn patch_writes_labels_only_when_they_change() {
        let after = labels(&[(USER_LABEL, "u")]);
        assert_eq!(labels_patch(Some(&after), &after), None);
        let patch = labels_patch(None, &after).unwrap();
        assert_eq!(
            patch,
            serde_json::json!([{"op": "add", "path": "/metadata/labels", "value": {USER_LABEL: "u"}}])
        );
    }
}
