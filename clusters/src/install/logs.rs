//! The logs of an installed component, followed into one local file: each pod that matches
//! the selector, including replacements after a restart, line by line with its name in front.
//! Readers of host-process logs (a failed scenario's artifacts) read this file the same way.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{AsyncBufReadExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};

/// Follows until dropped.
pub struct PodLogs {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PodLogs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PodLogs {
    /// Starts following the pods of `namespace` that match `selector` into `path`.
    pub fn follow(
        client: kube::Client,
        namespace: &str,
        selector: &str,
        path: &Path,
    ) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let file = Arc::new(Mutex::new(file));
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        let selector = selector.to_string();
        let task = tokio::spawn(async move {
            let mut followed = HashSet::new();
            // Dropped with this task when it is aborted, which aborts the streams.
            let mut streams = tokio::task::JoinSet::new();
            loop {
                if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
                    for pod in list.items {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        if is_started(&pod) && followed.insert(uid) {
                            let name = pod.metadata.name.clone().unwrap_or_default();
                            streams.spawn(stream(pods.clone(), name, Arc::clone(&file)));
                        }
                    }
                }
                while streams.try_join_next().is_some() {}
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Ok(PodLogs {
            path: path.to_path_buf(),
            task,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn is_started(pod: &Pod) -> bool {
    super::ready::any_container(pod, |s| s.running.is_some() || s.terminated.is_some())
}

async fn stream(pods: Api<Pod>, name: String, file: Arc<Mutex<std::fs::File>>) {
    let params = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let Ok(reader) = pods.log_stream(&name, &params).await else {
        return;
    };
    let mut lines = reader.lines();
    while let Ok(Some(line)) = lines.try_next().await {
        if let Ok(mut file) = file.lock() {
            let _ = writeln!(file, "[{name}] {line}");
        }
    }
}
