//! API requests by client, counted from the API server's audit log (one JSON line per
//! request, see `clusters::providers::local::audit`). Pure over the log's lines.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// The product of a user agent: `kueue` of `kueue/v0.19.2 (linux/amd64) kubernetes/abc`.
/// Kubernetes' own controllers keep their identity after the last `/`, so that the job
/// controller is told from the scheduler's informers.
pub fn client_of(user_agent: &str) -> String {
    if user_agent.is_empty() {
        return NO_USER_AGENT.to_string();
    }
    let product = user_agent.split('/').next().unwrap_or(user_agent).trim();
    match user_agent.rsplit_once("system:serviceaccount:kube-system:") {
        Some((_, account)) => format!("{product}/{account}"),
        None => product.to_string(),
    }
}

/// Requests without a User-Agent (kube-rs sends none unless told: the embedded controller).
pub const NO_USER_AGENT: &str = "(no user agent)";

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Requests {
    pub total: u64,
    /// By [`client_of`], most first.
    pub by_client: Vec<(String, u64)>,
    /// By verb (`list`, `watch`, `patch`, ...), per client.
    pub verbs: BTreeMap<String, BTreeMap<String, u64>>,
    /// By verb and resource (`get appwrappers`, `patch appwrappers/status`), per client.
    pub resources: BTreeMap<String, BTreeMap<String, u64>>,
    /// Lines that were not audit events (a line cut short at the end of the log).
    pub unreadable: u64,
}

impl Requests {
    pub fn of(&self, client: &str) -> u64 {
        self.by_client
            .iter()
            .find(|(c, _)| c == client)
            .map_or(0, |(_, n)| *n)
    }
}

/// `pods`, `appwrappers/status`; `?` for a request about no resource.
pub(crate) fn resource_of(object: &Value) -> String {
    let resource = object["resource"].as_str().unwrap_or("?");
    match object["subresource"].as_str() {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_string(),
    }
}

/// An audit event's RFC 3339 time.
pub(crate) fn timestamp(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Counts the requests received between `from` and `to`.
pub fn count<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Requests {
    let mut requests = Requests::default();
    let mut clients: BTreeMap<String, u64> = BTreeMap::new();
    for line in lines.into_iter().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            requests.unreadable += 1;
            continue;
        };
        if event["stage"] != "RequestReceived" {
            continue;
        }
        let received = timestamp(&event["requestReceivedTimestamp"]);
        if !received.is_some_and(|t| from <= t && t <= to) {
            continue;
        }
        let client = client_of(event["userAgent"].as_str().unwrap_or_default());
        let verb = event["verb"].as_str().unwrap_or("?").to_string();
        *requests
            .resources
            .entry(client.clone())
            .or_default()
            .entry(format!("{verb} {}", resource_of(&event["objectRef"])))
            .or_default() += 1;
        requests.total += 1;
        *clients.entry(client.clone()).or_default() += 1;
        *requests
            .verbs
            .entry(client)
            .or_default()
            .entry(verb)
            .or_default() += 1;
    }
    requests.by_client = clients.into_iter().collect();
    requests
        .by_client
        .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    requests
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("kueue/v0.19.2 (linux/amd64) kubernetes/abc", "kueue")]
    #[case("appwrapper-controller/0.1.0", "appwrapper-controller")]
    #[case(
        "appwrapper-operator/v0.0.0 (linux/amd64) kubernetes/$Format",
        "appwrapper-operator"
    )]
    #[case(
        "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/x/system:serviceaccount:kube-system:job-controller",
        "kube-controller-manager/job-controller"
    )]
    #[case("awconf-bench", "awconf-bench")]
    #[case("", NO_USER_AGENT)]
    fn clients_from_user_agents(#[case] agent: &str, #[case] client: &str) {
        assert_eq!(client_of(agent), client);
    }

    fn event(stage: &str, at: &str, agent: &str, verb: &str) -> String {
        serde_json::json!({
            "kind": "Event", "stage": stage, "requestReceivedTimestamp": at,
            "userAgent": agent, "verb": verb,
            "objectRef": {"resource": "appwrappers", "subresource": "status"},
        })
        .to_string()
    }

    #[test]
    fn requests_in_the_window_are_counted_once_by_client() {
        let lines = [
            event(
                "RequestReceived",
                "2026-01-01T00:00:01.000001Z",
                "kueue/v1",
                "list",
            ),
            event(
                "RequestReceived",
                "2026-01-01T00:00:02Z",
                "kueue/v1",
                "patch",
            ),
            event(
                "RequestReceived",
                "2026-01-01T00:00:02Z",
                "awconf-bench",
                "create",
            ),
            event(
                "ResponseComplete",
                "2026-01-01T00:00:02Z",
                "kueue/v1",
                "patch",
            ),
            event(
                "RequestReceived",
                "2026-01-01T00:00:09Z",
                "kueue/v1",
                "patch",
            ),
            event(
                "RequestReceived",
                "2025-12-31T23:59:59Z",
                "awconf-bench",
                "create",
            ),
            "{\"kind\": \"Ev".to_string(),
            String::new(),
        ];
        let from = "2026-01-01T00:00:00Z".parse().unwrap();
        let to = "2026-01-01T00:00:05Z".parse().unwrap();
        let counted = count(lines.iter().map(String::as_str), from, to);
        assert_eq!(counted.total, 3);
        assert_eq!(
            counted.by_client,
            vec![("kueue".to_string(), 2), ("awconf-bench".to_string(), 1)]
        );
        assert_eq!(counted.verbs["kueue"]["patch"], 1);
        assert_eq!(counted.resources["kueue"]["patch appwrappers/status"], 1);
        assert_eq!(counted.of("kueue"), 2);
        assert_eq!(counted.of("nobody"), 0);
        assert_eq!(counted.unreadable, 1);
    }
}
