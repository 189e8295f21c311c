//! Waiting for and asserting on an AppWrapper: phases, conditions, partial YAML, events.

use super::outcome::Outcome;
use anyhow::Context as _;
use appwrapper_controller::api::Phase;
use cucumber::gherkin::Step;
use cucumber::then;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::{deadline_of, patience, secs};
use crate::matcher;
use crate::parameters::{ConditionStatus, Deadline, Quoted, Reason, Subject, Whose, Within};
use crate::wait::{self, Check, Patience};
use crate::world::{AwWorld, LOCAL_QUEUE};
use crate::yaml;
use objects::phase_of;

/// The parts of an AppWrapper that tell its state, for failure messages.
pub fn state_view(aw: &Value) -> String {
    let meta = &aw["metadata"];
    let mut view = json!({
        "metadata": {
            "name": meta["name"],
            "finalizers": meta["finalizers"],
            "deletionTimestamp": meta["deletionTimestamp"],
            "annotations": meta["annotations"],
        },
        "spec": { "suspend": aw["spec"]["suspend"], "managedBy": aw["spec"]["managedBy"] },
        "status": aw["status"],
    });
    strip_nulls(&mut view);
    yaml::render(&view)
}

fn strip_nulls(value: &mut Value) {
    if let Value::Object(map) = value {
        map.retain(|_, v| !v.is_null());
        map.values_mut().for_each(strip_nulls);
    }
}

fn phase(text: &str) -> anyhow::Result<Phase> {
    text.parse().map_err(anyhow::Error::msg)
}

fn observed(aw: &Value) -> Phase {
    phase_of(aw).parse().unwrap_or_default()
}

/// Waits until the AppWrapper is in `target`, or the monitor saw it enter `target` since the
/// wait began (a brief phase may be over before a poll on a loaded machine lands on it);
/// gives up early once that cannot happen.
pub async fn reach_phase(
    w: &AwWorld,
    name: &str,
    target: Phase,
    timeout: std::time::Duration,
) -> anyhow::Result<Value> {
    let since = chrono::Utc::now();
    wait::eventually(
        timeout,
        &format!("AppWrapper {name} to reach phase {target}"),
        move || async move {
            let entered = w.monitor().entered(&w.ns, name, target, since);
            let Some(aw) = w.appwrapper(name).await? else {
                if entered {
                    return Ok(Check::Done(Value::Null));
                }
                return Ok(
                    if target == Phase::Terminating && w.submitted.iter().any(|s| s == name) {
                        Check::Never(format!("AppWrapper {name} is gone"))
                    } else {
                        Check::NotYet(format!("AppWrapper {name} does not exist"))
                    },
                );
            };
            let now = observed(&aw);
            if now == target || entered {
                return Ok(Check::Done(aw));
            }
            let stuck =
                (now.is_terminal() && target != Phase::Terminating) || now == Phase::Terminating;
            Ok(if stuck {
                Check::Never(format!(
                    "it is {now}, which never leads to {target}:\n{}",
                    state_view(&aw)
                ))
            } else {
                Check::NotYet(state_view(&aw))
            })
        },
    )
    .await
}

#[then(expr = "{subject} reaches phase {word} within {deadline}")]
async fn reaches(w: &mut AwWorld, subject: Subject, target: String, deadline: Deadline) -> Outcome {
    let name = w.select(&subject)?;
    let target = phase(&target)?;
    reach_phase(w, &name, target, deadline_of(&deadline)?).await?;
    w.note(format!("{name} reached {target}"));
    Ok(())
}

#[then(expr = "{subject} is in phase {word}")]
async fn is_in_phase(w: &mut AwWorld, subject: Subject, target: String) -> Outcome {
    let name = w.select(&subject)?;
    let target = phase(&target)?;
    let aw = w.existing(&name).await?;
    if observed(&aw) != target {
        crate::fail!(
            "AppWrapper {name} is {}, not {target}:\n{}",
            observed(&aw),
            state_view(&aw)
        );
    }
    Ok(())
}

#[then(expr = "{subject} stays {word} for {int} seconds")]
async fn stays(w: &mut AwWorld, subject: Subject, target: String, seconds: u64) -> Outcome {
    let name = w.select(&subject)?;
    let target = holds_phase(w, &name, &target, secs(seconds)).await?;
    w.note(format!("{name} stayed {target} for {seconds}s"));
    Ok(())
}

/// Fails at the first read, within `duration`, that finds `name` gone or out of the phase
/// `target`; reads at least once.
pub async fn holds_phase(
    w: &AwWorld,
    name: &str,
    target: &str,
    duration: std::time::Duration,
) -> anyhow::Result<Phase> {
    let target = phase(target)?;
    wait::always(
        duration,
        &format!("AppWrapper {name} being {target}"),
        move || async move {
            Ok(match w.appwrapper(name).await? {
                None => Some(format!("AppWrapper {name} is gone")),
                Some(aw) if observed(&aw) != target => Some(state_view(&aw)),
                Some(_) => None,
            })
        },
    )
    .await?;
    Ok(target)
}

