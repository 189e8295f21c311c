//! The invariant monitor refuses on a live cluster: a scenario writes, by hand, a status that
//! breaks a rule on an AppWrapper no controller manages (`spec.managedBy` names another), and
//! the scenario that owns its namespace must fail with that rule's message. The suite's own
//! scenarios can only show that the monitor accepts right controllers; this shows it refuses.
//! Ends with `N passed, N failed` like the other suite targets.

use std::process::ExitCode;

use awconf::cli::cargo_test::TestBinary;
use conformance_steps::FeatureSet;
use conformance_steps::suite::run_suite;

const FEATURE: &str = r#"Feature: A status no conforming controller writes
  Scenario: Succeeded while the quota is still reserved
    Given an AppWrapper "forged" wrapping a Pod
    And its spec.managedBy is "example.com/another-controller"
    When it is created outside Kueue
    And its status is written as:
      """
      status:
        phase: Suspended
      """
    And its status is written as:
      """
      status:
        phase: Succeeded
        conditions:
        - {type: QuotaReserved, status: "True", reason: Resuming, message: forged, lastTransitionTime: "${now}"}
      """
    Then it stays Succeeded for 2 seconds
"#;

/// The rule the forged status breaks, as the monitor words it.
const RULE: &str = "QuotaReserved must be False once Succeeded";

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"monitor_refuses".contains(&a))
    {
        println!("0 passed, 0 failed (the filter is for another test)");
        return ExitCode::SUCCESS;
    }
    match refuses().await {
        Ok(()) => {
            println!("1 passed, 0 failed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("monitor_refuses: {e:#}");
            println!("0 passed, 1 failed");
            ExitCode::FAILURE
        }
    }
}

async fn refuses() -> anyhow::Result<()> {
    let features = tempfile::tempdir()?;
    std::fs::write(features.path().join("forged.feature"), FEATURE)?;
    // `awconf run`'s variables; the arguments are this test's filter, handled above.
    let mut options = TestBinary {
        name: "monitor_refuses",
        controller: None,
    }
    .options(["monitor_refuses"])?;
    options.features = FeatureSet::Only(features.path().to_path_buf());
    options.filters.clear();
    options.tags = None;
    options.retries = 0;
    options.starved_reruns = 0;
    options.report_dir = options.report_dir.join("monitor-refuses");
    let junit = options.junit_path();
    let summary = run_suite(options).await?;
    anyhow::ensure!(
        summary.passed == 0 && summary.failed == 1,
        "the forged status should fail its scenario; the run ended {}",
        summary.closing_line()
    );
    let report = std::fs::read_to_string(&junit)?;
    anyhow::ensure!(
        report.contains(RULE),
        "the scenario failed, but not with {RULE:?}; see {}",
        junit.display()
    );
    Ok(())
}
