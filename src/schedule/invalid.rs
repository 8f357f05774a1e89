//! The report of an annotation the controller cannot act on. It sits below every module that
//! reads a value, so that they all report alike without importing one another.

/// One annotation the controller cannot act on, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {value:?} {reason}")]
pub struct InvalidAnnotation {
    pub key: String,
    pub value: String,
    pub reason: String,
}

pub(super) fn invalid(key: &str, value: &str, reason: &str) -> InvalidAnnotation {
    InvalidAnnotation {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}
