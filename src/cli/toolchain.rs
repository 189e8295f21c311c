//! `awconf toolchain build | list`.

use std::process::ExitCode;

use clap::Subcommand;
use clusters::toolchain::{self, Component};

#[derive(Subcommand)]
pub enum ToolchainCommand {
    /// Build every pinned binary that is not cached yet, with progress.
    Build {
        /// Kueue versions to build as well (default: the pinned default).
        #[arg(long = "kueue", value_name = "VERSION")]
        kueue: Vec<String>,
        /// Reference AppWrapper operator versions to build (default: the pinned one).
        #[arg(long = "appwrapper", value_name = "VERSION")]
        appwrapper: Vec<String>,
        /// Kubernetes releases whose control plane to build (default: the pinned default).
        #[arg(long = "kubernetes", value_name = "VERSION", value_parser = toolchain::kubernetes_release)]
        kubernetes: Vec<String>,
    },
    /// Show the pinned versions and whether each is cached.
    List,
}

impl ToolchainCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let cache = toolchain::cache_dir();
        match self {
            ToolchainCommand::Build {
                kueue,
                appwrapper,
                kubernetes,
            } => {
                let releases = if kubernetes.is_empty() {
                    vec![toolchain::KUBERNETES.to_string()]
                } else {
                    kubernetes
                };
                let versions = if kueue.is_empty() {
                    vec![toolchain::KUEUE_DEFAULT.to_string()]
                } else {
                    kueue
                };
                let references = if appwrapper.is_empty() {
                    vec![toolchain::APPWRAPPER_DEFAULT.to_string()]
                } else {
                    appwrapper
                };
                // Longest builds first: each free build slot takes the next one.
                let mut components: Vec<Component> =
                    releases.iter().map(|v| Component::kubernetes(v)).collect();
                components.extend(versions.iter().map(|v| Component::kueue(v)));
                components.extend(references.iter().map(|v| Component::appwrapper(v)));
                components.extend([Component::kwok(), Component::etcd()]);
                let started = std::time::Instant::now();
                for report in toolchain::build_all(&components, &cache)? {
                    let how = if report.cached {
                        "cached".to_string()
                    } else {
                        format!("built in {}s", report.elapsed.as_secs())
                    };
                    println!("{:<24} {how}", report.component.to_string());
                }
                println!(
                    "toolchain ready in {}s under {}",
                    started.elapsed().as_secs(),
                    cache.display()
                );
            }
            ToolchainCommand::List => {
                println!("cache: {}", cache.display());
                let mut components = vec![Component::etcd(), Component::kwok()];
                components.extend(
                    toolchain::KUBERNETES_PINNED
                        .iter()
                        .map(|v| Component::kubernetes(v)),
                );
                components.extend(toolchain::KUEUE_PINNED.iter().map(|v| Component::kueue(v)));
                components.extend(
                    toolchain::APPWRAPPER_PINNED
                        .iter()
                        .map(|v| Component::appwrapper(v)),
                );
                for component in components {
                    let state = if component.is_built(&cache) {
                        format!("cached, {}", human_size(dir_size(&component.dir(&cache))))
                    } else {
                        "not built (awconf toolchain build)".to_string()
                    };
                    println!("{:<24} {state}", component.to_string());
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

pub fn human_size(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0))
}
