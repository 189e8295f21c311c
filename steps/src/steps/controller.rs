//! Stopping, killing and restarting the controller under test (scenarios that do are
//! `@serial`; the After hook starts it again if a scenario leaves it down).

use cucumber::{given, when};

use crate::world::AwWorld;

#[given(regex = r"^the controller is (stopped|killed)$")]
#[when(regex = r"^the controller is (stopped|killed)$")]
async fn down(w: &mut AwWorld, how: String) -> anyhow::Result<()> {
    if !w.serial {
        anyhow::bail!("a scenario that stops the controller must be tagged @serial");
    }
    let mut controller = w.h.controller.lock().await;
    if how == "killed" {
        controller.kill().await?;
    } else {
        controller.stop().await?;
    }
    drop(controller);
    w.note(format!("the controller was {how}"));
    Ok(())
}

#[when(regex = r"^the controller is (?:started|restarted)(?: again)?$")]
async fn up(w: &mut AwWorld) -> anyhow::Result<()> {
    let mut controller = w.h.controller.lock().await;
    controller.stop().await?;
    controller.start(&w.h.watch_client).await?;
    drop(controller);
    w.note("the controller was started");
    Ok(())
}
