//! When a change came, measured from the AppWrapper's own condition timestamps. A grace period
//! is bounded on both sides: a reset that came before the period was over fails as surely as
//! one that never came.
//!
//! - `S became Unhealthy between N and M seconds after it was created|was deployed` compares
//!   two timestamps (read once);
//! - `S reaches phase P between N and M seconds after it <moment>` and `S matches between N
//!   and M seconds after it <moment>:` (partial YAML) read the moment when the step begins,
//!   poll until the change and place it in the window; `<moment>` is `was deployed`, `became
//!   Unhealthy`, `began deleting` or `paused deletion`;
//! - `S's pods are gone between N and M seconds after it <moment>` likewise for the labelled
//!   pods.
//!
//! `lastTransitionTime`s have whole seconds. A controller honouring a period compares the
//! stored (truncated) time with its clock, so "not before N seconds" holds exactly; "not after
//! M seconds" is given one more second for the truncation, and the run's slack for a busy
//! stand ([`crate::latency`], measured when the run starts). A polled change is only known to
//! lie between the last read that did not see it and the first that did; where the monitor
//! reads the audit log, a change of the AppWrapper is also known to lie between the receipt of
//! the last write that left it otherwise and the completion of the write that made it so, so
//! that a step that began late still places it. A step fails only when that whole interval
//! is outside the window.

use super::outcome::Outcome;
use appwrapper_controller::api::Phase;
use chrono::{DateTime, Utc};
use cucumber::gherkin::Step;
use cucumber::then;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use std::time::Duration;

use super::assertions::{expected_yaml, state_view};
use super::pods::describe;
use crate::matcher;
use crate::parameters::{Subject, Whose};
use crate::wait::{Check, POLL};
use crate::world::AwWorld;
use crate::yaml;
use objects::phase_of;

/// The slack for whole-second timestamps, on the late side only.
const TRUNCATION: f64 = 1.0;

/// How late past its window a change may come: the truncation, and the stand's slack over the
/// last `span` seconds (the time since the window's moment), so that a machine that got busier
/// during the window is allowed for.
fn late_slack(span: f64) -> f64 {
    let span = std::time::Duration::from_secs_f64(span.max(0.0));
    TRUNCATION + crate::latency::slack_over(span).as_secs_f64()
}

/// The moment a window is measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, cucumber::Parameter)]
#[param(
    name = "moment",
    regex = "was created|was deployed|became Unhealthy|began deleting|paused deletion"
)]
pub enum Moment {
    /// The AppWrapper's `metadata.creationTimestamp`: admission follows it within Kueue's
    /// latency, so it bounds from below what comes at deployment.
    Created,
    /// The deployment time the admission and warmup grace periods and the success TTL are
    /// measured from (spec §2.3.2, §3.4).
    Deployed,
    /// When `Unhealthy` last became True: what the failure grace period and the retry pause are
    /// measured from, and the moment of an admission or warmup reset.
    BecameUnhealthy,
    /// When `DeletingResources` became True: what the forceful deletion grace period is
    /// measured from (spec §4.7).
    BeganDeleting,
    /// When `DeletingResources` became False with reason `DeletionPaused`: what the
    /// deletion-on-failure pause is measured from (spec §3.9).
    PausedDeletion,
}

impl std::str::FromStr for Moment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "was created" => Ok(Moment::Created),
            "was deployed" => Ok(Moment::Deployed),
            "became Unhealthy" => Ok(Moment::BecameUnhealthy),
            "began deleting" => Ok(Moment::BeganDeleting),
            "paused deletion" => Ok(Moment::PausedDeletion),
            other => Err(format!("unknown moment {other:?}")),
        }
    }
}

fn condition<'a>(aw: &'a Value, type_: &str) -> Option<&'a Value> {
    aw["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// A timestamp field, `None` when it is absent.
fn timestamp(field: &Value, what: &str) -> Result<Option<DateTime<Utc>>, String> {
    let Some(text) = field.as_str() else {
        return Ok(None);
    };
    DateTime::parse_from_rfc3339(text)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|e| format!("{what} is not a time: {text:?}: {e}"))
}

/// The lastTransitionTime of condition `type_` if its status is True.
fn became_true(aw: &Value, type_: &str) -> Result<Option<DateTime<Utc>>, String> {
    match condition(aw, type_).filter(|c| c["status"] == "True") {
        Some(found) => timestamp(&found["lastTransitionTime"], type_),
        None => Ok(None),
    }
}

