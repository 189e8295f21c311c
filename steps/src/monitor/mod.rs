//! The invariant monitor: one watch on every AppWrapper for the whole run. Each observed
//! state is checked against the condition rules of its phase, each change against the phase
//! graph, and when `ResourcesDeployed` turns False it checks that no labelled pod and no
//! wrapped object is left. Violations are kept per namespace, so that the scenario owning the
//! namespace fails; the phase changes seen feed the coverage picture of the report.

pub mod graph;
pub mod rules;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use appwrapper_controller::api::Phase;
use appwrapper_controller::api::condition::RESOURCES_DEPLOYED;
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::task::JoinHandle;

use crate::kube_util;
use graph::Change;
use rules::Snapshot;

/// A broken invariant, with the states before and after (YAML).
#[derive(Clone, Debug)]
pub struct Violation {
    pub namespace: String,
    pub name: String,
    pub message: String,
    pub before: Option<String>,
    pub after: String,
    pub at: DateTime<Utc>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "AppWrapper {}: {}", self.name, self.message)?;
        if let Some(before) = &self.before {
            writeln!(f, "--- before:\n{before}")?;
        }
        write!(f, "--- after:\n{}", self.after)
    }
}

/// A phase change the watch delivered.
#[derive(Clone, Debug)]
pub struct Transition {
    pub namespace: String,
    pub name: String,
    pub from: Phase,
    pub to: Phase,
    /// The phases passed through, both ends included: two for an edge, more when the watch
    /// skipped states.
    pub path: Vec<Phase>,
    pub at: DateTime<Utc>,
}

impl Transition {
    pub fn direct(&self) -> bool {
        self.path.len() == 2
    }

    /// The edges this change took.
    pub fn edges(&self) -> impl Iterator<Item = (Phase, Phase)> + '_ {
        self.path.windows(2).map(|w| (w[0], w[1]))
    }
}

/// How often each edge of the diagram was seen taken.
#[derive(Clone, Debug)]
pub struct EdgeCoverage {
    pub from: Phase,
    pub to: Phase,
    /// Seen as one watch event to the next.
    pub direct: usize,
    /// Inferred from a change whose intermediate states the watch skipped.
    pub inferred: usize,
    pub namespaces: BTreeSet<String>,
    /// Part of the drawn diagram (as opposed to, say, Suspended → Terminating).
    pub in_diagram: bool,
}

#[derive(Default)]
struct State {
    seen: HashMap<String, Snapshot>,
    violations: Vec<Violation>,
    transitions: Vec<Transition>,
    /// Checks of released resources still running, per namespace.
    pending: HashMap<String, usize>,
    synced: bool,
    watch_errors: usize,
}

