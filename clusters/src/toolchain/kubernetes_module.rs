//! The wrapper module of a Kubernetes release without a committed one. The release's own
//! go.mod points each staging repository (`k8s.io/api`, ...) at `./staging/src/...`, which a
//! module that requires the release cannot follow, so each becomes a replace by the tag the
//! staging repository publishes with the release (`v1.37.2` -> `v0.37.2`).

use std::path::{Path, PathBuf};

use super::Component;

/// The staging repositories `upstream` (the release's go.mod) replaces by a local directory.
pub fn staging_repos(upstream: &str) -> Vec<&str> {
    upstream
        .lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix("replace ").unwrap_or(line.trim());
            let (from, to) = line.split_once("=>")?;
            to.trim().starts_with("./staging/").then(|| from.trim())
        })
        .collect()
}

/// A Kubernetes release tag as `--kubernetes` takes it: `v1.<minor>.<patch>`.
pub fn release(tag: &str) -> Result<String, String> {
    let numbers = tag
        .strip_prefix("v1.")
        .map(|rest| rest.split('.').collect::<Vec<_>>());
    match numbers.as_deref() {
        Some([minor, patch])
            if [minor, patch]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(tag.to_string())
        }
        _ => Err(format!(
            "{tag:?} is not a Kubernetes release tag (v1.<minor>.<patch>, e.g. {})",
            super::KUBERNETES
        )),
    }
}

/// `v1.37.2` -> `v0.37.2`, the staging repositories' tag of that release.
pub fn staging_tag(version: &str) -> Option<String> {
    version.strip_prefix("v1.").map(|rest| format!("v0.{rest}"))
}

/// The wrapper's go.mod before `go mod tidy`: the release, its staging repositories at their
/// tags, and the control plane's commands as tools.
pub fn go_mod(version: &str, upstream: &str) -> Result<String, String> {
    let tag = staging_tag(version)
        .ok_or_else(|| format!("{version} is not a Kubernetes 1.x release tag"))?;
    let repos = staging_repos(upstream);
    if repos.is_empty() {
        return Err(format!(
            "the go.mod of k8s.io/kubernetes {version} replaces no staging repository"
        ));
    }
    let mut text = format!(
        "module awconf.invalid/toolchain/kubernetes\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes {version}\n\n"
    );
    for repo in repos {
        text.push_str(&format!("replace {repo} => {repo} {tag}\n\n"));
    }
    text.push_str("tool (\n");
    for binary in Component::kubernetes(version).binaries() {
        text.push_str(&format!("\tk8s.io/kubernetes/cmd/{binary}\n"));
    }
    text.push_str(")\n");
    Ok(text)
}

/// Where `go mod download` put the release's go.mod.
pub fn upstream_go_mod_path(download_json: &str) -> Option<PathBuf> {
    let value: serde_json::Value = serde_json::from_str(download_json).ok()?;
    value["GoMod"].as_str().map(PathBuf::from)
}

/// Writes `<cache>/modules/kubernetes-<version>/go.mod` (before `go mod tidy`), fetching the
/// release's go.mod through `go mod download`.
pub fn write(version: &str, dir: &Path) -> Result<(), String> {
    let out = std::process::Command::new("go")
        .args(["mod", "download", "-json"])
        .arg(format!("k8s.io/kubernetes@{version}"))
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .current_dir(std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running `go mod download`: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "`go mod download k8s.io/kubernetes@{version}` failed; is it served by the Go module proxy?\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let path = upstream_go_mod_path(&stdout)
        .ok_or_else(|| format!("`go mod download` named no go.mod:\n{stdout}"))?;
    let upstream =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let text = go_mod(version, &upstream)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::write(dir.join("go.mod"), text).map_err(|e| format!("writing {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPSTREAM: &str = "module k8s.io/kubernetes\n\ngo 1.25.0\n\nrequire (\n\tk8s.io/api v0.0.0\n)\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/kubectl => ./staging/src/k8s.io/kubectl\n\tgithub.com/x/y => github.com/x/y v1.0.0\n)\n\nreplace k8s.io/cri-api => ./staging/src/k8s.io/cri-api\n";

    #[test]
    fn staging_repositories_are_the_ones_replaced_by_a_local_directory() {
        assert_eq!(
            staging_repos(UPSTREAM),
            ["k8s.io/api", "k8s.io/kubectl", "k8s.io/cri-api"]
        );
    }

    #[test]
    fn each_staging_repository_is_replaced_by_the_tag_of_its_release() {
        let text = go_mod("v1.35.4", UPSTREAM).unwrap();
        assert!(text.contains("require k8s.io/kubernetes v1.35.4\n"));
        assert!(text.contains("replace k8s.io/api => k8s.io/api v0.35.4\n"));
        assert!(text.contains("replace k8s.io/cri-api => k8s.io/cri-api v0.35.4\n"));
        assert!(!text.contains("github.com/x/y"));
        assert!(text.contains("\tk8s.io/kubernetes/cmd/kube-apiserver\n"));
        assert!(go_mod("v2.0.0", UPSTREAM).is_err());
        assert!(go_mod("v1.35.4", "module k8s.io/kubernetes\n").is_err());
    }

    /// The committed module of the default release is what the generator makes of it, tidied.
    #[test]
    fn the_generator_agrees_with_the_committed_module() {
        let committed = super::super::wrappers::find("kubernetes").unwrap().go_mod;
        let tag = staging_tag(super::super::KUBERNETES).unwrap();
        for line in committed.lines().filter(|l| l.starts_with("replace ")) {
            assert!(line.ends_with(&tag), "{line}");
        }
    }

    #[test]
    fn a_release_tag_is_v1_minor_patch() {
        assert_eq!(release("v1.35.4").as_deref(), Ok("v1.35.4"));
        for bad in [
            "1.35.4",
            "v1.35",
            "v2.0.0",
            "v1.35.4-rc.0",
            "v1..4",
            "latest",
        ] {
            assert!(release(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_download_names_the_go_mod() {
        let json =
            r#"{"Path": "k8s.io/kubernetes", "GoMod": "/g/k8s.io/kubernetes/@v/v1.37.2.mod"}"#;
        assert_eq!(
            upstream_go_mod_path(json),
            Some(PathBuf::from("/g/k8s.io/kubernetes/@v/v1.37.2.mod"))
        );
    }
}
