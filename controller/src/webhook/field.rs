//! Field errors in the shape of apimachinery's `field.ErrorList`, and the `Invalid` status an
//! aggregated list becomes (what controller-runtime returns for a denied AppWrapper).

use std::fmt;

use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};

use crate::api::{GROUP, KIND};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    Invalid,
    Forbidden,
    Required,
    Internal,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            ErrorType::Invalid => "Invalid value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Required => "Required value",
            ErrorType::Internal => "Internal error",
        }
    }

    fn cause_reason(self) -> &'static str {
        match self {
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Internal => "InternalError",
        }
    }
}

/// One error on one field, e.g. `spec.components[0].template: Forbidden: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub kind: ErrorType,
    /// The offending value for `Invalid` errors on scalar fields; whole objects are left out.
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Invalid, detail)
    }

    pub fn invalid_value(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        FieldError {
            value: Some(format!("{value:?}")),
            ..Self::invalid(field, detail)
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Forbidden, detail)
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Required, detail)
    }

    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorType::Internal, detail)
    }

    fn new(field: impl Into<String>, kind: ErrorType, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind,
            value: None,
            detail: detail.into(),
        }
    }

    /// The message without the field path (apimachinery's `ErrorBody`).
    pub fn body(&self) -> String {
        let mut body = self.kind.as_str().to_owned();
        if let Some(value) = &self.value {
            body.push_str(": ");
            body.push_str(value);
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// `field.ErrorList.ToAggregate()`: duplicates dropped, one message as is, several in brackets.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut messages: Vec<String> = Vec::new();
    for message in errors.iter().map(ToString::to_string) {
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `apierrors.NewInvalid` for an AppWrapper: code 422, reason `Invalid`, one cause per error.
pub fn invalid_status(name: &str, errors: &[FieldError]) -> Status {
    let message = format!("{KIND}.{GROUP} {name:?} is invalid: {}", aggregate(errors));
    let causes = errors
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.cause_reason().to_owned(),
            message: e.body(),
            field: e.field.clone(),
        })
        .collect();
    Status::failure(&message, "Invalid")
        .with_code(422)
        .with_details(StatusDetails {
            name: name.to_owned(),
            group: GROUP.to_owned(),
            kind: KIND.to_owned(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        })
}

/// Field path helpers: `spec.components[i]` and friends.
pub mod path {
    pub const COMPONENTS: &str = "spec.components";

    pub fn component(i: usize) -> String {
        format!("{COMPONENTS}[{i}]")
    }

    pub fn template(i: usize) -> String {
        format!("{}.template", component(i))
    }

    pub fn label(key: &str) -> String {
        format!("metadata.labels[{key}]")
    }
}
