//! A planned workload as the objects the bench submits: an AppWrapper built from the suite's
//! fixtures, or the same pods as one plain batch Job queued to Kueue (the comparison without
//! AppWrappers). Pure.

use anyhow::Context as _;
use appwrapper_controller::annotations::RETRY_LIMIT;
use appwrapper_controller::api::QUEUE_NAME_LABEL;
use environment::fixtures::{self, PodSteer};
use serde_json::{Value, json};

use crate::plan::{Planned, Shape};

/// How long the pods of a Deployment-shaped workload run: the bench deletes its AppWrapper
/// after that long Running, and its plain-Job twin succeeds after that long.
pub const DEPLOYMENT_RUN_SECONDS: u32 = 2;

/// The exit code of a planned failure: retryable, so the AppWrapper resets before it fails.
const FAILURE_EXIT_CODE: i32 = 1;

/// The components in the suite's fixture phrases (`a Job with 3 pods and a Pod`).
fn phrase(w: &Planned) -> String {
    let pods = |n: u32| vec!["a Pod"; n as usize].join(" and ");
    match w.shape {
        Shape::Job if w.fails => format!("a Job with {} pods and backoffLimit 0", w.pods),
        Shape::Job => format!("a Job with {} pods", w.pods),
        Shape::Pods => pods(w.pods),
        Shape::Deployment => format!("a Deployment with {} replicas", w.pods),
        Shape::Mixed => {
            let job_pods = w.pods.div_ceil(2);
            let backoff = if w.fails { " and backoffLimit 0" } else { "" };
            format!(
                "a Job with {job_pods} pods{backoff} and {} and a Service",
                pods(w.pods - job_pods)
            )
        }
    }
}

fn cpu(w: &Planned) -> PodSteer {
    PodSteer::RequestCpu(format!("{}m", w.cpu_millis_per_pod()))
}

/// The AppWrapper of `w`, queued to `queue` in `namespace`. Its pods succeed after
/// `run_seconds`; a failing one's first component fails then instead (every pod of a Job, one
/// bare Pod), and its retryLimit of 1 makes it reset once and then fail.
pub fn appwrapper(w: &Planned, namespace: &str, queue: &str) -> anyhow::Result<Value> {
    let components = fixtures::components(&w.name, &phrase(w))?;
    let mut aw = fixtures::appwrapper(&w.name, components);
    fixtures::steer_templates(&mut aw, None, &cpu(w))?;
    let after = Some(u64::from(w.run_seconds));
    if w.shape != Shape::Deployment {
        fixtures::steer_templates(&mut aw, None, &PodSteer::Succeed { after })?;
    }
    if w.fails {
        let fail = PodSteer::Fail {
            exit_code: FAILURE_EXIT_CODE,
            after,
        };
        fixtures::steer_templates(&mut aw, Some(1), &fail)?;
        aw["metadata"]["annotations"] = json!({ RETRY_LIMIT: "1" });
    }
    aw["metadata"]["namespace"] = json!(namespace);
    aw["metadata"]["labels"] = json!({ QUEUE_NAME_LABEL: queue });
    Ok(aw)
}

/// The same pods as one batch Job queued to Kueue: Deployment-shaped workloads run for
/// [`DEPLOYMENT_RUN_SECONDS`] and succeed; a failing one's pods all fail, and the Job fails
/// at the first (backoffLimit 0). A plain Job has no reset to compare with, and its retries
/// wait out the Job controller's exponential back-off (10 s, 20 s, ...), which would
/// measure that back-off rather than the limit.
pub fn plain_job(w: &Planned, namespace: &str, queue: &str) -> anyhow::Result<Value> {
    let component = fixtures::component(&w.name, 0, &format!("a Job with {} pods", w.pods))?;
    let mut job = component["template"].clone();
    let template = job["spec"]["template"]
        .as_object_mut()
        .context("a Job fixture has a pod template")?;
    let seconds = match w.shape {
        Shape::Deployment => DEPLOYMENT_RUN_SECONDS,
        _ => w.run_seconds,
    };
    let after = Some(u64::from(seconds));
    let outcome = if w.fails {
        PodSteer::Fail {
            exit_code: FAILURE_EXIT_CODE,
            after,
        }
    } else {
        PodSteer::Succeed { after }
    };
    for steer in [cpu(w), outcome] {
        steer.apply_to_template(template);
    }
    if w.fails {
        job["spec"]["backoffLimit"] = json!(0);
    }
    job["metadata"] = json!({
        "name": w.name,
        "namespace": namespace,
        "labels": { QUEUE_NAME_LABEL: queue },
    });
    Ok(job)
}