/// The lastTransitionTime of `DeletingResources` if it is False with reason `DeletionPaused`.
fn paused(aw: &Value) -> Result<Option<DateTime<Utc>>, String> {
    match condition(aw, "DeletingResources")
        .filter(|c| c["status"] == "False" && c["reason"] == "DeletionPaused")
    {
        Some(found) => timestamp(&found["lastTransitionTime"], "DeletingResources"),
        None => Ok(None),
    }
}

impl Moment {
    /// When it happened, according to the AppWrapper's conditions.
    pub fn of(self, aw: &Value) -> Result<DateTime<Utc>, String> {
        let found = match self {
            Moment::Created => {
                timestamp(&aw["metadata"]["creationTimestamp"], "creationTimestamp")?
            }
            Moment::BecameUnhealthy => became_true(aw, "Unhealthy")?,
            Moment::BeganDeleting => became_true(aw, "DeletingResources")?,
            Moment::PausedDeletion => paused(aw)?,
            // ResourcesDeployed became True at deployment. Once a reset has removed the
            // resources it is False, but QuotaReserved became True in the same reconcile and
            // stays True through a reset (spec §2.3.2, §2.3.6): its time is that of the first
            // deployment since admission, which is the latest one until a second reset.
            Moment::Deployed => match became_true(aw, "ResourcesDeployed")? {
                Some(t) => Some(t),
                None if aw["status"]["resettingCount"].as_i64().unwrap_or(0) <= 1 => {
                    became_true(aw, "QuotaReserved")?
                }
                None => None,
            },
        };
        found.ok_or_else(|| {
            format!(
                "cannot tell when it {}:\n{}",
                self.describe(),
                state_view(aw)
            )
        })
    }

    fn describe(self) -> &'static str {
        match self {
            Moment::Created => "was created",
            Moment::Deployed => "was deployed",
            Moment::BecameUnhealthy => "became Unhealthy",
            Moment::BeganDeleting => "began deleting",
            Moment::PausedDeletion => "paused deletion",
        }
    }
}

/// Seconds `from` to `to`, with the milliseconds.
fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_milliseconds() as f64 / 1000.0
}

/// From `from` to `to` seconds after a moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub from: u64,
    pub to: u64,
}

/// Why a change was not placed inside its window.
#[derive(Clone, Debug, PartialEq)]
pub enum Misplaced {
    /// It certainly came before the window opened, `by` seconds after the moment.
    Early { by: f64, window: Window },
    /// It certainly came after the window and its slack closed.
    Late {
        after: f64,
        slack: f64,
        window: Window,
    },
    /// It was already so when the step began, after the window opened: the step cannot tell
    /// whether it came early, and says nothing of the controller.
    Undecided { by: f64, window: Window },
}

impl std::fmt::Display for Misplaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Misplaced::Early { by, window } => write!(
                f,
                "it came {by:.1}s after, before the window of {}s to {}s",
                window.from, window.to
            ),
            Misplaced::Late {
                after,
                slack,
                window,
            } => write!(
                f,
                "it came after {after:.1}s, past the window of {}s to {}s (and {slack:.0}s of \
                 slack)",
                window.from, window.to
            ),
            Misplaced::Undecided { by, window } => write!(
                f,
                "it was already so when the step began, {by:.1}s after: the step cannot tell \
                 whether it came before {}s; begin the step earlier",
                window.from
            ),
        }
    }
}

impl Window {
    /// Places a change known to have come after `after` (None: it was already there at the
    /// first read) and by `by`, both in seconds since the moment, allowing `slack` seconds on
    /// the late side. Fails only when the change certainly came outside the window, or when it
    /// cannot tell.
    pub fn place(&self, after: Option<f64>, by: f64, slack: f64) -> Result<(), Misplaced> {
        let window = *self;
        if by < self.from as f64 {
            return Err(Misplaced::Early { by, window });
        }
        match after {
            Some(after) if after > self.to as f64 + slack => Err(Misplaced::Late {
                after,
                slack,
                window,
            }),
            None if self.from > 0 => Err(Misplaced::Undecided { by, window }),
            _ => Ok(()),
        }
    }

    /// Whether a read this many seconds after the moment is past the window and its slack.
    fn is_over(&self, elapsed: f64, slack: f64) -> bool {
        elapsed > self.to as f64 + slack
    }
}

