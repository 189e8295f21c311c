use super::*;
use crate::leftovers::{Components, Promise};
use crate::rules::Snapshot;

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-03T08:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + chrono::TimeDelta::milliseconds(ms)
}

fn span(from: i64, to: i64) -> Span {
    Span {
        received: at(from),
        completed: at(to),
    }
}

fn event(stage: &str, verb: &str, id: &str, code: u64, resource: &str, object: Value) -> String {
    json!({
        "kind": "Event", "level": "RequestResponse", "auditID": id, "stage": stage,
        "verb": verb,
        "objectRef": {"resource": resource, "namespace": "ns", "name": "x"},
        "responseStatus": {"code": code},
        "responseObject": object,
        "requestReceivedTimestamp": "2026-12-03T08:00:00.000000Z",
        "stageTimestamp": "2026-12-03T08:00:00.000100Z",
    })
    .to_string()
}

fn pod(uid: &str, labelled: bool) -> Value {
    let mut object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{uid}"), "namespace": "ns", "uid": uid,
                     "creationTimestamp": "2026-12-03T08:00:00Z"},
    });
    if labelled {
        object["metadata"]["labels"] = json!({APPWRAPPER_LABEL: "aw"});
    }
    object
}

fn release() -> Release {
    let aw = json!({
        "metadata": {"name": "aw", "namespace": "ns", "uid": "a1",
                     "creationTimestamp": "2026-12-03T07:59:00Z"},
        "status": {"phase": "Suspended", "conditions": [
            {"type": "ResourcesDeployed", "status": "False", "reason": "R",
             "lastTransitionTime": "2026-12-03T08:00:00Z"}]},
    });
    Release {
        promise: Promise::Released(vec!["ResourcesDeployed"]),
        state: Snapshot::from_object(&aw).unwrap(),
        components: Components::default(),
        before: None,
    }
}

/// A log that holds objects, with a labelled pod created in `created` and removed in
/// `removed`.
fn log_with(created: Span, removed: Option<Span>, labelled: bool) -> ObjectLog {
    let mut log = ObjectLog::default();
    log.push(Line::Covered);
    log.push(Line::Created {
        id: "c".into(),
        object: identity(&pod("p1", labelled)),
        span: created,
    });
    if let Some(span) = removed {
        log.push(Line::Removed {
            id: "d".into(),
            uid: "p1".into(),
            span,
        });
    }
    log
}

fn existed(verdict: Verdict) -> Vec<(String, bool)> {
    match verdict {
        Verdict::Existed(e) => e.into_iter().map(|(l, after)| (l.name, after)).collect(),
        other => panic!("{other:?}"),
    }
}

#[rstest::rstest]
#[case::created_after(span(200, 210), None)]
#[case::removed_before(span(0, 10), Some(span(20, 30)))]
fn what_was_not_there_at_the_release_is_clean(
    #[case] created: Span,
    #[case] removed: Option<Span>,
) {
    let log = log_with(created, removed, true);
    assert_eq!(log.judge(&release(), &span(100, 110)), Verdict::Clean);
}

#[test]
fn a_pod_there_at_the_release_existed_with_or_without_its_removal_logged() {
    let release_span = span(100, 110);
    let gone_after = log_with(span(0, 10), Some(span(150, 160)), true);
    assert_eq!(
        existed(gone_after.judge(&release(), &release_span)),
        [("p-p1".to_string(), true)]
    );
    let still_there = log_with(span(0, 10), None, true);
    assert_eq!(
        existed(still_there.judge(&release(), &release_span)),
        [("p-p1".to_string(), false)]
    );
}

#[test]
fn another_workloads_pod_is_not_judged() {
    let log = log_with(span(0, 10), None, false);
    assert_eq!(log.judge(&release(), &span(100, 110)), Verdict::Clean);
}

#[rstest::rstest]
#[case::created_during(span(105, 120), None)]
#[case::removed_during(span(0, 10), Some(span(95, 105)))]
fn a_write_overlapping_the_release_leaves_it_unsure(
    #[case] created: Span,
    #[case] removed: Option<Span>,
) {
    let log = log_with(created, removed, true);
    assert!(matches!(
        log.judge(&release(), &span(100, 110)),
        Verdict::Unsure(_)
    ));
}

