//! AppWrappers as scenarios describe them: named fixtures ("a Job with 2 pods"), YAML, and
//! changes to their pod templates that steer the pods on the fake nodes.
//!
//! Fixture pods keep running unless a scenario says otherwise (KWOK would otherwise let Job
//! pods succeed at once); each requests 100m CPU so that Kueue accounts for it.

use anyhow::Context as _;
use appwrapper_controller::api::{API_VERSION, AppWrapperComponent, KIND};
use appwrapper_controller::podsets::{effective_pod_sets, path};
use serde_json::{Map, Value, json};

pub const OUTCOME_LABEL: &str = "awconf.dev/outcome";
pub const HANG_LABEL: &str = "awconf.dev/hang-on-delete";
pub const EXIT_CODE_ANNOTATION: &str = "awconf.dev/exit-code";
pub const START_DELAY_ANNOTATION: &str = "awconf.dev/start-delay";
pub const RUN_DURATION_ANNOTATION: &str = "awconf.dev/run-duration";
/// A finalizer of ours on a pod: the pod stays (Terminating) after any deletion until a step
/// removes it. The only way to keep a pod that already succeeded or failed, which the API
/// server otherwise deletes at once.
pub const HOLD_FINALIZER: &str = "awconf.dev/hold";

/// An AppWrapper named `name` with the given components.
pub fn appwrapper(name: &str, components: Vec<Value>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": { "name": name },
        "spec": { "components": components },
    })
}

fn pod_spec(cpu: &str, restart_policy: &str) -> Value {
    json!({
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": 30,
        "containers": [{
            "name": "main",
            "image": "busybox",
            "resources": { "requests": { "cpu": cpu } },
        }],
    })
}

/// Pods and Jobs do not restart their pods; Deployments and StatefulSets must.
fn pod_template(app: &str, restart_policy: &str) -> Value {
    json!({
        "metadata": { "labels": { "app": app, OUTCOME_LABEL: "running" } },
        "spec": pod_spec("100m", restart_policy),
    })
}

/// The Job fields a phrase may set after `and`.
const JOB_LIMITS: &[&str] = &["backoffLimit", "activeDeadlineSeconds"];

/// One component from a phrase: `a Pod`, `a Job with 2 pods`, `a Job with 1 pod and
/// backoffLimit 0`, `a Job with 1 pod and activeDeadlineSeconds 5` (the Job controller fails it
/// and deletes its pods: a failed component without a failed pod), `a Deployment with 2 replicas`, `a StatefulSet with 3 replicas`,
/// `a Service` (no pods).
pub fn component(aw: &str, index: usize, phrase: &str) -> anyhow::Result<Value> {
    let words: Vec<&str> = phrase.split_whitespace().collect();
    let number = |i: usize| -> anyhow::Result<i64> {
        words
            .get(i)
            .and_then(|w| w.parse().ok())
            .with_context(|| format!("expected a number in {phrase:?}"))
    };
    let kind = words.get(1).copied().unwrap_or_default();
    let name = if index == 0 {
        format!("{aw}-{}", kind.to_lowercase())
    } else {
        format!("{aw}-{}-{index}", kind.to_lowercase())
    };
    let template = match (kind, words.len()) {
        ("Pod", 2) => {
            let mut pod = pod_template(&name, "Never");
            pod["apiVersion"] = json!("v1");
            pod["kind"] = json!("Pod");
            pod["metadata"]["name"] = json!(name);
            pod
        }
        ("Job", n) if n >= 5 && words[2] == "with" => {
            let pods = number(3)?;
            let mut spec = json!({
                "parallelism": pods,
                "completions": pods,
                "template": pod_template(&name, "Never"),
            });
            for field in JOB_LIMITS {
                if let Some(i) = words.iter().position(|w| w == field) {
                    spec[*field] = json!(number(i + 1)?);
                }
            }
            json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": name }, "spec": spec })
        }
        ("Deployment" | "StatefulSet", 5) => {
            let replicas = number(3)?;
            let mut spec = json!({
                "replicas": replicas,
                "selector": { "matchLabels": { "app": name } },
                "template": pod_template(&name, "Always"),
            });
            if kind == "StatefulSet" {
                spec["serviceName"] = json!(name);
                spec["podManagementPolicy"] = json!("Parallel");
            }
            json!({ "apiVersion": "apps/v1", "kind": kind, "metadata": { "name": name }, "spec": spec })
        }
        ("Service", 2) => json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": { "name": name },
            "spec": {
                "selector": { "app": aw },
                "ports": [{ "port": 80, "protocol": "TCP" }],
            },
        }),
        _ => anyhow::bail!(
            "unknown fixture {phrase:?}: expected `a Pod`, `a Job with N pods [and backoffLimit B] [and activeDeadlineSeconds S]`, `a Deployment with N replicas`, `a StatefulSet with N replicas` or `a Service`"
        ),
    };
    Ok(json!({ "template": template }))
}

