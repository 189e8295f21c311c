use crate::webhook::{FieldError, aggregate, invalid_status};

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

#[test]
fn the_status_is_invalid_with_one_cause_per_field() {
    let errors = [
        FieldError::required(
            "spec.components[0].podSets[0].path",
            "podspec must specify path",
        ),
        FieldError::invalid("spec.components", "components contains no podspecs"),
    ];
    let status = invalid_status("aw", &errors);
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert!(
        status
            .message
            .starts_with("AppWrapper.workload.codeflare.dev \"aw\" is invalid: [")
    );
    let details = status.details.unwrap();
    let causes: Vec<_> = details
        .causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(
        causes,
        [
            (
                "spec.components[0].podSets[0].path",
                "FieldValueRequired",
                "Required value: podspec must specify path"
            ),
            (
                "spec.components",
                "FieldValueInvalid",
                "Invalid value: components contains no podspecs"
            ),
        ]
    );
}
