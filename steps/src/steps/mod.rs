//! Step definitions, by area. Steps name AppWrappers as `it` / `its` / `the AppWrapper "x"`
//! (see [`subject`]); `Given` steps describe an AppWrapper before it is submitted, `When` steps
//! act on the cluster, `Then` steps assert. An assertion without `within N seconds` reads the
//! state once, as the previous step left it; with it, it polls until the state holds (for a
//! state reached asynchronously). `reaches phase` always names its deadline.
//!
//! The vocabulary, in short (`S` = `it` or `the AppWrapper "x"`, `S's` = `its` or
//! `the AppWrapper "x"'s`; `[within N seconds]` is optional):
//!
//! - define: `an AppWrapper "x" wrapping a Pod and a Job with 2 pods [and backoffLimit 0] and
//!   a Deployment with 2 replicas and a StatefulSet with 2 replicas and a Service`; `... with
//!   the components:` / `... defined by:` (YAML doc string; `${namespace}`, `${queue}` are
//!   replaced); `S's pods succeed [after N seconds] | fail with exit code N [after N seconds] |
//!   stay pending | keep running | hang on deletion | carry a finalizer | start after N
//!   seconds | request N CPU | request N GPU`; `the pods of component N ...`; `S has the
//!   annotations:` (table; short keys get the `workload.codeflare.dev.appwrapper/` prefix; an
//!   unknown key fails, see [`crate::annotations`]); `S's annotation "k" is "v"`; `S has
//!   priority class "p"`; `S's spec.managedBy is "m"`; `S has a node of its own [with N
//!   GPUs]` (a fake node made for its pods alone, so that breaking it disturbs no other
//!   scenario);
//! - submit: `S is submitted to the LocalQueue`; `S is created [suspended] outside Kueue`;
//! - queues: `the ClusterQueue has a quota of N CPU`; `the ClusterQueue preempts
//!   lower-priority workloads`; `the ClusterQueue has N CPU on each of the ResourceFlavors:`
//!   (table `| flavor | node label |`); `a WorkloadPriorityClass "p" with value N`;
//!   `the namespace allows no pods|Jobs`; `the namespace allows only N pods`; `the namespace
//!   allows pods|Jobs again`;
//! - act: `S's pods succeed | fail with exit code N`; `one of S's pods fails with exit code N`;
//!   `S's pods are deleted`; `the finalizer of S's pods is removed`; `S is deleted`; `S's
//!   wrapped Job is deleted`; `S's spec.suspend is set to true|false`; `S's annotation "k" is
//!   set to "v"`; `S's status is written as:` (a merge patch of the status, for an AppWrapper
//!   no controller manages); `Kueue deactivates|reactivates S's workload`; `the node of S's pod is
//!   labelled "k=v" | gets a NoExecute taint "k" | becomes NotReady`; `the controller is
//!   stopped|killed|started again|restarted` (`@serial` scenarios only); `the controller is
//!   configured with the default queue name "q"` (`@serial` only: it restarts the shared
//!   controller, and the After hook restarts it with the run's settings); `Kueue runs the
//!   release the upgrade starts from`, `Kueue is upgraded in place to the Kueue under test`
//!   (`@serial @kueue-upgrade` scenarios only, see [`upgrade`]);
//! - assert: `S reaches phase P within N seconds`; `S is in phase P`; `S stays P for N
//!   seconds`; `S matches [within N seconds]:` (partial YAML, see [`crate::matcher`]);
//!   `S keeps matching for N seconds:`; `S reaches phase P | matches | S's pods are gone
//!   between N and M seconds after it was created | was deployed | became Unhealthy | began
//!   deleting | paused deletion`; `S became Unhealthy between N and M seconds after it was
//!   created | was deployed` (see [`windows`]); `S's C condition is
//!   True|False [with reason R] [within N seconds]`; `S's resettingCount is N`; `S has an
//!   event R containing "text" [within N seconds]`; `N pods of S are Running|Pending|
//!   Succeeded|Failed [within N seconds]`; `S's pods match [within N seconds]:`; `the pods of component N match [within N
//!   seconds]:`; `S's wrapped
//!   Job matches [within N seconds]:`; `no pod of S remains [within N seconds]`; `no wrapped
//!   object of S remains [within N seconds]`; `S is gone [within N seconds]`; `S's pods run
//!   on another node [within N seconds]`; `S's workload matches [within N seconds]:`; `S's workload is the only one in
//!   the namespace`; `exactly N Jobs|Pods|... are ever seen in the namespace over N seconds`; `the
//!   ClusterQueue has N admitted workloads [within N seconds]`; `the monitor saw S go from P
//!   to Q` (an edge seen directly); `the monitor saw S's C condition True|False [with reason
//!   R] [within N seconds]` (a state that may be brief); `the monitor saw S never leave P` (once it reached P);
//!   `S's pods are the ones it had before the upgrade`;
//! - admission (see [`webhook`]): `I try to create S` / `"user" tries to create S`; `I try to
//!   set S's <field path> to <YAML value>`; `a user "u" who may create Pods but not
//!   Deployments`; `S is refused with "message" at "field path"`; `S is accepted`.

pub mod appwrapper;
pub mod assertions;
pub mod controller;
pub mod foreign;
pub mod kueue;
pub mod monitor;
pub mod nodes;
pub mod objects;
pub mod pods;
pub mod subject;
pub mod upgrade;
pub mod webhook;
pub mod windows;

use std::time::Duration;

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `within <deadline>` (see [`crate::bounds`]) when the step says so; without it an assertion
/// reads the state once.
pub fn patience(deadline: &str) -> anyhow::Result<crate::wait::Patience> {
    if deadline.is_empty() {
        return Ok(crate::wait::Patience::Now);
    }
    deadline_of(deadline).map(crate::wait::Patience::Within)
}

/// A deadline a step names (see [`crate::bounds`]).
pub fn deadline_of(text: &str) -> anyhow::Result<Duration> {
    crate::bounds::parse(text).map_err(anyhow::Error::msg)
}
