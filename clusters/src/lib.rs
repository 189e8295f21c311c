//! Clusters for the conformance harness.
