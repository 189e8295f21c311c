//! Conformance steps.
