//! The one place that pins what the embedded cluster runs. The wrapper modules under
//! `clusters/toolchain/` require the same versions; a test keeps the two in step.

pub const KUBERNETES: &str = "v1.36.3";
/// Kubernetes releases with a committed wrapper module under `clusters/toolchain/`
/// (`kubernetes` for the default, `kubernetes-<tag>` for the others). Other 1.x tags get a
/// wrapper generated in the cache, which needs the Go module proxy.
pub const KUBERNETES_PINNED: &[&str] = &["v1.36.3", "v1.34.12", "v1.35.4", "v1.37.2"];
pub const ETCD: &str = "v3.6.16";
pub const KWOK: &str = "v0.8.0";
pub const KUEUE_DEFAULT: &str = "v0.19.2";
/// Kueue versions with a committed wrapper module (go.mod and go.sum) under `clusters/toolchain/`.
/// Other versions get a wrapper generated in the cache, which needs the Go module proxy.
pub const KUEUE_PINNED: &[&str] = &["v0.19.2", "v0.18.4", "v0.17.0"];
/// Pinned Kueue versions whose wrapper module requires every module at the version
/// [`KUEUE_DEFAULT`]'s requires (newer patch and minor releases than their own go.mod's, such as
/// client-go v0.36.2 for v0.36.1): built after it, they compile only their own packages. v0.18.4
/// is where the upgrade scenario starts, so every first run builds it.
pub const KUEUE_ON_DEFAULT_MODULES: &[&str] = &["v0.18.4"];
/// The reference AppWrapper operator (github.com/project-codeflare/appwrapper), the version
/// Kueue v0.19.2 pins; `--controller reference` runs it.
pub const APPWRAPPER_DEFAULT: &str = "v1.2.2";
/// Reference versions with a committed wrapper module under `clusters/toolchain/`.
pub const APPWRAPPER_PINNED: &[&str] = &["v1.2.2"];
/// The oldest Go that builds all of the above (Kubernetes 1.36 and Kueue 0.18+ say `go 1.26.0`).
pub const MIN_GO: (u32, u32) = (1, 26);
