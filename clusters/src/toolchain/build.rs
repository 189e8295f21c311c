//! `go build` of the pinned components into the cache, with visible progress.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Component, check_go, wrappers};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Go(#[from] super::GoError),
    #[error("{component}: {message}\n  log: {log}")]
    Failed {
        component: String,
        message: String,
        log: String,
    },
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// What a build did, for the progress summary and the closing figures.
#[derive(Clone, Debug)]
pub struct BuildReport {
    pub component: Component,
    pub elapsed: Duration,
    pub cached: bool,
}

/// Builds `component` unless its binaries are already in the cache.
pub fn ensure(component: &Component, cache: &Path) -> Result<BuildReport, BuildError> {
    if component.is_built(cache) {
        return Ok(BuildReport {
            component: component.clone(),
            elapsed: Duration::ZERO,
            cached: true,
        });
    }
    check_go()?;
    // Test processes run side by side: one builds, the others wait and find it cached.
    let _lock = BuildLock::acquire(component, cache)?;
    if component.is_built(cache) {
        return Ok(BuildReport {
            component: component.clone(),
            elapsed: Duration::ZERO,
            cached: true,
        });
    }
    let task = crate::progress::Task::start(
        &format!("[toolchain] {component}"),
        "go build (a cold build takes minutes)",
    );
    build(component, cache)?;
    let elapsed = task.finish("built");
    Ok(BuildReport {
        component: component.clone(),
        elapsed,
        cached: false,
    })
}

/// An exclusive lock on `<cache>/locks/<name>-<version>.lock` (`flock` on Linux), released when
/// dropped.
struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    fn acquire(component: &Component, cache: &Path) -> Result<Self, BuildError> {
        let io = |e| BuildError::Io(format!("{component}: build lock"), e);
        let dir = cache.join("locks");
        std::fs::create_dir_all(&dir).map_err(io)?;
        let file = std::fs::File::create(
            dir.join(format!("{}-{}.lock", component.name, component.version)),
        )
        .map_err(io)?;
        // Blocks until another run building the same component is done.
        file.lock().map_err(io)?;
        Ok(Self { _file: file })
    }
}

/// Builds several components concurrently, as many at once as memory allows: each free slot
/// takes the next chain in the order given, so put the longest builds first. A chain is a
/// component and those that build on it ([`Component::builds_on`]), one after the other.
pub fn build_all(components: &[Component], cache: &Path) -> Result<Vec<BuildReport>, BuildError> {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let chains = chains(components);
    let slots = parallel_slots(available_memory_bytes()).min(chains.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Vec<OnceLock<Result<BuildReport, BuildError>>> =
        components.iter().map(|_| OnceLock::new()).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..slots)
            .map(|_| {
                scope.spawn(|| {
                    while let Some(chain) = chains.get(next.fetch_add(1, Ordering::SeqCst)) {
                        for &i in chain {
                            let _ = results[i].set(ensure(&components[i], cache));
                        }
                    }
                })
            })
            .collect();
        // A worker that panicked leaves its components without a result, reported below.
        for worker in workers {
            let _ = worker.join();
        }
    });
    results
        .into_iter()
        .map(|result| {
            result.into_inner().unwrap_or_else(|| {
                Err(BuildError::Io(
                    "build thread".into(),
                    std::io::Error::other("a build thread panicked"),
                ))
            })
        })
        .collect()
}

/// Indexes into `components`: each that builds on none of the others starts a chain, in the
/// order given, and is followed by those that build on it.
fn chains(components: &[Component]) -> Vec<Vec<usize>> {
    let base_of = |c: &Component| {
        c.builds_on()
            .and_then(|base| components.iter().position(|other| *other == base))
    };
    components
        .iter()
        .enumerate()
        .filter(|(_, c)| base_of(c).is_none())
        .map(|(root, _)| {
            std::iter::once(root)
                .chain((0..components.len()).filter(|&i| base_of(&components[i]) == Some(root)))
                .collect()
        })
        .collect()
}

/// A cold `go build` of kube-apiserver or Kueue peaks near 3 GB.
fn parallel_slots(available: Option<u64>) -> usize {
    const PER_BUILD: u64 = 3 << 30;
    available.map_or(1, |bytes| (bytes / PER_BUILD).clamp(1, 3) as usize)
}

fn available_memory_bytes() -> Option<u64> {
    use procfs::Current;
    procfs::Meminfo::current().ok()?.mem_available
}