/// Components from `a Pod and a Job with 2 pods`.
pub fn components(aw: &str, phrase: &str) -> anyhow::Result<Vec<Value>> {
    let mut parts: Vec<String> = Vec::new();
    for piece in phrase.split(" and ") {
        // `and backoffLimit 0` belongs to the Job before it.
        match parts.last_mut() {
            Some(last) if JOB_LIMITS.iter().any(|f| piece.starts_with(f)) => {
                last.push_str(" and ");
                last.push_str(piece);
            }
            _ => parts.push(piece.trim().to_string()),
        }
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| component(aw, i, part))
        .collect()
}

/// A label or annotation to set (`Some`) or remove (`None`).
pub type MetadataEntry = (&'static str, Option<String>);

/// How a scenario steers the pods of a pod template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodSteer {
    Succeed { after: Option<u64> },
    Fail { exit_code: i32, after: Option<u64> },
    StayPending,
    KeepRunning,
    HangOnDeletion,
    CarryFinalizer,
    StartAfter(u64),
    RequestCpu(String),
    RequestGpus(u32),
}

impl std::str::FromStr for PodSteer {
    type Err = String;

    /// `succeed`, `succeed after 3 seconds`, `fail with exit code 1`,
    /// `fail with exit code 42 after 2 seconds`, `stay pending`, `keep running`,
    /// `hang on deletion`, `carry a finalizer`, `start after 5 seconds`, `request 2 CPU`,
    /// `request 1 GPU`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("unknown pod behaviour {text:?}");
        let words: Vec<&str> = text.split_whitespace().collect();
        let after = |i: usize| -> Result<Option<u64>, String> {
            match words.get(i..) {
                Some([]) | None => Ok(None),
                Some(["after", n, "second" | "seconds"]) => n.parse().map(Some).map_err(|_| bad()),
                _ => Err(bad()),
            }
        };
        match words.as_slice() {
            ["succeed", ..] => Ok(PodSteer::Succeed { after: after(1)? }),
            ["fail", "with", "exit", "code", code, ..] => Ok(PodSteer::Fail {
                exit_code: code.parse().map_err(|_| bad())?,
                after: after(5)?,
            }),
            ["stay", "pending"] => Ok(PodSteer::StayPending),
            ["keep", "running"] => Ok(PodSteer::KeepRunning),
            ["hang", "on", "deletion"] => Ok(PodSteer::HangOnDeletion),
            ["carry", "a", "finalizer"] => Ok(PodSteer::CarryFinalizer),
            ["start", ..] => after(1)?.map(PodSteer::StartAfter).ok_or_else(bad),
            ["request", n, "CPU" | "CPUs"] => Ok(PodSteer::RequestCpu(n.to_string())),
            ["request", n, "GPU" | "GPUs"] => {
                n.parse().map(PodSteer::RequestGpus).map_err(|_| bad())
            }
            _ => Err(bad()),
        }
    }
}