/// When `since` happened. A controller may be slow to start it (deleting, say, after the
/// phase already says Suspending), so it is waited for, but no longer than the window lasts.
/// Once read it is kept: when the condition has moved on by the time a later window of the
/// same scenario begins (the deletion complete), that window is measured from the same moment.
async fn moment(
    w: &AwWorld,
    name: &str,
    since: Moment,
    within: u64,
) -> anyhow::Result<DateTime<Utc>> {
    let key = (name.to_string(), since.describe().to_string());
    let kept = || w.moments.lock().ok().and_then(|m| m.get(&key).copied());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(within);
    loop {
        match since.of(&w.existing(name).await?) {
            Ok(at) => {
                if let Ok(mut moments) = w.moments.lock() {
                    moments.insert(key, at);
                }
                return Ok(at);
            }
            Err(_) if let Some(at) = kept() => return Ok(at),
            Err(why) if std::time::Instant::now() > deadline => {
                return Err(anyhow::anyhow!("{why}"));
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// Keeps every moment `name`'s conditions show now, for the windows of later steps. A step
/// that takes the controller down calls it: while a controller restarts (a pod in a cluster
/// takes a while), the condition a window is measured from may move on before the window's
/// step begins.
pub async fn remember_moments(w: &AwWorld, name: &str) -> anyhow::Result<()> {
    let aw = w.existing(name).await?;
    let moments = [
        Moment::Created,
        Moment::Deployed,
        Moment::BecameUnhealthy,
        Moment::BeganDeleting,
        Moment::PausedDeletion,
    ];
    if let Ok(mut kept) = w.moments.lock() {
        for moment in moments {
            if let Ok(at) = moment.of(&aw) {
                kept.insert((name.to_string(), moment.describe().to_string()), at);
            }
        }
    }
    Ok(())
}

/// What a window step names: its AppWrapper and its window.
fn window_of(
    w: &mut AwWorld,
    subject: &Subject,
    from: u64,
    to: u64,
) -> anyhow::Result<(String, Window)> {
    Ok((w.select(subject)?, Window { from, to }))
}

/// Looks until `look` finds what it expects, and places that change in `window` after `since`;
/// returns when it was seen, in seconds after `since`. `Check::NotYet` carries what was seen,
/// `Check::Never` ends the wait at once; a read error is tried again until the window is over.
///
/// `written` tells, where the audit log can, between which two moments the change was written
/// (the API server's clock); those bounds narrow the poll's, so that a step that began late, on
/// a busy machine, still places a change it found already made.
async fn arrives<L, T>(
    w: &AwWorld,
    name: &str,
    what: &str,
    since: Moment,
    window: Window,
    mut look: L,
    mut written: T,
) -> anyhow::Result<f64>
where
    L: AsyncFnMut() -> anyhow::Result<Check<()>>,
    T: AsyncFnMut() -> Option<(DateTime<Utc>, DateTime<Utc>)>,
{
    let origin = moment(w, name, since, window.to).await?;
    let context = |problem: String| {
        anyhow::anyhow!(
            "AppWrapper {name}: {what} between {}s and {}s after it {}: {problem}",
            window.from,
            window.to,
            since.describe()
        )
    };
    let mut last_miss: Option<f64> = None;
    loop {
        let started = seconds_between(origin, Utc::now());
        match look().await {
            Ok(Check::Done(())) => {
                let mut by = seconds_between(origin, Utc::now());
                if let Some((after, before)) = written().await {
                    let after = seconds_between(origin, after);
                    last_miss = Some(last_miss.map_or(after, |miss| miss.max(after)));
                    by = by.min(seconds_between(origin, before));
                }
                return match window.place(last_miss, by, late_slack(by)) {
                    Ok(()) => Ok(by),
                    Err(misplaced) => {
                        let failure = context(misplaced.to_string());
                        if let Misplaced::Undecided { .. } = misplaced {
                            w.undecided(format!("{failure:#}"));
                        }
                        Err(failure)
                    }
                };
            }
            Ok(Check::Never(why)) => return Err(context(why)),
            Ok(Check::NotYet(seen)) if window.is_over(started, late_slack(started)) => {
                return Err(context(format!("not so {started:.1}s after:\n{seen}")));
            }
            Ok(Check::NotYet(_)) => last_miss = Some(started),
            Err(e) if window.is_over(started, late_slack(started)) => {
                return Err(context(format!("the cluster could not be read: {e:#}")));
            }
            Err(_) => {}
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`arrives`] for a state of the AppWrapper itself: `judge` gives `Err(diff)` while not so.
async fn appwrapper_arrives<J>(
    w: &AwWorld,
    name: &str,
    what: &str,
    since: Moment,
    window: Window,
    judge: J,
) -> anyhow::Result<f64>
where
    J: Fn(&Value) -> Result<(), String>,
{
    let seen = std::cell::Cell::new(0u64);
    let look = async || {
        Ok(match w.appwrapper(name).await? {
            Some(aw) => match judge(&aw) {
                Ok(()) => {
                    seen.set(resource_version(&aw));
                    Check::Done(())
                }
                Err(diff) => Check::NotYet(diff),
            },
            None => Check::Never("the AppWrapper is gone".into()),
        })
    };
    let written = async || written_change(w, name, seen.get(), &judge).await;
    arrives(w, name, what, since, window, look, written).await
}

fn resource_version(aw: &Value) -> u64 {
    aw["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// How long the audit log may take to hand on the state a step has just read.
const LOG_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(3);

/// When the AppWrapper came to be as `judge` accepts, for the state of resourceVersion `seen`,
/// from the writes the monitor read in the audit log; `None` where the monitor watches, or
/// when the states it kept cannot tell.
async fn written_change<J>(
    w: &AwWorld,
    name: &str,
    seen: u64,
    judge: &J,
) -> Option<(DateTime<Utc>, DateTime<Utc>)>
where
    J: Fn(&Value) -> Result<(), String>,
{
    let deadline = std::time::Instant::now() + LOG_CATCH_UP;
    loop {
        let states = w.monitor().written_states(&w.ns, name)?;
        if states.iter().any(|(_, s)| resource_version(s) >= seen) {
            let upto: Vec<_> = states
                .into_iter()
                .filter(|(_, s)| resource_version(s) <= seen)
                .collect();
            return crate::monitor::written_states::change(&upto, |s| judge(s).is_ok());
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[then(expr = "{subject} reaches phase {word} between {int} and {int} seconds after it {moment}")]
async fn reaches_between(
    w: &mut AwWorld,
    subject: Subject,
    target: String,
    from: u64,
    to: u64,
    since: Moment,
) -> Outcome {
    let (name, window) = window_of(w, &subject, from, to)?;
    let target: Phase = target.parse().map_err(anyhow::Error::msg)?;
    let seen = appwrapper_arrives(w, &name, &format!("phase {target}"), since, window, |aw| {
        if phase_of(aw) == target.as_str() {
            Ok(())
        } else {
            Err(state_view(aw))
        }
    })
    .await?;
    w.note(format!(
        "{name} was seen {target} {seen:.1}s after it {}",
        since.describe()
    ));
    Ok(())
}

#[then(expr = "{subject} matches between {int} and {int} seconds after it {moment}:")]
async fn matches_between(
    w: &mut AwWorld,
    subject: Subject,
    from: u64,
    to: u64,
    since: Moment,
    step: &Step,
) -> Outcome {
    let (name, window) = window_of(w, &subject, from, to)?;
    let expected = expected_yaml(w, step)?;
    let seen = appwrapper_arrives(w, &name, "a match", since, window, |aw| {
        if matcher::matches(&expected, aw) {
            Ok(())
        } else {
            Err(format!(
                "{}\nobject seen:\n{}",
                matcher::explain(&expected, aw),
                yaml::render_object(aw)
            ))
        }
    })
    .await?;
    w.note(format!(
        "{name} was seen matching {seen:.1}s after it {}",
        since.describe()
    ));
    Ok(())
}

/// Holds the phase until `seconds` after the moment, however long the steps before took: a
/// restart scenario's controller comes back at the same point of its grace period whether
/// killing it took a moment (embedded) or seconds (a pod in a cluster), so that a window
/// that must tell a restarted timer from the original one still has room before it opens.
#[then(expr = "{subject} stays {word} until {int} seconds after it {moment}")]
async fn stays_until(
    w: &mut AwWorld,
    subject: Subject,
    target: String,
    seconds: u64,
    since: Moment,
) -> Outcome {
    let name = w.select(&subject)?;
    let origin = moment(w, &name, since, seconds).await?;
    let left = (seconds as f64 - seconds_between(origin, Utc::now())).max(0.0);
    let target =
        super::assertions::holds_phase(w, &name, &target, Duration::from_secs_f64(left)).await?;
    w.note(format!(
        "{name} stayed {target} until {seconds}s after it {} ({left:.1}s of it in this step)",
        since.describe()
    ));
    Ok(())
}

/// The labelled pods the step found when it began are all gone: what a deletion that waits out
/// a pause or a grace period delays, so their going is bounded below by it. Pods created
/// after the step began (a reset that deploys again at once) do not count.
#[then(expr = "{whose} pods are gone between {int} and {int} seconds after it {moment}")]
async fn pods_gone_between(
    w: &mut AwWorld,
    subject: Whose,
    from: u64,
    to: u64,
    since: Moment,
) -> Outcome {
    let (name, window) = window_of(w, &subject, from, to)?;
    let (client, ns, aw) = (&w.client, w.ns.as_str(), name.as_str());
    let mut watched: Option<Vec<String>> = None;
    let no_log = async || None;
    let seen = arrives(
        w,
        &name,
        "no pod left",
        since,
        window,
        async || {
            let pods = objects::pods_of(client, ns, aw).await?;
            let uids = watched.get_or_insert_with(|| pods.iter().filter_map(uid).collect());
            let left: Vec<Pod> = pods
                .into_iter()
                .filter(|p| uid(p).is_some_and(|u| uids.contains(&u)))
                .collect();
            Ok(if left.is_empty() {
                Check::Done(())
            } else {
                Check::NotYet(describe(&left))
            })
        },
        no_log,
    )
    .await?;
    w.note(format!(
        "the pods of {name} were gone {seen:.1}s after it {}",
        since.describe()
    ));
    Ok(())
}

fn uid(pod: &Pod) -> Option<String> {
    pod.metadata.uid.clone()
}

/// When `aw` passed `moment`, and where that was read: from its conditions, or, for its
/// deployment once a failure has taken its resources and so its conditions' record of it
/// away, from what the monitor saw of it before.
async fn origin_of(
    w: &AwWorld,
    aw: &Value,
    moment: Moment,
) -> Result<(DateTime<Utc>, &'static str), String> {
    match moment.of(aw) {
        Ok(at) => Ok((at, "its conditions")),
        Err(why) if moment == Moment::Deployed => {
            let name = aw["metadata"]["name"].as_str().unwrap_or_default();
            w.monitor()
                .settle(&w.ns, crate::monitor::audit_log::SETTLE)
                .await;
            let seen = w.monitor().last_deployed(&w.ns, name).ok_or(why)?;
            Ok((seen, "ResourcesDeployed as the monitor last saw it True"))
        }
        Err(why) => Err(why),
    }
}

/// How many seconds after `origin` `aw` became Unhealthy (whole-second timestamps).
fn unhealthy_after(aw: &Value, origin: DateTime<Utc>) -> Result<f64, String> {
    Ok(seconds_between(origin, Moment::BecameUnhealthy.of(aw)?))
}

#[then(expr = "{subject} became Unhealthy between {int} and {int} seconds after it {moment}")]
async fn unhealthy_between(
    w: &mut AwWorld,
    subject: Subject,
    from: u64,
    to: u64,
    since: Moment,
) -> Outcome {
    crate::require!(
        matches!(since, Moment::Created | Moment::Deployed),
        "`became Unhealthy` is measured from when it was created or was deployed, not {since:?}"
    );
    let (name, window) = window_of(w, &subject, from, to)?;
    let aw = w.existing(&name).await?;
    let (origin, read_from) = origin_of(w, &aw, since).await.map_err(anyhow::Error::msg)?;
    let elapsed = unhealthy_after(&aw, origin).map_err(anyhow::Error::msg)?;
    let slack = late_slack(seconds_between(origin, Utc::now()));
    window
        .place(Some(elapsed), elapsed, slack)
        .map_err(|problem| {
            anyhow::anyhow!(
                "AppWrapper {name} became Unhealthy {elapsed:.0}s after it {} (read from \
                 {read_from}): {problem}\n{}",
                since.describe(),
                state_view(&aw)
            )
        })?;
    w.note(format!(
        "{name} became Unhealthy {elapsed:.0}s after it {} (read from {read_from})",
        since.describe()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn aw(conditions: Value, resetting_count: i64) -> Value {
        json!({"metadata": {"name": "a"},
               "status": {"resettingCount": resetting_count, "conditions": conditions}})
    }

    fn at(status: &str, time: &str, type_: &str) -> Value {
        json!({"type": type_, "status": status, "lastTransitionTime": time})
    }

    #[test]
    fn a_change_inside_the_window_passes() {
        let window = Window { from: 5, to: 15 };
        assert_eq!(window.place(Some(4.8), 5.2, TRUNCATION), Ok(()));
        assert_eq!(window.place(Some(15.9), 16.1, TRUNCATION), Ok(()));
    }

    #[test]
    fn a_change_that_certainly_came_early_or_late_fails() {
        let window = Window { from: 5, to: 15 };
        let early = window.place(Some(3.0), 4.9, TRUNCATION).unwrap_err();
        assert!(matches!(early, Misplaced::Early { .. }), "{early}");
        assert!(early.to_string().contains("before the window"), "{early}");
        let late = window.place(Some(16.2), 16.4, TRUNCATION).unwrap_err();
        assert!(matches!(late, Misplaced::Late { .. }), "{late}");
        assert!(late.to_string().contains("past the window"), "{late}");
        assert_eq!(
            window.place(Some(16.2), 16.4, 3.0),
            Ok(()),
            "a busier stand"
        );
        assert!(!window.is_over(17.9, 3.0) && window.is_over(18.1, 3.0));
    }

    #[test]
    fn a_change_already_there_proves_no_lower_bound() {
        let window = Window { from: 5, to: 15 };
        let err = window.place(None, 7.0, TRUNCATION).unwrap_err();
        assert!(matches!(err, Misplaced::Undecided { .. }), "{err}");
        assert!(err.to_string().contains("cannot tell"), "{err}");
        assert!(matches!(
            window.place(None, 4.0, TRUNCATION),
            Err(Misplaced::Early { .. })
        ));
        assert_eq!(
            Window { from: 0, to: 5 }.place(None, 1.0, TRUNCATION),
            Ok(())
        );
    }

    #[test]
    fn deployment_is_read_from_resources_deployed_then_quota_reserved() {
        let deployed = aw(
            json!([
                at("True", "2025-01-01T00:00:00Z", "QuotaReserved"),
                at("True", "2025-01-01T00:00:01Z", "ResourcesDeployed"),
                at("True", "2025-01-01T00:00:09Z", "Unhealthy")
            ]),
            0,
        );
        assert_eq!(
            Moment::Deployed
                .of(&deployed)
                .and_then(|o| unhealthy_after(&deployed, o)),
            Ok(8.0)
        );
        let reset_once = aw(
            json!([
                at("True", "2025-01-01T00:00:00Z", "QuotaReserved"),
                at("False", "2025-01-01T00:00:10Z", "ResourcesDeployed"),
                at("True", "2025-01-01T00:00:09Z", "Unhealthy")
            ]),
            1,
        );
        assert_eq!(
            Moment::Deployed
                .of(&reset_once)
                .and_then(|o| unhealthy_after(&reset_once, o)),
            Ok(9.0)
        );
        let reset_twice = aw(
            json!([
                at("True", "2025-01-01T00:00:00Z", "QuotaReserved"),
                at("False", "2025-01-01T00:00:30Z", "ResourcesDeployed"),
                at("True", "2025-01-01T00:00:29Z", "Unhealthy")
            ]),
            2,
        );
        assert!(
            Moment::Deployed
                .of(&reset_twice)
                .and_then(|o| unhealthy_after(&reset_twice, o))
                .unwrap_err()
                .contains("cannot tell when it was deployed")
        );
    }

    #[test]
    fn a_deletion_pause_is_read_from_deleting_resources_paused() {
        let paused = json!({"type": "DeletingResources", "status": "False",
            "reason": "DeletionPaused", "lastTransitionTime": "2025-01-01T00:00:07Z"});
        let at = Moment::PausedDeletion.of(&aw(json!([paused]), 0)).unwrap();
        assert_eq!(at.to_rfc3339(), "2025-01-01T00:00:07+00:00");
        let complete = json!({"type": "DeletingResources", "status": "False",
            "reason": "DeletionComplete", "lastTransitionTime": "2025-01-01T00:00:07Z"});
        assert!(
            Moment::PausedDeletion
                .of(&aw(json!([complete]), 0))
                .is_err()
        );
    }

    #[test]
    fn an_unhealthy_condition_that_is_not_true_has_no_moment() {
        let healthy = aw(json!([at("False", "2025-01-01T00:00:05Z", "Unhealthy")]), 0);
        assert!(Moment::BecameUnhealthy.of(&healthy).is_err());
        assert_eq!("became Unhealthy".parse(), Ok(Moment::BecameUnhealthy));
        assert_eq!("began deleting".parse(), Ok(Moment::BeganDeleting));
        assert_eq!("paused deletion".parse(), Ok(Moment::PausedDeletion));
    }
}
