//! Asking the invariant monitor what it saw.

use super::outcome::Outcome;
use appwrapper_controller::api::Phase;
use cucumber::then;

use super::secs;
use crate::parameters::{ConditionStatus, Reason, Subject, Whose, WithinSeconds};
use crate::wait::{self, Check};
use crate::world::AwWorld;

fn phase(text: &str) -> anyhow::Result<Phase> {
    text.parse().map_err(anyhow::Error::msg)
}

fn seen(w: &AwWorld, name: &str) -> String {
    let lines: Vec<String> = w
        .monitor()
        .transitions_in(&w.ns)
        .iter()
        .filter(|t| t.name == name)
        .map(|t| t.describe())
        .collect();
    if lines.is_empty() {
        "no phase change seen".into()
    } else {
        format!("changes seen:\n{}", lines.join("\n"))
    }
}

/// Only an edge seen from one watch event to the next counts, not one inferred across a
/// re-list of the watch.
#[then(expr = "the monitor saw {subject} go from {word} to {word}")]
async fn saw_edge(w: &mut AwWorld, subject: Subject, from: String, to: String) -> Outcome {
    let name = w.select(&subject)?;
    let (from, to) = (phase(&from)?, phase(&to)?);
    let (world, aw) = (&*w, name.as_str());
    Ok(wait::eventually(
        secs(5),
        &format!("the monitor to see {name} go from {from} to {to}"),
        move || async move {
            Ok(if world.monitor().saw(&world.ns, aw, from, to) {
                Check::Done(())
            } else {
                Check::NotYet(seen(world, aw))
            })
        },
    )
    .await?)
}

/// Once it reached `phase`, the monitor saw no change out of it, seen directly or inferred
/// across a re-list of its watch.
#[then(expr = "the monitor saw {subject} never leave {word}")]
async fn never_left(w: &mut AwWorld, subject: Subject, phase_name: String) -> Outcome {
    let name = w.select(&subject)?;
    let held = phase(&phase_name)?;
    let transitions: Vec<_> = w
        .monitor()
        .transitions_in(&w.ns)
        .into_iter()
        .filter(|t| t.name == name)
        .collect();
    let Some(reached) = transitions.iter().position(|t| t.to == held) else {
        crate::fail!(
            "the monitor never saw {name} reach {held}; {}",
            seen(w, &name)
        );
    };
    if let Some(left) = transitions[reached..].iter().find(|t| t.from == held) {
        crate::fail!(
            "{name} left {held}: {}; {}",
            left.describe(),
            seen(w, &name)
        );
    }
    Ok(())
}

/// A state the controller may hold only briefly (a condition between two writes of one
/// reconcile's aftermath) is asserted from what the monitor observed, not by polling after
/// the fact: the watch sees every write, a poll only the states it happens to land on.
#[then(expr = "the monitor saw {whose} {word} condition {status}{reason}{within_seconds}")]
async fn saw_condition(
    w: &mut AwWorld,
    subject: Whose,
    kind: String,
    status: ConditionStatus,
    reason: Reason,
    seconds: WithinSeconds,
) -> Outcome {
    let name = w.select(&subject)?;
    let reason = (!reason.is_empty()).then_some(reason);
    let patience = if seconds.is_empty() {
        5
    } else {
        seconds.parse()?
    };
    let (world, aw, kind, status, reason) = (
        &*w,
        name.as_str(),
        kind.as_str(),
        status.as_str(),
        reason.as_deref(),
    );
    let with_reason = reason
        .map(|r| format!(" with reason {r}"))
        .unwrap_or_default();
    Ok(wait::eventually(
        secs(patience),
        &format!("the monitor to see {name}'s {kind} condition {status}{with_reason}"),
        move || async move {
            Ok(
                if world
                    .monitor()
                    .saw_condition(&world.ns, aw, kind, status, reason)
                {
                    Check::Done(())
                } else {
                    Check::NotYet(seen(world, aw))
                },
            )
        },
    )
    .await?)
}