fn build(component: &Component, cache: &Path) -> Result<(), BuildError> {
    let fail = |message: String, log: &Path| BuildError::Failed {
        component: component.to_string(),
        message,
        log: log.display().to_string(),
    };
    let io = |what: &str, e| BuildError::Io(format!("{component}: {what}"), e);
    let final_dir = component.dir(cache);
    let partial = partial_dir(&final_dir);
    let logs = cache.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| io("create cache", e))?;
    let log_path = logs.join(format!(
        "build-{}-{}.log",
        component.name, component.version
    ));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).map_err(|e| io("create build dir", e))?;
    let module = module_dir(component, cache)?;
    let log = std::fs::File::create(&log_path).map_err(|e| io("create log", e))?;
    let log_err = log.try_clone().map_err(|e| io("log", e))?;
    let mut cmd = go_command(&module);
    cmd.arg("build").args(build_args(component, &partial));
    let status = cmd
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .status()
        .map_err(|e| io("run go build", e))?;
    if !status.success() {
        let tail = last_lines(&log_path, 15);
        return Err(fail(
            format!("go build failed ({status}):\n{tail}"),
            &log_path,
        ));
    }
    for binary in component.binaries() {
        verify(component, &partial.join(binary)).map_err(|m| fail(m, &log_path))?;
    }
    let _ = std::fs::remove_dir_all(&final_dir);
    std::fs::rename(&partial, &final_dir).map_err(|e| io("move into cache", e))?;
    Ok(())
}

/// Where a build goes until it is verified: `v0.19.2.partial`, never `v0.19.partial`
/// (`with_extension` would take `.2` for an extension and let v0.19.2 and v0.19.3 collide).
fn partial_dir(final_dir: &Path) -> PathBuf {
    let mut name = final_dir.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    final_dir.with_file_name(name)
}

fn go_command(module: &Path) -> Command {
    let mut cmd = Command::new("go");
    cmd.current_dir(module)
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        // scheduler-library (a Kueue 0.19 dependency) is not in the checksum database; go.sum pins it.
        .env("GONOSUMDB", "sigs.k8s.io/scheduler-library")
        .stdin(Stdio::null());
    // The compiler collects garbage less often: a cold build of etcd takes 15 % less CPU
    // (70 -> 60 s) for 40 % more memory at its peak (260 -> 370 MB). The soft limit keeps the
    // linker of a large binary from growing its heap fivefold. A user's settings stand.
    for (name, value) in [("GOGC", "400"), ("GOMEMLIMIT", "3GiB")] {
        if std::env::var_os(name).is_none() {
            cmd.env(name, value);
        }
    }
    cmd
}

/// The committed wrapper module, or one generated in the cache for an unpinned Kubernetes,
/// Kueue or reference-operator version.
fn module_dir(component: &Component, cache: &Path) -> Result<PathBuf, BuildError> {
    let module = component.wrapper_module();
    if let Some(wrapper) = wrappers::find(&module) {
        return wrapper
            .write_into(cache)
            .map_err(|e| BuildError::Io(format!("{component}: wrapper module"), e));
    }
    if component.is_kubernetes() {
        let generated = cache.join("modules").join(&module);
        super::kubernetes_module::write(&component.version, &generated).map_err(|message| {
            BuildError::Failed {
                component: component.to_string(),
                message,
                log: String::new(),
            }
        })?;
        return tidy(component, generated);
    }
    let Some(go_mod) = generated_go_mod(component) else {
        return Err(BuildError::Failed {
            component: component.to_string(),
            message: format!("no wrapper module {module} is compiled in"),
            log: String::new(),
        });
    };
    let generated = cache
        .join("modules")
        .join(format!("{}-{}", component.name, component.version));
    let io = |e| BuildError::Io(format!("{component}: wrapper module"), e);
    std::fs::create_dir_all(&generated).map_err(io)?;
    std::fs::write(generated.join("go.mod"), go_mod).map_err(io)?;
    tidy(component, generated)
}

/// `go mod tidy` in a generated wrapper module.
fn tidy(component: &Component, generated: PathBuf) -> Result<PathBuf, BuildError> {
    let io = |e| BuildError::Io(format!("{component}: wrapper module"), e);
    let out = go_command(&generated)
        .args(["mod", "tidy"])
        .output()
        .map_err(io)?;
    if !out.status.success() {
        return Err(BuildError::Failed {
            component: component.to_string(),
            message: format!(
                "`go mod tidy` for {} {} (no committed wrapper) failed; is it served by the Go module proxy?\n{}",
                component.name,
                component.version,
                String::from_utf8_lossy(&out.stderr)
            ),
            log: generated.display().to_string(),
        });
    }
    Ok(generated)
}

