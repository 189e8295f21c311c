//! The committed wrapper modules (`clusters/toolchain/<name>/`), compiled into awconf so that
//! an installed binary needs no source tree: a build writes its module into the cache.

use std::path::{Path, PathBuf};

pub struct Wrapper {
    pub name: &'static str,
    pub go_mod: &'static str,
    pub go_sum: &'static str,
}

macro_rules! wrapper {
    ($name:literal) => {
        Wrapper {
            name: $name,
            go_mod: include_str!(concat!("../../toolchain/", $name, "/go.mod")),
            go_sum: include_str!(concat!("../../toolchain/", $name, "/go.sum")),
        }
    };
}

pub const WRAPPERS: &[Wrapper] = &[
    wrapper!("kubernetes"),
    wrapper!("kubernetes-v1.34.12"),
    wrapper!("kubernetes-v1.35.4"),
    wrapper!("kubernetes-v1.37.2"),
    wrapper!("etcd"),
    wrapper!("kwok"),
    wrapper!("kueue-v0.19.2"),
    wrapper!("kueue-v0.18.4"),
    wrapper!("kueue-v0.17.0"),
    wrapper!("appwrapper-v1.2.2"),
];

pub fn find(name: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.name == name)
}

impl Wrapper {
    /// Writes the module into `<cache>/modules/<name>/` unless it is there already, each file
    /// written aside and renamed, so that concurrent builds never read half of one.
    pub fn write_into(&self, cache: &Path) -> std::io::Result<PathBuf> {
        let dir = cache.join("modules").join(self.name);
        std::fs::create_dir_all(&dir)?;
        for (file, text) in [("go.mod", self.go_mod), ("go.sum", self.go_sum)] {
            let path = dir.join(file);
            if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
                continue;
            }
            let aside = dir.join(format!(".{file}.{}", std::process::id()));
            std::fs::write(&aside, text)?;
            std::fs::rename(&aside, &path)?;
        }
        Ok(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_module_is_compiled_in() {
        let committed: Vec<String> = std::fs::read_dir("toolchain")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for name in &committed {
            assert!(find(name).is_some(), "{name} is not in WRAPPERS");
        }
        assert_eq!(committed.len(), WRAPPERS.len());
    }

    /// `path version` of every requirement of a go.mod.
    fn requirements(go_mod: &str) -> std::collections::BTreeMap<&str, &str> {
        let mut block = false;
        let mut out = std::collections::BTreeMap::new();
        for line in go_mod.lines() {
            let line = line.split("//").next().unwrap_or_default().trim();
            let entry = match line {
                "require (" => {
                    block = true;
                    continue;
                }
                ")" => {
                    block = false;
                    continue;
                }
                _ if block => line,
                _ => match line.strip_prefix("require ") {
                    Some(rest) => rest,
                    None => continue,
                },
            };
            if let Some((path, version)) = entry.split_once(' ') {
                out.insert(path, version.trim());
            }
        }
        out
    }

    /// The sharing [`super::super::Component::builds_on`] promises holds only while these
    /// modules require what the default Kueue's does.
    #[test]
    fn modules_built_on_the_default_kueue_require_its_versions() {
        use super::super::{KUEUE_DEFAULT, KUEUE_ON_DEFAULT_MODULES};
        let default = requirements(find(&format!("kueue-{KUEUE_DEFAULT}")).unwrap().go_mod);
        assert!(default.len() > 100, "{default:?}");
        let differences = |name: &str| -> Vec<String> {
            let own = requirements(find(name).unwrap().go_mod);
            default
                .iter()
                .filter(|(path, version)| own.get(*path) != Some(*version))
                .map(|(path, version)| format!("{path} {version} -> {:?}", own.get(*path)))
                .collect()
        };
        for version in KUEUE_ON_DEFAULT_MODULES {
            assert_eq!(
                differences(&format!("kueue-{version}")),
                [format!(
                    "sigs.k8s.io/kueue {KUEUE_DEFAULT} -> Some(\"{version}\")"
                )]
            );
        }
        // KWOK needs a newer one, so what imports it compiles again for KWOK.
        assert_eq!(
            differences("kwok"),
            ["go.opentelemetry.io/otel/sdk v1.43.0 -> Some(\"v1.44.0\")"]
        );
    }

    #[test]
    fn a_module_is_written_once_and_kept() {
        let cache = tempfile::tempdir().unwrap();
        let etcd = find("etcd").unwrap();
        let dir = etcd.write_into(cache.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("go.mod")).unwrap(),
            etcd.go_mod
        );
        assert_eq!(etcd.write_into(cache.path()).unwrap(), dir);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    }
}
