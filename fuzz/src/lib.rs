//! What the fuzz targets share: the Go oracle, and the text formats of their inputs.

pub mod oracle;