/// The wrapper module of a version without a committed one (Kueue and the reference operator
/// take any tag the Go module proxy serves).
fn generated_go_mod(component: &Component) -> Option<String> {
    let (module, package) = match component.name {
        "kueue" => ("sigs.k8s.io/kueue", "sigs.k8s.io/kueue/cmd/kueue"),
        "appwrapper" => (
            "github.com/project-codeflare/appwrapper",
            "github.com/project-codeflare/appwrapper/cmd",
        ),
        _ => return None,
    };
    Some(format!(
        "module awconf.invalid/toolchain/{}\n\ngo 1.26.0\n\nrequire {module} {}\n\ntool {package}\n",
        component.name, component.version
    ))
}

/// The extracted source of `module` at the version `component`'s wrapper module selects
/// (CRDs and webhook manifests ship inside Go module zips). A copy of the files a run reads
/// at [`source_snapshot`] (what the runner image carries, with no Go) comes first.
pub fn module_source(
    component: &Component,
    cache: &Path,
    module: &str,
) -> Result<PathBuf, BuildError> {
    let snapshot = source_snapshot(component, cache);
    if snapshot.is_dir() {
        return Ok(snapshot);
    }
    let dir = module_dir(component, cache)?;
    let io = |e| BuildError::Io(format!("{component}: go mod download {module}"), e);
    let out = go_command(&dir)
        .args(["mod", "download", "-json", module])
        .output()
        .map_err(io)?;
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    match info["Dir"].as_str() {
        Some(path) if out.status.success() => Ok(PathBuf::from(path)),
        _ => Err(BuildError::Failed {
            component: component.to_string(),
            message: format!(
                "`go mod download {module}` failed: {}{}",
                info["Error"].as_str().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr)
            ),
            log: dir.display().to_string(),
        }),
    }
}

/// Where a copy of the parts of `component`'s module that a run reads (Kueue's `config/`)
/// sits in the cache, for machines without Go.
pub fn source_snapshot(component: &Component, cache: &Path) -> PathBuf {
    cache
        .join("src")
        .join(component.name)
        .join(&component.version)
}

fn build_args(component: &Component, out_dir: &Path) -> Vec<String> {
    let v = &component.version;
    let out = format!("{}/", out_dir.display());
    // `-w` leaves DWARF out of the binary; `-dwarf=false` spares the compiler making it (a
    // fifth of a cold build's CPU).
    let mut args = vec![
        "-trimpath".to_string(),
        "-gcflags=all=-dwarf=false".to_string(),
    ];
    let (ldflags, packages): (String, Vec<String>) = match component.name {
        "kubernetes" | "kubernetes-node" | "kubectl" => {
            let minor = v.split('.').nth(1).unwrap_or("0");
            let mut ld = "-s -w".to_string();
            for pkg in [
                "k8s.io/component-base/version",
                "k8s.io/client-go/pkg/version",
            ] {
                ld.push_str(&format!(
                    " -X {pkg}.gitVersion={v} -X {pkg}.gitMajor=1 -X {pkg}.gitMinor={minor} -X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z"
                ));
            }
            args.push("-tags=notest".into());
            let pkgs = component
                .binaries()
                .iter()
                .map(|b| format!("k8s.io/kubernetes/cmd/{b}"))
                .collect();
            (ld, pkgs)
        }
        "etcd" => ("-s -w".into(), vec!["go.etcd.io/etcd/server/v3".into()]),
        "kwok" => (
            format!("-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={v}"),
            vec!["sigs.k8s.io/kwok/cmd/kwok".into()],
        ),
        "appwrapper" => (
            format!("-s -w -X main.BuildVersion={v} -X main.BuildDate=1970-01-01T00:00:00Z"),
            vec!["github.com/project-codeflare/appwrapper/cmd".into()],
        ),
        _ => (
            format!("-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion={v}"),
            vec!["sigs.k8s.io/kueue/cmd/kueue".into()],
        ),
    };
    args.push(format!("-ldflags={ldflags}"));
    // A single package needs a file name: a /v3 module would otherwise be named `v3`.
    if packages.len() == 1 {
        args.push(format!(
            "-o={}",
            out_dir.join(component.binaries()[0]).display()
        ));
    } else {
        args.push(format!("-o={out}"));
    }
    args.extend(packages);
    args
}

