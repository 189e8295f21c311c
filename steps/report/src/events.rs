//! The Events of a scenario's namespace, read once when it ends: for the artifacts of a failed
//! scenario and for the timelines of every scenario page.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};

/// Events kept per scenario (the latest).
pub const MAX_EVENTS: usize = 500;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventRecord {
    /// The involved object.
    pub kind: String,
    pub name: String,
    pub type_: String,
    pub reason: String,
    pub message: String,
    /// The reporting controller, or the source component of an older-style event.
    pub source: String,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
    pub count: i32,
}

impl EventRecord {
    pub fn from_event(e: &Event) -> EventRecord {
        let created = e
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| chrono_of(t.0));
        let event_time = e.event_time.as_ref().and_then(|t| chrono_of(t.0));
        let first = e
            .first_timestamp
            .as_ref()
            .and_then(|t| chrono_of(t.0))
            .or(event_time)
            .or(created);
        let series_last = e
            .series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .and_then(|t| chrono_of(t.0));
        let last = e
            .last_timestamp
            .as_ref()
            .and_then(|t| chrono_of(t.0))
            .or(series_last)
            .or(first);
        EventRecord {
            kind: e.involved_object.kind.clone().unwrap_or_default(),
            name: e.involved_object.name.clone().unwrap_or_default(),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            source: e
                .reporting_component
                .clone()
                .filter(|c| !c.is_empty())
                .or_else(|| e.source.as_ref().and_then(|s| s.component.clone()))
                .unwrap_or_default(),
            first,
            last,
            count: e
                .count
                .or_else(|| e.series.as_ref().and_then(|s| s.count))
                .unwrap_or(1),
        }
    }

    pub fn is_about(&self, kind: &str, name: &str) -> bool {
        self.kind == kind && self.name == name
    }

    /// One line: time, type, reason, object, message, and how often when repeated.
    pub fn line(&self) -> String {
        let time = self.first.map(|t| t.to_rfc3339()).unwrap_or_default();
        let repeated = if self.count > 1 {
            format!(
                " (×{}, last {})",
                self.count,
                self.last.map(|t| t.to_rfc3339()).unwrap_or_default()
            )
        } else {
            String::new()
        };
        format!(
            "{time} {} {} {}/{}: {}{repeated}",
            self.type_, self.reason, self.kind, self.name, self.message
        )
    }
}

fn chrono_of(t: Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().unsigned_abs())
}

/// Oldest first, the latest [`MAX_EVENTS`] of them.
pub fn ordered(mut events: Vec<EventRecord>) -> Vec<EventRecord> {
    events.sort_by(|a, b| (a.first, &a.reason).cmp(&(b.first, &b.reason)));
    let excess = events.len().saturating_sub(MAX_EVENTS);
    events.drain(..excess);
    events
}

/// The Events of `namespace`, oldest first.
pub async fn list(client: &kube::Client, namespace: &str) -> kube::Result<Vec<EventRecord>> {
    let list = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    Ok(ordered(
        list.items.iter().map(EventRecord::from_event).collect(),
    ))
}

/// The Events of `namespace`, one a line, oldest first.
pub async fn text(client: &kube::Client, namespace: &str) -> String {
    match list(client, namespace).await {
        Ok(events) => lines(&events),
        Err(_) => "(events could not be listed)\n".into(),
    }
}

pub fn lines(events: &[EventRecord]) -> String {
    events.iter().map(|e| e.line() + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn core_and_series_events_read_alike() {
        let core: Event = serde_json::from_value(json!({
            "metadata": {"name": "e1", "creationTimestamp": "2026-01-01T00:00:09Z"},
            "involvedObject": {"kind": "AppWrapper", "name": "job"},
            "type": "Normal", "reason": "Suspended", "message": "quota released",
            "source": {"component": "appwrapper-controller"},
            "firstTimestamp": "2026-01-01T00:00:01Z", "lastTimestamp": "2026-01-01T00:00:05Z",
            "count": 3
        }))
        .unwrap();
        let new: Event = serde_json::from_value(json!({
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "type": "Normal", "reason": "Scheduled", "message": "",
            "eventTime": "2026-01-01T00:00:00.250000Z", "reportingComponent": "default-scheduler"
        }))
        .unwrap();
        let records = ordered(vec![
            EventRecord::from_event(&core),
            EventRecord::from_event(&new),
        ]);
        let got: Vec<(&str, &str, i32, bool)> = records
            .iter()
            .map(|e| {
                (
                    e.reason.as_str(),
                    e.source.as_str(),
                    e.count,
                    e.first == e.last,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Scheduled", "default-scheduler", 1, true),
                ("Suspended", "appwrapper-controller", 3, false),
            ]
        );
        assert!(records[1].is_about("AppWrapper", "job"));
        assert!(
            records[1]
                .line()
                .contains("(×3, last 2026-01-01T00:00:05+00:00)")
        );
    }

    #[test]
    fn only_the_latest_events_are_kept() {
        let events: Vec<EventRecord> = (0..MAX_EVENTS + 3)
            .map(|i| EventRecord {
                first: DateTime::from_timestamp(i as i64, 0),
                ..EventRecord::default()
            })
            .collect();
        let kept = ordered(events);
        assert_eq!(kept.len(), MAX_EVENTS);
        assert_eq!(kept[0].first, DateTime::from_timestamp(3, 0));
    }
}