pub struct Monitor {
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave the state half-written in a way that
    // matters to the reports, so a poisoned lock is used as is.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitor {
    /// Starts watching every AppWrapper and waits (up to `timeout`) for the initial list.
    pub async fn start(client: kube::Client, timeout: Duration) -> anyhow::Result<Monitor> {
        let state = Arc::new(Mutex::new(State::default()));
        let task = tokio::spawn(watch(client, Arc::clone(&state)));
        let monitor = Monitor { state, task };
        let deadline = Instant::now() + timeout;
        while !lock(&monitor.state).synced {
            if Instant::now() >= deadline {
                anyhow::bail!("the AppWrapper watch did not sync within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(monitor)
    }

    pub fn stop(&self) {
        self.task.abort();
    }

    pub fn violations_in(&self, namespace: &str) -> Vec<Violation> {
        lock(&self.state)
            .violations
            .iter()
            .filter(|v| v.namespace == namespace)
            .cloned()
            .collect()
    }

    pub fn transitions_in(&self, namespace: &str) -> Vec<Transition> {
        lock(&self.state)
            .transitions
            .iter()
            .filter(|t| t.namespace == namespace)
            .cloned()
            .collect()
    }

    /// Whether the AppWrapper was seen taking the edge `from → to`.
    pub fn saw(&self, namespace: &str, name: &str, from: Phase, to: Phase) -> bool {
        lock(&self.state).transitions.iter().any(|t| {
            t.namespace == namespace && t.name == name && t.edges().any(|e| e == (from, to))
        })
    }

    /// Waits until the checks started for `namespace` have finished.
    pub async fn settle(&self, namespace: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while lock(&self.state)
            .pending
            .get(namespace)
            .copied()
            .unwrap_or(0)
            > 0
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn watch_errors(&self) -> usize {
        lock(&self.state).watch_errors
    }

    /// Every edge of the diagram, and any other change seen, with how often it was taken.
    pub fn coverage(&self) -> Vec<EdgeCoverage> {
        let state = lock(&self.state);
        let mut edges: Vec<EdgeCoverage> = graph::EDGES
            .iter()
            .map(|&(from, to)| EdgeCoverage {
                from,
                to,
                direct: 0,
                inferred: 0,
                namespaces: BTreeSet::new(),
                in_diagram: true,
            })
            .collect();
        for t in &state.transitions {
            let direct = t.direct();
            for (from, to) in t.edges() {
                let index = match edges.iter().position(|e| e.from == from && e.to == to) {
                    Some(i) => i,
                    None => {
                        edges.push(EdgeCoverage {
                            from,
                            to,
                            direct: 0,
                            inferred: 0,
                            namespaces: BTreeSet::new(),
                            in_diagram: false,
                        });
                        edges.len() - 1
                    }
                };
                let edge = &mut edges[index];
                if direct {
                    edge.direct += 1;
                } else {
                    edge.inferred += 1;
                }
                edge.namespaces.insert(t.namespace.clone());
            }
        }
        edges
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn watch(client: kube::Client, state: Arc<Mutex<State>>) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &kube_util::appwrapper_resource());
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(object)) | Ok(watcher::Event::InitApply(object)) => {
                observe(&client, &state, &kube_util::to_value(&object), false)
            }
            Ok(watcher::Event::Delete(object)) => {
                observe(&client, &state, &kube_util::to_value(&object), true)
            }
            Ok(watcher::Event::Init) => {}
            Ok(watcher::Event::InitDone) => lock(&state).synced = true,
            Err(e) => {
                tracing::warn!("AppWrapper watch: {e}");
                lock(&state).watch_errors += 1;
            }
        }
    }
}

fn observe(
    client: &kube::Client,
    state: &Arc<Mutex<State>>,
    object: &serde_json::Value,
    deleted: bool,
) {
    let now = Utc::now();
    let after = match Snapshot::from_object(object) {
        Ok(s) => s,
        Err(e) => {
            let mut st = lock(state);
            st.violations.push(Violation {
                namespace: object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                name: object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                message: format!("unreadable status: {e}"),
                before: None,
                after: crate::yaml::render_object(object),
                at: now,
            });
            return;
        }
    };
    let mut st = lock(state);
    let before = if deleted {
        st.seen.remove(&after.uid)
    } else {
        st.seen.insert(after.uid.clone(), after.clone())
    };
    // A state that stays wrong is reported once, when it becomes wrong.
    let known = before.as_ref().map(rules::check_state).unwrap_or_default();
    let mut messages: Vec<String> = rules::check_state(&after)
        .into_iter()
        .filter(|m| !known.contains(m))
        .collect();
    let mut released = false;
    if let Some(before) = &before {
        let report = rules::check_change(before, &after);
        messages.extend(report.violations);
        released = report.resources_released;
        if let Some((from, to, change)) = report.transition {
            let path = match change {
                Change::Skipped(path) => path,
                _ => vec![from, to],
            };
            st.transitions.push(Transition {
                namespace: after.namespace.clone(),
                name: after.name.clone(),
                from,
                to,
                path,
                at: now,
            });
        }
    }
    for message in messages {
        st.violations.push(Violation {
            namespace: after.namespace.clone(),
            name: after.name.clone(),
            message,
            before: before
                .as_ref()
                .map(|b| crate::yaml::render_object(&b.object)),
            after: crate::yaml::render_object(&after.object),
            at: now,
        });
    }
    if released {
        *st.pending.entry(after.namespace.clone()).or_insert(0) += 1;
        drop(st);
        let (client, state) = (client.clone(), Arc::clone(state));
        let before = before.map(|b| crate::yaml::render_object(&b.object));
        tokio::spawn(async move {
            let found = check_released(&client, &after).await;
            let mut st = lock(&state);
            if let Some(message) = found {
                st.violations.push(Violation {
                    namespace: after.namespace.clone(),
                    name: after.name.clone(),
                    message,
                    before,
                    after: crate::yaml::render_object(&after.object),
                    at: Utc::now(),
                });
            }
            if let Some(n) = st.pending.get_mut(&after.namespace) {
                *n = n.saturating_sub(1);
            }
        });
    }
}

/// `ResourcesDeployed` just turned False: no labelled pod and no wrapped object may exist.
/// Returns the violation, if any. Inconclusive (and so no violation) when the AppWrapper has
/// deployed again since: objects may then be the new deployment's.
async fn check_released(client: &kube::Client, released: &Snapshot) -> Option<String> {
    let (ns, name) = (&released.namespace, &released.name);
    let mut left: Vec<String> = match kube_util::pods_of(client, ns, name).await {
        Ok(pods) => pods
            .iter()
            .map(|p| {
                format!(
                    "pod {} ({}{})",
                    p.metadata.name.as_deref().unwrap_or_default(),
                    kube_util::pod_phase(p),
                    if p.metadata.deletion_timestamp.is_some() {
                        ", terminating"
                    } else {
                        ""
                    }
                )
            })
            .collect(),
        Err(e) => {
            tracing::warn!("monitor: {e:#}");
            return None;
        }
    };
    for (api_version, kind, object) in &released.components {
        match kube_util::get_object(client, ns, api_version, kind, object).await {
            Ok(Some(_)) => left.push(format!("{kind} {object}")),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!("monitor: {e:#}");
                return None;
            }
        }
    }
    if left.is_empty() {
        return None;
    }
    // Still the same release? Read after the objects, so anything listed above existed
    // while ResourcesDeployed was False.
    let same = match kube_util::get_appwrapper(client, ns, name).await {
        Ok(Some(now)) => {
            let rd = kube_util::condition(&now, RESOURCES_DEPLOYED);
            let ltt = |c: Option<&serde_json::Value>| {
                c.and_then(|c| c["lastTransitionTime"].as_str())
                    .map(str::to_string)
            };
            now["metadata"]["uid"] == released.uid.as_str()
                && rd.is_some_and(|c| c["status"] == "False")
                && ltt(rd)
                    == released
                        .conditions
                        .get(RESOURCES_DEPLOYED)
                        .map(|c| c.2.clone())
        }
        Ok(None) => true,
        Err(_) => false,
    };
    same.then(|| {
        format!(
            "ResourcesDeployed turned False while these still exist: {}",
            left.join(", ")
        )
    })
}
