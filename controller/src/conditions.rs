//! apimachinery `SetStatusCondition` and the reference's `clearCondition` (spec §0.1).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondStatus {
    True,
    False,
    Unknown,
}

impl CondStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CondStatus::True => "True",
            CondStatus::False => "False",
            CondStatus::Unknown => "Unknown",
        }
    }
}

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    has_status(conditions, type_, CondStatus::True)
}

pub fn has_status(conditions: &[Condition], type_: &str, status: CondStatus) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == status.as_str())
}

/// The condition's lastTransitionTime, if present.
pub fn transition_time(conditions: &[Condition], type_: &str) -> Option<Timestamp> {
    find(conditions, type_).map(|c| c.last_transition_time.0)
}

/// Adds or updates a condition; its lastTransitionTime moves to `now` only when it is new or its
/// status changes. Reason and message are always overwritten.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: CondStatus,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        None => conditions.push(Condition {
            type_: type_.to_owned(),
            status: status.as_str().to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: Time(now),
            observed_generation: None,
        }),
        Some(existing) => {
            if existing.status != status.as_str() {
                existing.status = status.as_str().to_owned();
                existing.last_transition_time = Time(now);
            }
            existing.reason = reason.to_owned();
            existing.message = message.to_owned();
            existing.observed_generation = None;
        }
    }
}

/// Sets the condition `False` only if it is currently `True`.
pub fn clear(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    if is_true(conditions, type_) {
        set(conditions, type_, CondStatus::False, reason, message, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    #[test]
    fn new_condition_gets_now() {
        let mut c = Vec::new();
        set(&mut c, "A", CondStatus::True, "R", "m", t(0));
        assert_eq!(c.len(), 1);
        assert_eq!(
            (&*c[0].status, &*c[0].reason, &*c[0].message),
            ("True", "R", "m")
        );
        assert_eq!(c[0].last_transition_time.0, t(0));
        assert_eq!(c[0].observed_generation, None);
    }

    #[test]
    fn same_status_keeps_ltt_but_overwrites_reason_and_message() {
        let mut c = Vec::new();
        set(&mut c, "A", CondStatus::True, "R1", "m1", t(0));
        set(&mut c, "A", CondStatus::True, "R2", "m2", t(10));
        assert_eq!(c[0].last_transition_time.0, t(0));
        assert_eq!((&*c[0].reason, &*c[0].message), ("R2", "m2"));
    }

    #[test]
    fn status_flip_moves_ltt() {
        let mut c = Vec::new();
        set(&mut c, "A", CondStatus::True, "R", "", t(0));
        set(&mut c, "A", CondStatus::Unknown, "R", "", t(5));
        assert_eq!(c[0].last_transition_time.0, t(5));
        assert_eq!(c[0].status, "Unknown");
    }

    #[test]
    fn other_types_are_untouched() {
        let mut c = Vec::new();
        set(&mut c, "A", CondStatus::True, "R", "", t(0));
        set(&mut c, "B", CondStatus::False, "S", "", t(1));
        assert_eq!(c.len(), 2);
        assert_eq!(transition_time(&c, "A"), Some(t(0)));
        assert_eq!(transition_time(&c, "B"), Some(t(1)));
    }

    #[test]
    fn clear_only_acts_on_true() {
        let mut c = Vec::new();
        clear(&mut c, "A", "R", "", t(0));
        assert!(c.is_empty(), "absent stays absent");

        set(&mut c, "A", CondStatus::False, "Old", "", t(0));
        clear(&mut c, "A", "New", "", t(5));
        assert_eq!(c[0].reason, "Old");

        set(&mut c, "A", CondStatus::Unknown, "Old", "", t(6));
        clear(&mut c, "A", "New", "", t(7));
        assert_eq!(c[0].status, "Unknown");

        set(&mut c, "A", CondStatus::True, "T", "", t(8));
        clear(&mut c, "A", "New", "msg", t(9));
        assert_eq!((&*c[0].status, &*c[0].reason), ("False", "New"));
        assert_eq!(c[0].message, "msg");
        assert_eq!(c[0].last_transition_time.0, t(9));
    }
}