impl PodSteer {
    /// The labels and annotations that tell KWOK what to do with a pod (`None` removes).
    pub fn metadata(&self) -> (Vec<MetadataEntry>, Vec<MetadataEntry>) {
        let secs = |s: &Option<u64>| s.map(|s| format!("{s}s"));
        match self {
            PodSteer::Succeed { after } => (
                vec![(OUTCOME_LABEL, Some("succeed".into()))],
                vec![(RUN_DURATION_ANNOTATION, secs(after))],
            ),
            PodSteer::Fail { exit_code, after } => (
                vec![(OUTCOME_LABEL, Some("fail".into()))],
                vec![
                    (EXIT_CODE_ANNOTATION, Some(exit_code.to_string())),
                    (RUN_DURATION_ANNOTATION, secs(after)),
                ],
            ),
            PodSteer::StayPending => (vec![(OUTCOME_LABEL, Some("pending".into()))], vec![]),
            PodSteer::KeepRunning => (vec![(OUTCOME_LABEL, Some("running".into()))], vec![]),
            PodSteer::HangOnDeletion => (vec![(HANG_LABEL, Some("true".into()))], vec![]),
            PodSteer::StartAfter(s) => (
                vec![],
                vec![(START_DELAY_ANNOTATION, Some(format!("{s}s")))],
            ),
            PodSteer::CarryFinalizer | PodSteer::RequestCpu(_) | PodSteer::RequestGpus(_) => {
                (vec![], vec![])
            }
        }
    }

    /// Applies this to a pod template (`{metadata, spec}`).
    pub fn apply_to_template(&self, template: &mut Map<String, Value>) {
        let (labels, annotations) = self.metadata();
        let meta = template.entry("metadata").or_insert_with(|| json!({}));
        for (field, entries) in [("labels", labels), ("annotations", annotations)] {
            for (key, value) in entries {
                let map = &mut meta[field];
                if !map.is_object() {
                    *map = json!({});
                }
                match value {
                    Some(v) => map[key] = json!(v),
                    None => {
                        if let Some(m) = map.as_object_mut() {
                            m.remove(key);
                        }
                    }
                }
            }
        }
        if *self == PodSteer::CarryFinalizer {
            meta["finalizers"] = json!([HOLD_FINALIZER]);
        }
        let resource = match self {
            PodSteer::RequestCpu(cpu) => Some(("requests", "cpu", json!(cpu))),
            PodSteer::RequestGpus(n) => Some(("limits", "nvidia.com/gpu", json!(n))),
            _ => None,
        };
        if let Some((kind, name, value)) = resource
            && let Some(containers) = template
                .get_mut("spec")
                .and_then(|s| s.get_mut("containers"))
                .and_then(Value::as_array_mut)
        {
            for container in containers {
                let resources = &mut container["resources"];
                if !resources.is_object() {
                    *resources = json!({});
                }
                if !resources[kind].is_object() {
                    resources[kind] = json!({});
                }
                resources[kind][name] = value.clone();
            }
        }
    }
}

/// Applies `steer` to every pod template of the AppWrapper's components (or of component
/// `only`, 1-based).
pub fn steer_templates(
    aw: &mut Value,
    only: Option<usize>,
    steer: &PodSteer,
) -> anyhow::Result<()> {
    let components = aw["spec"]["components"]
        .as_array_mut()
        .context("the AppWrapper has no spec.components")?;
    if let Some(n) = only
        && (n == 0 || n > components.len())
    {
        anyhow::bail!("there is no component {n} (it has {})", components.len());
    }
    for (i, component) in components.iter_mut().enumerate() {
        if only.is_some_and(|n| n != i + 1) {
            continue;
        }
        let typed: AppWrapperComponent =
            serde_json::from_value(component.clone()).context("reading a component")?;
        let pod_sets =
            effective_pod_sets(&typed).map_err(|e| anyhow::anyhow!("component {}: {e}", i + 1))?;
        for pod_set in pod_sets {
            let template = path::resolve_map_mut(&mut component["template"], &pod_set.path)
                .map_err(|e| anyhow::anyhow!("component {}: {e}", i + 1))?;
            steer.apply_to_template(template);
        }
    }
    Ok(())
}

