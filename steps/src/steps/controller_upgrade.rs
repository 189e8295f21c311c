//! Upgrading the controller with work in flight (`@controller-upgrade` scenarios, which are
//! `@serial`): the controller under test is stopped, the controller the run names with
//! `--controller-upgrade-from` (the reference operator, or an older build of ours) runs in its
//! place until the scenario has work in flight, then hands over to the controller under test,
//! as a rollout of a new release or a drop-in replacement of the reference does.

use super::outcome::Outcome;
use std::time::Instant;

use anyhow::Context as _;
use cucumber::{given, when};

use crate::environment::local::{take_over, upgrade_from};
use crate::options::{CONTROLLER_UPGRADE_TAG, ControllerUpgrade};
use crate::world::AwWorld;

#[given(
    regex = r"^the controller the upgrade starts from runs in place of the controller under test$"
)]
async fn starts_from(w: &mut AwWorld) -> Outcome {
    crate::require!(
        w.serial,
        "a scenario that upgrades the controller must be tagged @serial @{CONTROLLER_UPGRADE_TAG}"
    );
    crate::require!(
        w.upgrade_from.is_none(),
        "the controller the upgrade starts from already runs"
    );
    let from = match w.h.options.controller_upgrade() {
        ControllerUpgrade::From(from) => from,
        ControllerUpgrade::Impossible(why) => crate::fail!("{why}"),
    };
    let started = Instant::now();
    let dir =
        w.h.options
            .report_dir
            .join("controller-upgrade")
            .join(&w.ns);
    let mut shared = w.h.controller.lock().await;
    shared.stop().await?;
    let clients = (&w.h.client, &w.h.watch_client);
    let controller = upgrade_from(&from, &shared, &w.h.kubeconfig, &dir, clients)
        .await
        .with_context(|| {
            format!(
                "starting {} in place of the controller under test",
                from.describe()
            )
        })?;
    drop(shared);
    let log = controller
        .log_path()
        .map(|p| format!("; its log: {}", p.display()))
        .unwrap_or_default();
    w.note(format!(
        "the controller under test stopped; {} runs in its place, its webhooks answering after \
         {:.1}s{log}",
        from.describe(),
        started.elapsed().as_secs_f64()
    ));
    w.upgrade_from = Some(controller);
    Ok(())
}

/// Notes the pods of every submitted AppWrapper first, for `its pods are the ones it had
/// before the upgrade`. The old controller gets SIGTERM, as a rollout sends it, and exits
/// before the controller under test starts (a Deployment's Recreate strategy; with leader
/// election a rolling update hands over the same way).
#[when(regex = r"^the controller is upgraded to the controller under test$")]
async fn upgraded(w: &mut AwWorld) -> Outcome {
    crate::require!(
        w.upgrade_from.is_some(),
        "no controller to upgrade from runs (`Given the controller the upgrade starts from runs \
         in place of the controller under test` first)"
    );
    super::kueue_upgrade::note_before_upgrade(w).await?;
    let mut from = w.upgrade_from.take().context("checked above")?;
    let started = Instant::now();
    from.stop().await?;
    let mut shared = w.h.controller.lock().await;
    take_over(&mut shared, &w.h.client, &w.h.watch_client)
        .await
        .context("starting the controller under test in place of the one it upgrades")?;
    drop(shared);
    w.note(format!(
        "{} stopped; the controller under test took its place, its webhooks answering after \
         {:.1}s",
        from.mode().describe(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}
