//! Asking the invariant monitor what it saw.

use appwrapper_controller::api::Phase;
use cucumber::then;

use super::secs;
use super::subject::Subject;
use crate::wait::{self, Check};
use crate::world::AwWorld;

fn phase(text: &str) -> anyhow::Result<Phase> {
    text.parse().map_err(anyhow::Error::msg)
}

fn seen(w: &AwWorld, name: &str) -> String {
    let lines: Vec<String> =
        w.h.monitor
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
#[then(regex = r#"^the monitor saw (it|the AppWrapper(?: "[^"]+")?) go from (\w+) to (\w+)$"#)]
async fn saw_edge(
    w: &mut AwWorld,
    subject: Subject,
    from: String,
    to: String,
) -> anyhow::Result<()> {
    let name = w.select(&subject)?;
    let (from, to) = (phase(&from)?, phase(&to)?);
    let (world, aw) = (&*w, name.as_str());
    wait::eventually(
        secs(5),
        &format!("the monitor to see {name} go from {from} to {to}"),
        move || async move {
            Ok(if world.h.monitor.saw(&world.ns, aw, from, to) {
                Check::Done(())
            } else {
                Check::NotYet(seen(world, aw))
            })
        },
    )
    .await
}

/// Once it reached `phase`, the monitor saw no change out of it, seen directly or inferred
/// across a re-list of its watch.
#[then(regex = r#"^the monitor saw (it|the AppWrapper(?: "[^"]+")?) never leave (\w+)$"#)]
async fn never_left(w: &mut AwWorld, subject: Subject, phase_name: String) -> anyhow::Result<()> {
    let name = w.select(&subject)?;
    let held = phase(&phase_name)?;
    let transitions: Vec<_> =
        w.h.monitor
            .transitions_in(&w.ns)
            .into_iter()
            .filter(|t| t.name == name)
            .collect();
    let Some(reached) = transitions.iter().position(|t| t.to == held) else {
        anyhow::bail!(
            "the monitor never saw {name} reach {held}; {}",
            seen(w, &name)
        );
    };
    if let Some(left) = transitions[reached..].iter().find(|t| t.from == held) {
        anyhow::bail!(
            "{name} left {held}: {}; {}",
            left.describe(),
            seen(w, &name)
        );
    }
    Ok(())
}