/// What one read of an object says against `expected` (a partial match): done with the
/// object, or not yet with the differences and the object seen.
pub fn judge(what: &str, expected: &Value, actual: Option<Value>) -> Check<Value> {
    let Some(actual) = actual else {
        return Check::NotYet(format!("{what} does not exist"));
    };
    if matcher::matches(expected, &actual) {
        Check::Done(actual)
    } else {
        Check::NotYet(format!(
            "{}\nobject seen:\n{}",
            matcher::explain(expected, &actual),
            yaml::render_object(&actual)
        ))
    }
}

/// Checks the object read by `read` against `expected`: once, or until it matches.
pub async fn object_matches<F, Fut>(
    what: &str,
    expected: &Value,
    patience: Patience,
    mut read: F,
) -> anyhow::Result<Value>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<Value>>>,
{
    wait::expect(patience, &format!("{what} to match"), || {
        let read = read();
        async move { Ok(judge(what, expected, read.await?)) }
    })
    .await
}

/// Reads the object for all of `duration`; fails at the first read that does not match.
pub async fn keeps_matching<F, Fut>(
    what: &str,
    expected: &Value,
    duration: std::time::Duration,
    mut read: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<Value>>>,
{
    wait::always(duration, &format!("{what} matching"), || {
        let read = read();
        async move {
            Ok(match judge(what, expected, read.await?) {
                Check::Done(_) => None,
                Check::NotYet(diff) | Check::Never(diff) => Some(diff),
            })
        }
    })
    .await
}

pub fn expected_yaml(w: &AwWorld, step: &Step) -> anyhow::Result<Value> {
    let text = step
        .docstring
        .as_deref()
        .context("this step needs a doc string")?;
    yaml::parse(&yaml::substitute(
        text,
        &[("namespace", &w.ns), ("queue", LOCAL_QUEUE)],
    ))
}

#[then(expr = "{subject} matches{within}:")]
async fn matches(w: &mut AwWorld, subject: Subject, seconds: Within, step: &Step) -> Outcome {
    let name = w.select(&subject)?;
    let expected = expected_yaml(w, step)?;
    Ok(appwrapper_matches(w, &name, &expected, patience(&seconds)?).await?)
}

#[then(expr = "{subject} keeps matching for {int} seconds:")]
async fn keeps_matching_for(
    w: &mut AwWorld,
    subject: Subject,
    seconds: u64,
    step: &Step,
) -> Outcome {
    let name = w.select(&subject)?;
    let expected = expected_yaml(w, step)?;
    let (world, aw) = (&*w, name.as_str());
    keeps_matching(
        &format!("AppWrapper {name}"),
        &expected,
        secs(seconds),
        move || world.appwrapper(aw),
    )
    .await?;
    w.note(format!("{name} kept matching for {seconds}s"));
    Ok(())
}

#[then(expr = "{whose} {word} condition is {status}{reason}{within}")]
async fn condition(
    w: &mut AwWorld,
    subject: Whose,
    type_: String,
    status: ConditionStatus,
    reason: Reason,
    seconds: Within,
) -> Outcome {
    let name = w.select(&subject)?;
    let mut condition = json!({"type": type_, "status": status});
    if !reason.is_empty() {
        condition["reason"] = json!(reason);
    }
    let expected = json!({"status": {"conditions": [condition]}});
    Ok(appwrapper_matches(w, &name, &expected, patience(&seconds)?).await?)
}

async fn appwrapper_matches(
    w: &AwWorld,
    name: &str,
    expected: &Value,
    patience: Patience,
) -> anyhow::Result<()> {
    object_matches(
        &format!("AppWrapper {name}"),
        expected,
        patience,
        move || w.appwrapper(name),
    )
    .await?;
    Ok(())
}

#[then(expr = "{whose} resettingCount is {int}")]
async fn resetting_count(w: &mut AwWorld, subject: Whose, count: i64) -> Outcome {
    let name = w.select(&subject)?;
    let aw = w.existing(&name).await?;
    let found = aw["status"]["resettingCount"].as_i64().unwrap_or(0);
    if found != count {
        crate::fail!(
            "resettingCount of {name} is {found}, expected {count}:\n{}",
            state_view(&aw)
        );
    }
    Ok(())
}

#[then(expr = "{subject} has an event {word} containing {quoted}{within}")]
async fn event(
    w: &mut AwWorld,
    subject: Subject,
    reason: String,
    text: Quoted,
    seconds: Within,
) -> Outcome {
    let name = w.select(&subject)?;
    let what = format!("an event {reason} containing {text:?} on AppWrapper {name}");
    let (client, ns) = (&w.client, w.ns.as_str());
    let (name, reason, text) = (name.as_str(), reason.as_str(), text.as_str());
    Ok(
        wait::expect(patience(&seconds)?, &what, move || async move {
            let events = Api::<Event>::namespaced(client.clone(), ns)
                .list(&ListParams::default())
                .await?;
            Ok(
                if events.items.iter().any(|e| is_event(e, name, reason, text)) {
                    Check::Done(())
                } else {
                    Check::NotYet(crate::report::events::text(client, ns).await)
                },
            )
        })
        .await?,
    )
}

/// An event about AppWrapper `name` whose reason or action is `reason` and whose message
/// contains `text`. The reference v1.2.2 and our controller put the detail in the reason and
/// `Unhealthy` in the action (message `1 failed pods`); the spec's older form has the reason
/// `Unhealthy` (message `FoundFailedPods: 1 failed pods`).
fn is_event(event: &Event, name: &str, reason: &str, text: &str) -> bool {
    let about = event.involved_object.kind.as_deref() == Some("AppWrapper")
        && event.involved_object.name.as_deref() == Some(name);
    let named = event.reason.as_deref() == Some(reason) || event.action.as_deref() == Some(reason);
    about && named && event.message.as_deref().unwrap_or_default().contains(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_named_by_its_reason_or_its_action() {
        let event = |reason: &str, action: Option<&str>, message: &str| Event {
            involved_object: k8s_openapi::api::core::v1::ObjectReference {
                kind: Some("AppWrapper".into()),
                name: Some("aw".into()),
                ..Default::default()
            },
            reason: Some(reason.into()),
            action: action.map(Into::into),
            message: Some(message.into()),
            ..Default::default()
        };
        let older = event("Unhealthy", None, "FoundFailedPods: 1 failed pods");
        let current = event("FoundFailedPods", Some("Unhealthy"), "1 failed pods");
        for e in [&older, &current] {
            assert!(is_event(e, "aw", "Unhealthy", "1 failed pods"));
            assert!(!is_event(e, "other", "Unhealthy", "1 failed pods"));
            assert!(!is_event(e, "aw", "Suspending", "1 failed pods"));
            assert!(!is_event(e, "aw", "Unhealthy", "2 failed pods"));
        }
    }

    fn running() -> Value {
        json!({"metadata": {"name": "a"}, "status": {"phase": "Running"}})
    }

    fn resetting() -> Value {
        json!({"metadata": {"name": "a"}, "status": {"phase": "Resetting"}})
    }

    /// A read that answers from a script of observations, one per call (the last repeats).
    fn script(
        seen: Vec<Option<Value>>,
    ) -> impl FnMut() -> std::future::Ready<anyhow::Result<Option<Value>>> {
        let mut calls = 0;
        move || {
            let next = seen[calls.min(seen.len() - 1)].clone();
            calls += 1;
            std::future::ready(Ok(next))
        }
    }

    #[test]
    fn a_read_is_judged_with_the_differences() {
        let expected = json!({"status": {"phase": "Running"}});
        assert!(matches!(
            judge("it", &expected, Some(running())),
            Check::Done(_)
        ));
        let Check::NotYet(diff) = judge("it", &expected, Some(resetting())) else {
            panic!("a mismatch must not be done");
        };
        assert!(
            diff.contains(".status.phase") && diff.contains("Resetting"),
            "{diff}"
        );
        let Check::NotYet(diff) = judge("AppWrapper a", &expected, None) else {
            panic!("a missing object must not be done");
        };
        assert!(diff.contains("AppWrapper a does not exist"), "{diff}");
    }

    #[tokio::test]
    async fn without_a_deadline_the_first_read_decides() {
        let expected = json!({"status": {"phase": "Running"}});
        let came_back = vec![Some(resetting()), Some(running())];
        assert!(
            object_matches("it", &expected, Patience::Now, script(came_back.clone()))
                .await
                .is_err()
        );
        let within = Patience::Within(std::time::Duration::from_secs(5));
        object_matches("it", &expected, within, script(came_back))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn keeps_matching_fails_at_the_first_mismatch_with_the_diff() {
        let expected = json!({"status": {"phase": "Running"}});
        let err = keeps_matching(
            "it",
            &expected,
            std::time::Duration::from_secs(5),
            script(vec![Some(running()), Some(running()), Some(resetting())]),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("stopped holding") && err.contains("Resetting"),
            "{err}"
        );
        keeps_matching(
            "it",
            &expected,
            std::time::Duration::from_millis(500),
            script(vec![Some(running())]),
        )
        .await
        .unwrap();
    }

    #[test]
    fn the_state_view_keeps_what_tells_the_state() {
        let aw = json!({
            "metadata": {"name": "a", "uid": "u", "finalizers": ["f"]},
            "spec": {"suspend": true, "components": [{"template": {}}]},
            "status": {"phase": "Suspended"},
        });
        let text = state_view(&aw);
        assert!(text.contains("finalizers"));
        assert!(text.contains("phase: Suspended"));
        assert!(!text.contains("components"));
        assert!(!text.contains("uid"));
        assert!(!text.contains("deletionTimestamp"));
    }
}
