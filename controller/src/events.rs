//! Events written as core/v1 `Event`s, the way client-go's `record` recorder writes them (the
//! reference's ClusterRole grants the core `events` resource only). A repeat of an event (same
//! object, reason, action and message) is not written again: the first one's `count` and
//! `lastTimestamp` go up.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The controller emits only `Normal` events (spec §2.9).
const EVENT_TYPE: &str = "Normal";

/// client-go keeps this many events in its cache of repeats.
const REMEMBERED_EVENTS: usize = 4096;

/// What an event says about an object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventDetails {
    pub reason: String,
    pub action: String,
    pub message: String,
}

/// The object an event is about, identified as client-go identifies it for repeats.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventKey {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    details: EventDetails,
}

impl EventKey {
    fn new(about: &ObjectReference, details: &EventDetails) -> Self {
        EventKey {
            api_version: about.api_version.clone(),
            kind: about.kind.clone(),
            namespace: about.namespace.clone(),
            name: about.name.clone(),
            uid: about.uid.clone(),
            details: details.clone(),
        }
    }
}

/// An event already written.
#[derive(Clone, Debug)]
struct Written {
    name: String,
    first_timestamp: Timestamp,
    count: i32,
}

pub struct EventRecorder {
    client: Client,
    /// `source.component` and `reportingComponent` of the events.
    component: String,
    written: Mutex<HashMap<EventKey, Written>>,
}

impl EventRecorder {
    pub fn new(client: Client, component: &str) -> Self {
        EventRecorder {
            client,
            component: component.to_owned(),
            written: Mutex::new(HashMap::new()),
        }
    }

    /// Writes an event about `about`, or counts a repeat on the one already written.
    pub async fn record(
        &self,
        about: &ObjectReference,
        details: &EventDetails,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = EventKey::new(about, details);
        let api: Api<Event> = Api::namespaced(self.client.clone(), &event_namespace(about));
        match self.count_repeat(&key) {
            Some(repeat) => {
                let patch = repeat_patch(repeat.count, now, &details.message);
                match api
                    .patch(&repeat.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Err(kube::Error::Api(s)) if s.is_not_found() => {
                        let event = self.event(about, details, &repeat, now);
                        api.create(&PostParams::default(), &event).await.map(drop)
                    }
                    result => result.map(drop),
                }
            }
            None => {
                let first = Written {
                    name: event_name(about, now),
                    first_timestamp: now,
                    count: 1,
                };
                let event = self.event(about, details, &first, now);
                api.create(&PostParams::default(), &event).await?;
                self.remember(key, first);
                Ok(())
            }
        }
    }

    /// The event written before with this key, its count bumped for this repeat.
    fn count_repeat(&self, key: &EventKey) -> Option<Written> {
        let mut written = self.written.lock().ok()?;
        let repeat = written.get_mut(key)?;
        repeat.count = repeat.count.saturating_add(1);
        Some(repeat.clone())
    }

    fn remember(&self, key: EventKey, event: Written) {
        if let Ok(mut written) = self.written.lock() {
            if written.len() >= REMEMBERED_EVENTS {
                written.clear();
            }
            written.insert(key, event);
        }
    }

    fn event(
        &self,
        about: &ObjectReference,
        details: &EventDetails,
        written: &Written,
        now: Timestamp,
    ) -> Event {
        new_event(about, details, &self.component, written, now)
    }
}

/// The core/v1 Event client-go's recorder makes, plus the `action`.
fn new_event(
    about: &ObjectReference,
    details: &EventDetails,
    component: &str,
    written: &Written,
    now: Timestamp,
) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(written.name.clone()),
            namespace: Some(event_namespace(about)),
            ..ObjectMeta::default()
        },
        involved_object: about.clone(),
        reason: Some(details.reason.clone()),
        action: Some(details.action.clone()),
        message: Some(details.message.clone()),
        type_: Some(EVENT_TYPE.to_owned()),
        source: Some(EventSource {
            component: Some(component.to_owned()),
            host: None,
        }),
        reporting_component: Some(component.to_owned()),
        first_timestamp: Some(Time(written.first_timestamp)),
        last_timestamp: Some(Time(now)),
        count: Some(written.count),
        ..Event::default()
    }
}

