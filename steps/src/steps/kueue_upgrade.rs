//! Upgrading Kueue in place (`@kueue-upgrade` scenarios, which are `@serial`): the run, or the
//! scenario's own cluster, started Kueue at an older release, and the scenario replaces it with
//! the Kueue under test while the cluster keeps every object.

use super::outcome::Outcome;
use std::time::Instant;

use anyhow::Context as _;
use cucumber::{given, then, when};

use crate::parameters::Whose;
use crate::run_context::PendingUpgrade;
use crate::world::AwWorld;

fn pending(w: &AwWorld) -> anyhow::Result<&PendingUpgrade> {
    crate::require!(
        w.upgrades_kueue && (w.serial || w.own_cluster.is_some()),
        "a scenario that upgrades Kueue must be tagged @serial @{}",
        crate::options::KUEUE_UPGRADE_TAG
    );
    let upgrade = match &w.own_cluster {
        Some(own) => own.kueue_upgrade.as_ref(),
        None => w.h.kueue_upgrade.as_ref(),
    }
    .context("this run did not start Kueue at an older release to upgrade from")?;
    crate::require!(
        !upgrade.done(),
        "Kueue was already upgraded to {}",
        upgrade.to.label()
    );
    Ok(upgrade)
}

#[given(regex = r"^Kueue runs the release the upgrade starts from$")]
async fn runs_the_old_release(w: &mut AwWorld) -> Outcome {
    let upgrade = pending(w)?;
    let running = upgrade.running().await;
    let from = clusters::kueue::KueueSource::Release(upgrade.from);
    crate::require!(
        running == from,
        "Kueue runs {}, not {from:?}",
        running.label()
    );
    let note = format!(
        "Kueue runs {}; the upgrade goes to {}",
        upgrade.from,
        upgrade.to.label()
    );
    w.note(note);
    Ok(())
}

/// Notes the pods of every submitted AppWrapper first, for `its pods are the ones it had
/// before the upgrade`.
#[when(regex = r"^Kueue is upgraded in place to the Kueue under test$")]
async fn upgraded(w: &mut AwWorld) -> Outcome {
    pending(w)?;
    note_before_upgrade(w).await?;
    let started = Instant::now();
    let upgrade = pending(w)?;
    let path: Vec<String> = std::iter::once(upgrade.from.to_string())
        .chain(upgrade.steps().iter().map(|s| s.label()))
        .collect();
    upgrade.upgrade().await?;
    let done = format!(
        "Kueue upgraded in place, {} in {:.1}s (each: stopped, new CRDs applied, started, \
         webhooks answering)",
        path.join(" → "),
        started.elapsed().as_secs_f64()
    );
    tracing::info!("{done}");
    w.note(done);
    Ok(())
}

/// Notes the pods (names and uids) of every submitted AppWrapper, for `its pods are the ones it
/// had before the upgrade`, and the moments its conditions show, for the timing windows after
/// it (the controller that takes over may move a condition on before a window's step begins).
pub(super) async fn note_before_upgrade(w: &mut AwWorld) -> anyhow::Result<()> {
    for name in w.submitted.clone() {
        crate::steps::timing_windows::remember_moments(w, &name).await?;
        let pods = objects::pods_of(&w.client, &w.ns, &name).await?;
        w.pods_before_upgrade.insert(name, names_and_uids(&pods));
    }
    Ok(())
}

fn names_and_uids(pods: &[k8s_openapi::api::core::v1::Pod]) -> Vec<(String, String)> {
    pods.iter()
        .map(|p| {
            let meta = &p.metadata;
            (
                meta.name.clone().unwrap_or_default(),
                meta.uid.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The same pods (names and uids) as just before the upgrade, none of them being deleted and
/// none added.
#[then(expr = "{whose} pods are the ones it had before the upgrade")]
async fn same_pods(w: &mut AwWorld, subject: Whose) -> Outcome {
    let name = w.select(&subject)?;
    let before = w
        .pods_before_upgrade
        .get(&name)
        .with_context(|| format!("{name} was not submitted before the upgrade"))?;
    crate::require!(!before.is_empty(), "{name} had no pods before the upgrade");
    let pods = objects::pods_of(&w.client, &w.ns, &name).await?;
    let mut now = names_and_uids(&pods);
    let mut before = before.clone();
    before.sort();
    now.sort();
    crate::require!(
        now == before,
        "the pods of {name} changed with the upgrade: before {before:?}, now {now:?}"
    );
    let deleting: Vec<&str> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    crate::require!(
        deleting.is_empty(),
        "pods of {name} are being deleted: {deleting:?}"
    );
    Ok(())
}
