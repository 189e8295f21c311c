//! Upgrading Kueue in place keeps what it admitted and goes on admitting.

mod support;

use clusters::Cluster;
use clusters::kueue::objects::{self, ClusterQueueSpec, Quota};
use clusters::kueue::{self, Kueue};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use serde_json::json;
use support::{always, eventually, namespace};

pub const FROM: &str = "v0.18.4";
pub const TO: &str = "v0.19.2";

fn running_job(name: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "queue"}},
        "spec": {"template": {"metadata": {"labels": {"awconf.dev/outcome": "running"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "1"}}}]}}},
    }))
    .unwrap()
}

fn admitted(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(false)
}

#[tokio::test]
async fn an_in_place_upgrade_keeps_admitted_workloads_and_admits_new_ones() {
    let cluster = clusters::providers::local::shared().unwrap();
    let from = kueue::KueueSource::release(FROM).unwrap();
    let mut kueue = Kueue::start(clusters::shared_kueue::host(cluster), &from)
        .await
        .unwrap();
    let ns = "kueue-upgrade";
    let client = namespace(cluster, ns).await;
    objects::apply(&client, &objects::resource_flavor("upgrade-flavor"))
        .await
        .unwrap();
    let spec = ClusterQueueSpec {
        flavor: "upgrade-flavor".into(),
        quota: Quota {
            cpu: "2".into(),
            ..Quota::default()
        },
        ..Default::default()
    };
    objects::namespace_queue(&client, ns, &spec).await.unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    jobs.create(&PostParams::default(), &running_job("before"))
        .await
        .unwrap();
    eventually(60, "admission before the upgrade", || async {
        admitted(&jobs.get("before").await.ok()?).then_some(())
    })
    .await;

    kueue
        .upgrade(&kueue::KueueSource::release(TO).unwrap())
        .await
        .unwrap();
    assert_eq!(kueue.source().label(), TO);

    always(
        5,
        "the Job admitted before the upgrade stays admitted",
        || async { admitted(&jobs.get("before").await.unwrap()) },
    )
    .await;
    let client = cluster.client().await.unwrap();
    let jobs: Api<Job> = Api::namespaced(client, ns);
    jobs.create(&PostParams::default(), &running_job("after"))
        .await
        .unwrap();
    eventually(60, "admission after the upgrade", || async {
        admitted(&jobs.get("after").await.ok()?).then_some(())
    })
    .await;
}