/// What client-go's recorder patches on a repeat.
fn repeat_patch(count: i32, now: Timestamp, message: &str) -> Value {
    json!({
        "count": count,
        "lastTimestamp": Time(now),
        "message": message,
    })
}

/// `<object name>.<Unix time in nanoseconds, in hex>`.
fn event_name(about: &ObjectReference, now: Timestamp) -> String {
    let name = about.name.as_deref().unwrap_or_default();
    format!("{name}.{:x}", now.as_nanosecond())
}

/// The object's namespace; `default` for a cluster-scoped object.
fn event_namespace(about: &ObjectReference) -> String {
    about
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn appwrapper() -> ObjectReference {
        ObjectReference {
            api_version: Some("workload.codeflare.dev/v1beta2".into()),
            kind: Some("AppWrapper".into()),
            name: Some("aw".into()),
            namespace: Some("team".into()),
            uid: Some("u-1".into()),
            resource_version: Some("7".into()),
            ..ObjectReference::default()
        }
    }

    fn details(message: &str) -> EventDetails {
        EventDetails {
            reason: "FoundFailedPods".into(),
            action: "Unhealthy".into(),
            message: message.into(),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn an_event_is_written_as_client_go_writes_it() {
        let written = Written {
            name: event_name(&appwrapper(), at(1_700_000_000)),
            first_timestamp: at(1_700_000_000),
            count: 1,
        };
        let event = new_event(
            &appwrapper(),
            &details("1 failed pods"),
            "appwrappers",
            &written,
            at(1_700_000_000),
        );
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "aw.17979cfe362a0000", "namespace": "team"},
                "involvedObject": {
                    "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                    "name": "aw", "namespace": "team", "uid": "u-1", "resourceVersion": "7",
                },
                "reason": "FoundFailedPods",
                "action": "Unhealthy",
                "message": "1 failed pods",
                "type": "Normal",
                "source": {"component": "appwrappers"},
                "reportingComponent": "appwrappers",
                "firstTimestamp": "2023-11-14T22:13:20Z",
                "lastTimestamp": "2023-11-14T22:13:20Z",
                "count": 1,
            })
        );
    }

    #[test]
    fn a_repeat_bumps_the_count_and_the_last_timestamp() {
        assert_eq!(
            repeat_patch(3, at(1_700_000_060), "1 failed pods"),
            json!({"count": 3, "lastTimestamp": "2023-11-14T22:14:20Z", "message": "1 failed pods"})
        );
    }

    /// client-go's key leaves out the resourceVersion, which every status write changes.
    #[rstest]
    #[case::another_resource_version(|o: &mut ObjectReference, _: &mut EventDetails| o.resource_version = Some("8".into()), true)]
    #[case::another_object(|o: &mut ObjectReference, _: &mut EventDetails| o.name = Some("other".into()), false)]
    #[case::another_incarnation(|o: &mut ObjectReference, _: &mut EventDetails| o.uid = Some("u-2".into()), false)]
    #[case::another_message(|_: &mut ObjectReference, d: &mut EventDetails| d.message = "2 failed pods".into(), false)]
    #[case::another_reason(|_: &mut ObjectReference, d: &mut EventDetails| d.reason = "MissingComponent".into(), false)]
    #[case::another_action(|_: &mut ObjectReference, d: &mut EventDetails| d.action = "Suspending".into(), false)]
    fn repeats_are_the_same_event_about_the_same_object(
        #[case] change: fn(&mut ObjectReference, &mut EventDetails),
        #[case] repeat: bool,
    ) {
        let (mut about, mut changed) = (appwrapper(), details("1 failed pods"));
        change(&mut about, &mut changed);
        let first = EventKey::new(&appwrapper(), &details("1 failed pods"));
        assert_eq!(EventKey::new(&about, &changed) == first, repeat);
    }

    #[rstest]
    #[case::namespaced(Some("team"), "team")]
    #[case::cluster_scoped(None, "default")]
    #[case::empty(Some(""), "default")]
    fn events_go_in_the_object_namespace(#[case] namespace: Option<&str>, #[case] expected: &str) {
        let about = ObjectReference {
            namespace: namespace.map(Into::into),
            ..appwrapper()
        };
        assert_eq!(event_namespace(&about), expected);
    }
}