/// Runs the fresh binary once, so that a broken build never lands in the cache.
fn verify(component: &Component, binary: &Path) -> Result<(), String> {
    let (args, expect): (&[&str], String) = match component.name {
        "etcd" => (
            &["--version"],
            component.version.trim_start_matches('v').to_string(),
        ),
        "kueue" => (&["--help"], "-config".to_string()),
        "appwrapper" => (&["--help"], "appwrapper-operator-config".to_string()),
        "kubectl" => (&["version", "--client"], component.version.clone()),
        _ => (&["--version"], component.version.clone()),
    };
    let arg = args.join(" ");
    let out = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains(&expect) {
        Ok(())
    } else {
        Err(format!(
            "`{} {arg}` did not mention {expect:?}; it printed:\n{text}",
            binary.display()
        ))
    }
}

fn last_lines(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<_> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_snapshot_in_the_cache_is_read_without_go() {
        let cache = tempfile::tempdir().unwrap();
        // A release no wrapper module pins and no proxy serves: only the snapshot can answer.
        let kueue = Component::kueue("v0.0.0-snapshot");
        let snapshot = source_snapshot(&kueue, cache.path());
        std::fs::create_dir_all(snapshot.join("config/components/crd/bases")).unwrap();
        assert_eq!(
            module_source(&kueue, cache.path(), "sigs.k8s.io/kueue").unwrap(),
            snapshot
        );
        assert_eq!(
            snapshot,
            cache.path().join("src/kueue/v0.0.0-snapshot"),
            "the runner image writes its snapshots at this path"
        );
    }

    #[test]
    fn a_second_build_of_one_component_waits_for_the_first() {
        let cache = tempfile::tempdir().unwrap();
        let first = BuildLock::acquire(&Component::etcd(), cache.path()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path = cache.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let lock = BuildLock::acquire(&Component::etcd(), &path).unwrap();
            tx.send(()).unwrap();
            drop(lock);
        });
        let other = BuildLock::acquire(&Component::kwok(), cache.path()).unwrap();
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err()
        );
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        second.join().unwrap();
        drop(other);
    }

    #[test]
    fn memory_decides_how_many_builds_run_at_once() {
        assert_eq!(parallel_slots(None), 1);
        assert_eq!(parallel_slots(Some(2 << 30)), 1);
        assert_eq!(parallel_slots(Some(7 << 30)), 2);
        assert_eq!(parallel_slots(Some(64 << 30)), 3);
    }

    #[test]
    fn a_partial_build_keeps_the_whole_version_in_its_name() {
        let dir = Component::kueue("v0.19.2").dir(Path::new("/c"));
        assert_eq!(partial_dir(&dir), Path::new("/c/bin/kueue/v0.19.2.partial"));
    }

    #[test]
    fn every_component_is_reported_once_in_the_order_given() {
        let cache = tempfile::tempdir().unwrap();
        let components = [
            Component::kubernetes(super::super::KUBERNETES),
            Component::kueue("v0.19.2"),
            Component::etcd(),
            Component::kwok(),
        ];
        for component in &components {
            std::fs::create_dir_all(component.dir(cache.path())).unwrap();
            for binary in component.binaries() {
                std::fs::write(component.binary(cache.path(), binary), "").unwrap();
            }
        }
        let reports = build_all(&components, cache.path()).unwrap();
        let reported: Vec<_> = reports.iter().map(|r| r.component.clone()).collect();
        assert_eq!(reported, components);
        assert!(reports.iter().all(|r| r.cached));
    }

    #[test]
    fn kubernetes_builds_three_binaries_with_version_stamps() {
        let args = build_args(
            &Component::kubernetes(super::super::KUBERNETES),
            Path::new("/c/k"),
        );
        assert!(args.iter().any(|a| a == "-o=/c/k/"));
        assert!(
            args.iter()
                .any(|a| a.contains("gitVersion=v1.36.3") && a.contains("gitMinor=36"))
        );
        assert_eq!(
            args.iter()
                .filter(|a| a.starts_with("k8s.io/kubernetes/cmd/"))
                .count(),
            3
        );
    }

    #[test]
    fn the_node_binaries_build_from_the_kubernetes_wrapper_module() {
        let node = Component::kubernetes_node(super::super::KUBERNETES);
        assert_eq!(node.wrapper_module(), "kubernetes");
        assert_eq!(node.binaries(), &["kubelet", "kube-proxy"]);
        let args = build_args(&node, Path::new("/c/n"));
        assert!(args.iter().any(|a| a.contains("gitVersion=v1.36.3")));
        assert!(args.contains(&"k8s.io/kubernetes/cmd/kubelet".to_string()));
        assert!(args.contains(&"k8s.io/kubernetes/cmd/kube-proxy".to_string()));
        let go_sum = wrappers::find("kubernetes").unwrap().go_sum;
        for module in [
            "k8s.io/cri-streaming v0.36.3",
            "go.opentelemetry.io/contrib/instrumentation/github.com/emicklei/go-restful/otelrestful",
        ] {
            assert!(go_sum.contains(module), "go.sum lacks {module}");
        }
    }

    #[test]
    fn every_build_leaves_debug_information_out_of_compiling_and_linking() {
        for component in [
            Component::kubernetes(super::super::KUBERNETES),
            Component::etcd(),
            Component::kwok(),
            Component::kueue("v0.19.2"),
            Component::appwrapper("v1.2.2"),
        ] {
            let args = build_args(&component, Path::new("/c"));
            assert!(
                args.contains(&"-gcflags=all=-dwarf=false".to_string()),
                "{component}: {args:?}"
            );
            assert!(
                args.iter().any(|a| a.starts_with("-ldflags=-s -w")),
                "{component}: {args:?}"
            );
        }
    }

    #[test]
    fn what_builds_on_the_default_kueue_follows_it_in_one_chain() {
        let kueue = |v: &str| Component::kueue(v);
        let components = [
            Component::kubernetes(super::super::KUBERNETES),
            Component::kwok(),
            kueue("v0.18.4"),
            kueue(super::super::KUEUE_DEFAULT),
            kueue("v0.17.0"),
            Component::etcd(),
        ];
        assert_eq!(
            chains(&components),
            [vec![0], vec![3, 1, 2], vec![4], vec![5]]
        );
        // Without the default Kueue, each builds on its own.
        assert_eq!(
            chains(&[Component::kwok(), kueue("v0.18.4")]),
            [vec![0], vec![1]]
        );
    }

    #[test]
    fn single_binaries_get_an_explicit_output_name() {
        let args = build_args(&Component::etcd(), Path::new("/c/e"));
        assert!(args.contains(&"-o=/c/e/etcd".to_string()));
        assert_eq!(
            args.last().map(String::as_str),
            Some("go.etcd.io/etcd/server/v3")
        );
    }

    #[test]
    fn wrapper_modules_require_the_pinned_versions() {
        let go_mod = |module: &str| wrappers::find(module).unwrap().go_mod;
        let cases = [
            ("kubernetes", "k8s.io/kubernetes", super::super::KUBERNETES),
            ("etcd", "go.etcd.io/etcd/server/v3", super::super::ETCD),
            ("kwok", "sigs.k8s.io/kwok", super::super::KWOK),
        ];
        for (module, path, version) in cases {
            assert!(
                go_mod(module).contains(&format!("{path} {version}")),
                "{module}/go.mod does not pin {path} {version}"
            );
        }
        for version in super::super::KUBERNETES_PINNED {
            let module = Component::kubernetes(version).wrapper_module();
            assert!(
                go_mod(&module).contains(&format!("k8s.io/kubernetes {version}")),
                "{module}/go.mod does not pin k8s.io/kubernetes {version}"
            );
        }
        for version in super::super::KUEUE_PINNED {
            assert!(
                go_mod(&format!("kueue-{version}"))
                    .contains(&format!("sigs.k8s.io/kueue {version}"))
            );
        }
        for version in super::super::APPWRAPPER_PINNED {
            assert!(go_mod(&format!("appwrapper-{version}")).contains(&format!(
                "github.com/project-codeflare/appwrapper {version}"
            )));
        }
    }

    #[test]
    fn the_reference_operator_builds_its_cmd_package_with_a_version_stamp() {
        let args = build_args(&Component::appwrapper("v1.2.2"), Path::new("/c/a"));
        assert!(args.contains(&"-o=/c/a/appwrapper-operator".to_string()));
        assert!(args.iter().any(|a| a.contains("main.BuildVersion=v1.2.2")));
        assert_eq!(
            args.last().map(String::as_str),
            Some("github.com/project-codeflare/appwrapper/cmd")
        );
        let go_mod = generated_go_mod(&Component::appwrapper("v1.2.1")).unwrap();
        assert!(go_mod.contains("require github.com/project-codeflare/appwrapper v1.2.1"));
        assert!(generated_go_mod(&Component::etcd()).is_none());
    }
}
