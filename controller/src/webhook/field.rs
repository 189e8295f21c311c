//! Field errors in the shape of apimachinery's `field.ErrorList`, and the denial an aggregated
//! list becomes (what controller-runtime answers for a denied AppWrapper).

use std::fmt;

use kube::core::Status;

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

/// controller-runtime's `admission.Denied` for the plain error the reference's validator
/// returns (`ErrorList.ToAggregate()`): code 403, reason `Forbidden`, the aggregate as message.
pub fn denied_status(errors: &[FieldError]) -> Status {
    Status {
        code: 403,
        reason: "Forbidden".to_owned(),
        message: aggregate(errors),
        ..Status::default()
    }
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
