use crate::webhook::{FieldError, aggregate, denied_status};

#[test]
fn one_error_is_reported_as_is_and_several_in_brackets() {
    let a = FieldError::forbidden(
        "spec.components[0].template",
        "Nested AppWrappers are forbidden",
    );
    let b = FieldError::invalid_value("spec.components[1].podSets[0].path", "", "bad");
    assert_eq!(
        aggregate(std::slice::from_ref(&a)),
        "spec.components[0].template: Forbidden: Nested AppWrappers are forbidden"
    );
    assert_eq!(
        aggregate(&[a.clone(), b.clone(), a.clone()]),
        "[spec.components[0].template: Forbidden: Nested AppWrappers are forbidden, \
         spec.components[1].podSets[0].path: Invalid value: \"\": bad]"
    );
}

/// What controller-runtime's `admission.Denied` answers; the API server then prefixes the
/// message with `admission webhook "vappwrapper.kb.io" denied the request: `.
#[test]
fn the_denial_is_forbidden_with_the_aggregate_as_message() {
    let errors = [
        FieldError::required(
            "spec.components[0].podSets[0].path",
            "podspec must specify path",
        ),
        FieldError::invalid("spec.components", "components contains no podspecs"),
    ];
    let status = denied_status(&errors);
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        serde_json::json!({
            "code": 403,
            "reason": "Forbidden",
            "message": "[spec.components[0].podSets[0].path: Required value: podspec must specify path, \
                        spec.components: Invalid value: components contains no podspecs]",
        })
    );
}
