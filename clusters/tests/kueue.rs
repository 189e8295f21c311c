//! The real Kueue manager on the embedded cluster: it suspends, queues, admits and preempts.
//! Runs against `$AWCONF_KUEUE_VERSION` (default: the pinned version).

mod support;

use clusters::kueue::objects::{self, ClusterQueueSpec, Quota};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use support::{always, eventually, namespace};

const FLAVOR: &str = "kwok-flavor";

/// A namespace with its own ClusterQueue (of `cpu` cores) and a LocalQueue `queue`.
async fn queue_setup(name: &str, cpu: &str, preemption: Option<&str>) -> kube::Client {
    let (cluster, _) =
        clusters::shared_kueue::shared(&clusters::kueue::default_source().unwrap()).unwrap();
    let client = namespace(cluster, name).await;
    let mut flavor = objects::resource_flavor(FLAVOR);
    flavor["spec"] = json!({"nodeLabels": {"type": "kwok"}});
    objects::apply(&client, &flavor).await.unwrap();
    let spec = ClusterQueueSpec {
        flavor: FLAVOR.into(),
        quota: Quota {
            cpu: cpu.into(),
            ..Quota::default()
        },
        cohort: None,
        preemption: preemption.map(str::to_string),
    };
    objects::namespace_queue(&client, name, &spec)
        .await
        .unwrap();
    client
}

fn job(name: &str, cpu: &str, outcome: &str, priority: Option<&str>) -> Job {
    let mut labels = json!({"kueue.x-k8s.io/queue-name": "queue"});
    if let Some(p) = priority {
        labels["kueue.x-k8s.io/priority-class"] = json!(p);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"parallelism": 1, "completions": 1, "template": {
            "metadata": {"labels": {"awconf.dev/outcome": outcome}, "annotations": {"awconf.dev/run-duration": "3s"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": cpu}}}]}}},
    }))
    .unwrap()
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

fn completed(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

async fn workloads(client: &kube::Client, ns: &str) -> Vec<DynamicObject> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &objects::api_resource("Workload"));
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

fn has_condition(object: &Value, kind: &str, status: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == status)
    })
}

fn owned_by(workload: &DynamicObject, name: &str) -> bool {
    workload
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.name == name)
}

#[tokio::test]
async fn a_queued_job_runs_and_a_job_over_quota_waits_for_it() {
    let ns = "kueue-quota";
    let client = queue_setup(ns, "1", None).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let first = jobs
        .create(&PostParams::default(), &job("first", "1", "succeed", None))
        .await
        .unwrap();
    assert!(
        suspended(&first),
        "Kueue's webhook suspends a Job with a queue name"
    );
    eventually(60, "the first Job to be admitted", || async {
        (!suspended(&jobs.get("first").await.ok()?)).then_some(())
    })
    .await;
    jobs.create(&PostParams::default(), &job("second", "1", "succeed", None))
        .await
        .unwrap();
    eventually(30, "a pending Workload for the second Job", || async {
        let wls = workloads(&client, ns).await;
        let second = wls.iter().find(|w| owned_by(w, "second"))?;
        (!has_condition(&second.data, "QuotaReserved", "True")).then_some(())
    })
    .await;
    always(
        2,
        "the second Job suspended while the first runs",
        || async {
            let first_done = completed(&jobs.get("first").await.unwrap());
            first_done || suspended(&jobs.get("second").await.unwrap())
        },
    )
    .await;
    eventually(60, "the first Job to complete", || async {
        completed(&jobs.get("first").await.ok()?).then_some(())
    })
    .await;
    eventually(60, "the second Job to be admitted and complete", || async {
        completed(&jobs.get("second").await.ok()?).then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_appwrapper_is_suspended_by_kueue_and_admitted_with_pod_set_infos() {
    let ns = "kueue-appwrapper";
    let client = queue_setup(ns, "4", None).await;
    let ar = kube::discovery::ApiResource::erase::<appwrapper_controller::api::AppWrapper>(&());
    let aws: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let aw: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "wrapped", "labels": {"kueue.x-k8s.io/queue-name": "queue"}},
        "spec": {"components": [{"template": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "wrapped-job"},
            "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}]},
    }))
    .unwrap();
    let created = aws.create(&PostParams::default(), &aw).await.unwrap();
    assert_eq!(
        created.data["spec"]["suspend"], true,
        "defaulted to suspended by Kueue's webhook"
    );
    eventually(30, "a Workload for the AppWrapper", || async {
        workloads(&client, ns)
            .await
            .iter()
            .any(|w| owned_by(w, "wrapped"))
            .then_some(())
    })
    .await;
    let admitted = eventually(60, "the AppWrapper to be admitted", || async {
        let aw = aws.get("wrapped").await.ok()?;
        (aw.data["spec"]["suspend"] != true).then_some(aw)
    })
    .await;
    let infos = &admitted.data["spec"]["components"][0]["podSetInfos"];
    assert_eq!(
        infos.as_array().map(Vec::len),
        Some(1),
        "one podSetInfo per pod set: {infos}"
    );
    assert_eq!(
        infos[0]["nodeSelector"]["type"], "kwok",
        "the flavor's node labels: {infos}"
    );
}

#[tokio::test]
async fn a_higher_priority_workload_preempts_a_lower_one() {
    let ns = "kueue-preemption";
    let client = queue_setup(ns, "1", Some("LowerPriority")).await;
    objects::apply(&client, &objects::workload_priority_class("awconf-low", 10))
        .await
        .unwrap();
    objects::apply(
        &client,
        &objects::workload_priority_class("awconf-high", 1000),
    )
    .await
    .unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    jobs.create(
        &PostParams::default(),
        &job("low", "1", "running", Some("awconf-low")),
    )
    .await
    .unwrap();
    eventually(60, "the low-priority Job to run", || async {
        (!suspended(&jobs.get("low").await.ok()?)).then_some(())
    })
    .await;
    jobs.create(
        &PostParams::default(),
        &job("high", "1", "running", Some("awconf-high")),
    )
    .await
    .unwrap();
    eventually(60, "the low-priority Job to be suspended again", || async {
        suspended(&jobs.get("low").await.ok()?).then_some(())
    })
    .await;
    eventually(60, "the high-priority Job to be admitted", || async {
        (!suspended(&jobs.get("high").await.ok()?)).then_some(())
    })
    .await;
}
