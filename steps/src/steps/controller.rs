//! Stopping, killing and restarting the controller under test: the scenario's own controller
//! when it has one (`@own-controller`), otherwise the shared one (the scenario is `@serial`).
//! The After hook starts it again if a scenario leaves it down.

use cucumber::{given, when};

use crate::world::AwWorld;

#[given(regex = r"^the controller is (stopped|killed)$")]
#[when(regex = r"^the controller is (stopped|killed)$")]
async fn down(w: &mut AwWorld, how: String) -> anyhow::Result<()> {
    if let Some(own) = &mut w.own_controller {
        if how == "killed" {
            own.kill().await?;
        } else {
            own.stop().await?;
        }
    } else {
        if !w.serial {
            anyhow::bail!(
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
async fn up(w: &mut AwWorld) -> anyhow::Result<()> {
    if let Some(own) = &mut w.own_controller {
        own.stop().await?;
        own.start(&w.h.watch_client).await?;
    } else {
        let mut controller = w.h.controller.lock().await;
        controller.stop().await?;
        controller.start(&w.h.watch_client).await?;
    }
    w.note("the controller was started");
    Ok(())
}