#[test]
fn a_write_with_no_outcome_before_the_release_leaves_it_unsure() {
    let mut log = log_with(span(0, 10), Some(span(20, 30)), true);
    log.push(Line::Received {
        id: "w".into(),
        namespace: "ns".into(),
        at: at(50),
    });
    assert!(
        matches!(log.judge(&release(), &span(100, 110)), Verdict::Unsure(m) if m.contains("no outcome"))
    );
    log.push(Line::Done { id: "w".into() });
    assert_eq!(log.judge(&release(), &span(100, 110)), Verdict::Clean);
}

#[test]
fn a_log_that_holds_no_objects_cannot_tell() {
    let log = ObjectLog::default();
    assert!(matches!(
        log.judge(&release(), &span(100, 110)),
        Verdict::Unsure(_)
    ));
}

#[test]
fn a_component_is_judged_by_its_name_kind_and_ownership() {
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "aw-job", "namespace": "ns", "uid": "j1",
                     "creationTimestamp": "2026-12-03T08:00:00Z",
                     "ownerReferences": [{"uid": "a1", "kind": "AppWrapper", "controller": true}]},
    });
    let mut log = ObjectLog::default();
    log.push(Line::Covered);
    log.push(Line::Created {
        id: "c".into(),
        object: identity(&job),
        span: span(0, 10),
    });
    let mut r = release();
    assert_eq!(
        log.judge(&r, &span(100, 110)),
        Verdict::Clean,
        "not a component"
    );
    let mut with_job = r.state.clone();
    with_job.components = vec![crate::rules::Component {
        object: crate::rules::ComponentRef {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "aw-job".into(),
        },
        deployed: true,
    }];
    r.components.remember(&with_job);
    assert_eq!(
        existed(log.judge(&r, &span(100, 110))),
        [("aw-job".to_string(), false)]
    );
}

#[rstest::rstest]
#[case::a_pod_deleted_at_once("delete", pod("p1", true), true)]
#[case::a_pod_given_a_grace_period("delete", json!({"kind": "Pod", "metadata": {"uid": "p1",
    "deletionTimestamp": "t", "deletionGracePeriodSeconds": 30}}), false)]
#[case::a_pod_kept_by_a_finalizer("delete", json!({"kind": "Pod", "metadata": {"uid": "p1",
    "deletionTimestamp": "t", "deletionGracePeriodSeconds": 0, "finalizers": ["f"]}}), false)]
#[case::a_last_finalizer_removed("patch", json!({"kind": "Pod", "metadata": {"uid": "p1",
    "deletionTimestamp": "t", "deletionGracePeriodSeconds": 0}}), true)]
#[case::a_patch_of_a_live_pod("patch", pod("p1", true), false)]
#[case::a_status_naming_the_uid("delete", json!({"kind": "Status", "details": {"uid": "p1"}}), true)]
fn which_writes_remove(#[case] verb: &str, #[case] response: Value, #[case] removed: bool) {
    let line = parse(&event("ResponseComplete", verb, "w", 200, "pods", response));
    assert_eq!(
        matches!(&line, Line::Removed { uid, .. } if uid == "p1"),
        removed,
        "{line:?}"
    );
}

#[rstest::rstest]
#[case::a_server_error(500, "delete")]
#[case::a_deletecollection(200, "deletecollection")]
fn outcomes_the_log_does_not_show(#[case] code: u64, #[case] verb: &str) {
    let line = parse(&event(
        "ResponseComplete",
        verb,
        "w",
        code,
        "pods",
        json!({}),
    ));
    assert_eq!(line, Line::Unknown { id: "w".into() });
}

#[test]
fn lines_of_other_levels_and_of_appwrappers_are_not_read() {
    let create = event(
        "ResponseComplete",
        "create",
        "w",
        201,
        "pods",
        pod("p1", true),
    );
    assert!(matches!(parse(&create), Line::Created { .. }));
    assert_eq!(
        parse(&create.replace("RequestResponse", "Metadata")),
        Line::Other
    );
    assert_eq!(
        parse(&create.replace("\"pods\"", "\"appwrappers\"")),
        Line::Other
    );
    let namespace = event(
        "ResponseComplete",
        "create",
        "n",
        201,
        "namespaces",
        json!({}),
    );
    assert_eq!(parse(&namespace), Line::Covered);
}