/// The full key of an AppWrapper annotation: short names get the
/// `workload.codeflare.dev.appwrapper/` prefix.
#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn fixtures_build_the_kinds_with_running_pods() {
        let parts = components(
            "aw",
            "a Pod and a Job with 2 pods and backoffLimit 0 and a Deployment with 3 replicas",
        )
        .unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0]["template"]["kind"], "Pod");
        assert_eq!(parts[0]["template"]["metadata"]["name"], "aw-pod");
        assert_eq!(
            parts[0]["template"]["metadata"]["labels"][OUTCOME_LABEL],
            "running"
        );
        assert_eq!(parts[1]["template"]["spec"]["parallelism"], 2);
        assert_eq!(parts[1]["template"]["spec"]["backoffLimit"], 0);
        assert_eq!(parts[1]["template"]["metadata"]["name"], "aw-job-1");
        assert_eq!(parts[2]["template"]["spec"]["replicas"], 3);
        assert!(components("aw", "a Pod with wings").is_err());
        let deadline = components(
            "aw",
            "a Job with 1 pod and activeDeadlineSeconds 5 and a Pod",
        )
        .unwrap();
        assert_eq!(deadline.len(), 2);
        assert_eq!(deadline[0]["template"]["spec"]["activeDeadlineSeconds"], 5);
        let sts = component("x", 0, "a StatefulSet with 2 replicas").unwrap();
        assert_eq!(sts["template"]["spec"]["serviceName"], "x-statefulset");
        let service = component("x", 1, "a Service").unwrap();
        assert_eq!(service["template"]["kind"], "Service");
        assert_eq!(service["template"]["metadata"]["name"], "x-service-1");
    }

    #[rstest]
    #[case("succeed", PodSteer::Succeed { after: None })]
    #[case("succeed after 3 seconds", PodSteer::Succeed { after: Some(3) })]
    #[case("fail with exit code 42", PodSteer::Fail { exit_code: 42, after: None })]
    #[case("fail with exit code 1 after 1 second", PodSteer::Fail { exit_code: 1, after: Some(1) })]
    #[case("stay pending", PodSteer::StayPending)]
    #[case("hang on deletion", PodSteer::HangOnDeletion)]
    #[case("carry a finalizer", PodSteer::CarryFinalizer)]
    #[case("request 1 GPU", PodSteer::RequestGpus(1))]
    #[case("request 2 CPU", PodSteer::RequestCpu("2".into()))]
    fn pod_behaviours_parse(#[case] text: &str, #[case] expected: PodSteer) {
        assert_eq!(text.parse::<PodSteer>(), Ok(expected));
    }

    #[test]
    fn steering_reaches_every_pod_template() {
        let mut aw = appwrapper(
            "aw",
            components("aw", "a Pod and a Job with 1 pod").unwrap(),
        );
        steer_templates(
            &mut aw,
            None,
            &PodSteer::Fail {
                exit_code: 3,
                after: Some(2),
            },
        )
        .unwrap();
        let pod = &aw["spec"]["components"][0]["template"];
        assert_eq!(pod["metadata"]["labels"][OUTCOME_LABEL], "fail");
        assert_eq!(pod["metadata"]["annotations"][EXIT_CODE_ANNOTATION], "3");
        let job_pod = &aw["spec"]["components"][1]["template"]["spec"]["template"];
        assert_eq!(
            job_pod["metadata"]["annotations"][RUN_DURATION_ANNOTATION],
            "2s"
        );
        steer_templates(&mut aw, Some(2), &PodSteer::RequestGpus(1)).unwrap();
        assert_eq!(
            aw["spec"]["components"][1]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]
                ["limits"]["nvidia.com/gpu"],
            1
        );
        let pod = &aw["spec"]["components"][0]["template"];
        assert!(
            pod["spec"]["containers"][0]["resources"]
                .get("limits")
                .is_none()
        );
        assert!(steer_templates(&mut aw, Some(3), &PodSteer::KeepRunning).is_err());
    }

    #[test]
    fn a_finalizer_is_put_on_the_pod_template_and_a_service_has_none() {
        let mut aw = appwrapper("aw", components("aw", "a Pod and a Service").unwrap());
        steer_templates(&mut aw, None, &PodSteer::CarryFinalizer).unwrap();
        let components = &aw["spec"]["components"];
        assert_eq!(
            components[0]["template"]["metadata"]["finalizers"],
            json!([HOLD_FINALIZER])
        );
        assert!(
            components[1]["template"]["metadata"]
                .get("finalizers")
                .is_none()
        );
    }
}