/// The pod templates of an AppWrapper's components (for tests and descriptions).
#[cfg(test)]
fn pod_templates(aw: &Value) -> Vec<serde_json::Map<String, Value>> {
    aw["spec"]["components"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let t = &c["template"];
            let pod = match t["kind"].as_str() {
                Some("Pod") => t,
                Some("Job" | "Deployment") => &t["spec"]["template"],
                _ => return None,
            };
            pod.as_object().cloned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use environment::fixtures::{OUTCOME_LABEL, RUN_DURATION_ANNOTATION};
    use rstest::rstest;
    use serde_json::Map;

    fn planned(shape: Shape, pods: u32, fails: bool) -> Planned {
        Planned {
            name: "aw-0001".into(),
            shape,
            pods,
            fails,
            run_seconds: 3,
        }
    }

    fn labels(t: &Map<String, Value>) -> (String, String) {
        let meta = &t["metadata"];
        (
            meta["labels"][OUTCOME_LABEL].as_str().unwrap_or("").into(),
            meta["annotations"][RUN_DURATION_ANNOTATION]
                .as_str()
                .unwrap_or("")
                .into(),
        )
    }

    #[rstest]
    #[case(Shape::Job, 3, false, &["Job"], &[("succeed", "3s")])]
    #[case(Shape::Job, 2, true, &["Job"], &[("fail", "3s")])]
    #[case(Shape::Pods, 3, true, &["Pod", "Pod", "Pod"], &[("fail", "3s"), ("succeed", "3s"), ("succeed", "3s")])]
    #[case(Shape::Deployment, 4, false, &["Deployment"], &[("running", "")])]
    #[case(Shape::Mixed, 5, false, &["Job", "Pod", "Pod", "Service"], &[("succeed", "3s"), ("succeed", "3s"), ("succeed", "3s")])]
    fn appwrappers_wrap_the_planned_pods(
        #[case] shape: Shape,
        #[case] pods: u32,
        #[case] fails: bool,
        #[case] kinds: &[&str],
        #[case] outcomes: &[(&str, &str)],
    ) {
        let w = planned(shape, pods, fails);
        let aw = appwrapper(&w, "ns", "queue").unwrap();
        let found: Vec<&str> = aw["spec"]["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["template"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(found, kinds);
        let templates = pod_templates(&aw);
        let got: Vec<(String, String)> = templates.iter().map(labels).collect();
        let want: Vec<(String, String)> = outcomes
            .iter()
            .map(|(o, d)| (o.to_string(), d.to_string()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(aw["metadata"]["labels"][QUEUE_NAME_LABEL], "queue");
        assert_eq!(aw["metadata"]["namespace"], "ns");
        let retry = &aw["metadata"]["annotations"][RETRY_LIMIT];
        assert_eq!(retry.as_str(), fails.then_some("1"));
        let cpu = format!("{}m", 1000 / pods);
        for t in &templates {
            assert_eq!(
                t["spec"]["containers"][0]["resources"]["requests"]["cpu"],
                cpu
            );
        }
    }

    #[test]
    fn a_mixed_appwrapper_splits_its_pods_between_the_job_and_bare_pods() {
        let aw = appwrapper(&planned(Shape::Mixed, 5, true), "ns", "q").unwrap();
        let job = &aw["spec"]["components"][0]["template"];
        assert_eq!(job["spec"]["parallelism"], 3);
        assert_eq!(job["spec"]["backoffLimit"], 0);
        assert_eq!(pod_templates(&aw).len(), 3);
    }

    #[rstest]
    #[case(Shape::Job, false, "succeed", "3s", None)]
    #[case(Shape::Deployment, false, "succeed", "2s", None)]
    #[case(Shape::Pods, true, "fail", "3s", Some(0))]
    fn plain_jobs_run_the_same_pods(
        #[case] shape: Shape,
        #[case] fails: bool,
        #[case] outcome: &str,
        #[case] duration: &str,
        #[case] backoff: Option<u64>,
    ) {
        let job = plain_job(&planned(shape, 4, fails), "ns", "queue").unwrap();
        assert_eq!(job["kind"], "Job");
        assert_eq!(job["metadata"]["name"], "aw-0001");
        assert_eq!(job["metadata"]["labels"][QUEUE_NAME_LABEL], "queue");
        assert_eq!(job["spec"]["parallelism"], 4);
        let template = job["spec"]["template"].as_object().unwrap();
        assert_eq!(labels(template), (outcome.into(), duration.into()));
        assert_eq!(job["spec"]["backoffLimit"].as_u64(), backoff);
        assert_eq!(
            template["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "250m"
        );
    }
}
