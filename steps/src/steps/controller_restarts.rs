//! Stopping, killing and restarting the controller under test: the scenario's own controller
//! when it has one (`@own-controller`), otherwise the shared one (the scenario is `@serial`).
//! The After hook starts it again if a scenario leaves it down, and puts back settings a
//! scenario changed.

use super::outcome::Outcome;
use appwrapper_controller::config::Config;
use cucumber::{given, when};

use crate::world::{AwWorld, LOCAL_QUEUE};
use crate::yaml;

#[given(regex = r"^the controller is (stopped|killed)$")]
#[when(regex = r"^the controller is (stopped|killed)$")]
async fn down(w: &mut AwWorld, how: String) -> Outcome {
    for name in w.submitted.clone() {
        // An AppWrapper the scenario already deleted has no moments left to keep.
        let _ = crate::steps::timing_windows::remember_moments(w, &name).await;
    }
    if let Some(own) = &mut w.own_controller {
        if how == "killed" {
            own.kill().await?;
        } else {
            own.stop().await?;
        }
    } else {
        if !w.serial {
            crate::fail!(
                "a scenario that stops the controller must be tagged @serial (and \
                 @own-controller to run beside the others where the harness can start one for it)"
            );
        }
        let mut controller = w.h.controller.lock().await;
        if how == "killed" {
            controller.kill().await?;
        } else {
            controller.stop().await?;
        }
    }
    w.note(format!("the controller was {how}"));
    Ok(())
}

#[when(regex = r"^the controller is (?:started|restarted)(?: again)?$")]
async fn up(w: &mut AwWorld) -> Outcome {
    let watch_client = w.watch_client().clone();
    if let Some(own) = &mut w.own_controller {
        own.stop().await?;
        own.start(&watch_client).await?;
    } else {
        let mut controller = w.h.controller.lock().await;
        controller.stop().await?;
        controller.start(&w.h.watch_client).await?;
    }
    w.note("the controller was started");
    Ok(())
}

#[given(regex = r#"^the controller is configured with the default queue name "([^"]+)"$"#)]
async fn default_queue_name(w: &mut AwWorld, name: String) -> Outcome {
    let name = yaml::substitute(&name, &[("queue", LOCAL_QUEUE)]);
    reconfigure(w, |config| {
        config.appwrapper.default_queue_name = name.clone()
    })
    .await?;
    w.note(format!(
        "the controller was restarted with defaultQueueName {name}"
    ));
    Ok(())
}

/// Restarts the shared controller with its settings changed by `change`; the After hook
/// restarts it with the run's settings again.
async fn reconfigure(w: &mut AwWorld, change: impl FnOnce(&mut Config)) -> anyhow::Result<()> {
    crate::require!(
        w.serial && w.own_controller.is_none(),
        "a scenario that changes the controller's settings must be tagged @serial (and not \
         @own-controller): the shared controller serves every scenario's webhooks"
    );
    let mut controller = w.h.controller.lock().await;
    let before = controller.config().clone();
    let mut config = before.clone();
    change(&mut config);
    w.settings_to_restore.get_or_insert(before);
    controller
        .restart_with(&w.h.client, &w.h.watch_client, config)
        .await
}
