//! `awconf image`: the runner image, written as an archive that `docker load`, `ctr images
//! import` and `skopeo copy docker-archive:` take.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use clusters::images::{self, RunnerSpec, runner};
use clusters::toolchain;

use super::toolchain::human_size;

#[derive(Args)]
pub struct ImageArgs {
    /// The archive to write.
    #[arg(long, short, default_value = "awconf-runner.tar")]
    output: PathBuf,
    /// The image's name and tag (default: awconf.local/runner:<awconf version>).
    #[arg(long)]
    tag: Option<String>,
    /// A further Kubernetes release to carry (a variant): `awconf run --kubernetes` in the
    /// container then needs no Go.
    #[arg(long = "kubernetes", value_name = "VERSION", value_parser = toolchain::kubernetes_release)]
    kubernetes: Vec<String>,
    /// A further Kueue release to carry (a variant).
    #[arg(long = "kueue", value_name = "VERSION")]
    kueue: Vec<String>,
    /// Our controller's binary (default: `appwrapper-controller` beside this executable).
    #[arg(long, value_name = "PATH")]
    controller_bin: Option<PathBuf>,
    /// A statically linked busybox, the image's shell (Debian package busybox-static).
    #[arg(long, value_name = "PATH", default_value = images::BUSYBOX)]
    busybox: PathBuf,
}

impl ImageArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let awconf = std::env::current_exe().context("finding this awconf binary")?;
        let controller = match self.controller_bin {
            Some(path) => path,
            None => awconf.with_file_name("appwrapper-controller"),
        };
        anyhow::ensure!(
            controller.is_file(),
            "{} is not there: build it (`cargo build --release -p appwrapper-controller`) or \
             pass --controller-bin",
            controller.display()
        );
        for version in &self.kueue {
            clusters::kueue::KueueVersion::parse(version)
                .map_err(|e| anyhow::anyhow!("--kueue {version}: {e}"))?;
        }
        let mut spec = RunnerSpec::with_default_pins(
            awconf,
            controller,
            self.busybox,
            &self.kubernetes,
            &self.kueue,
        );
        if let Some(tag) = self.tag {
            spec.reference = tag;
        }
        let cache = toolchain::cache_dir();
        let started = std::time::Instant::now();
        for report in toolchain::build_all(&spec.components(), &cache)? {
            if !report.cached {
                println!(
                    "{:<24} built in {}s",
                    report.component.to_string(),
                    report.elapsed.as_secs()
                );
            }
        }
        let image = runner::runner_image(&spec, &cache)?;
        if let Some(dir) = self.output.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let written = image
            .write_archive(&self.output)
            .with_context(|| format!("writing {}", self.output.display()))?;
        let size = std::fs::metadata(&written.path)
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "{}: {} ({}, {} layers, image ID {}) in {}s",
            written.path.display(),
            spec.reference,
            human_size(size),
            written.layer_digests.len(),
            written.config_digest,
            started.elapsed().as_secs()
        );
        println!(
            "run it: docker load -i {0} && docker run --rm {1} run   (or: ctr images import {0})",
            written.path.display(),
            spec.reference
        );
        Ok(ExitCode::SUCCESS)
    }
}
