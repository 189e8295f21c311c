//! Writes only while the Lease is surely this replica's. A leader that was paused (SIGSTOP, a
//! frozen VM, a long stall) past its renew deadline finds, when it runs again, that its last
//! successful renewal began too long ago, and refuses to write before its election loop has
//! even noticed that the Lease is lost. A standby takes the Lease only once it has seen the
//! record unchanged for the whole lease duration, which is longer than the renew deadline, so
//! the two never write at once.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;

#[derive(Debug)]
pub struct Fence {
    /// How long after a renewal attempt began a write may still go out: the renew deadline.
    window: Duration,
    /// When the latest successful acquisition or renewal began; `None` while not leading.
    since: Mutex<Option<Instant>>,
}

/// A write refused by a closed [`Fence`].
#[derive(Debug, thiserror::Error)]
#[error(
    "refused {method} {path}: this replica is not surely leading (its last successful renewal \
     of the Lease began {ago}, the renew deadline is {window:?})"
)]
pub struct NotLeading {
    pub method: Method,
    pub path: String,
    pub ago: String,
    pub window: Duration,
}

impl Fence {
    pub fn new(window: Duration) -> Self {
        Fence {
            window,
            since: Mutex::new(None),
        }
    }

    /// An acquisition or renewal that began at `attempt` succeeded.
    pub fn renewed(&self, attempt: Instant) {
        let mut since = self.lock();
        if since.is_none_or(|s| attempt > s) {
            *since = Some(attempt);
        }
    }

    /// Leading ended (lost or released).
    pub fn close(&self) {
        *self.lock() = None;
    }

    pub fn is_open(&self) -> bool {
        self.open_at(Instant::now())
    }

    /// How long the fence stays open without another renewal.
    pub fn remaining(&self) -> Duration {
        self.remaining_at(Instant::now())
    }

    fn open_at(&self, now: Instant) -> bool {
        !self.remaining_at(now).is_zero()
    }

    fn remaining_at(&self, now: Instant) -> Duration {
        self.lock().map_or(Duration::ZERO, |since| {
            self.window
                .saturating_sub(now.saturating_duration_since(since))
        })
    }

    fn refusal(&self, method: &Method, path: &str) -> NotLeading {
        let ago = match *self.lock() {
            Some(since) => format!("{:?} ago", since.elapsed()),
            None => "never, or leading ended".into(),
        };
        NotLeading {
            method: method.clone(),
            path: path.to_owned(),
            ago,
            window: self.window,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.since.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads and watches change nothing; everything else is a write.
fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// `client`, whose writes go out only while `fence` is open; reads and watches always do.
pub fn fenced_client(client: Client, fence: Arc<Fence>) -> Client {
    let namespace = client.default_namespace().to_owned();
    Client::new(Fenced { client, fence }, namespace)
}

#[derive(Clone)]
struct Fenced {
    client: Client,
    fence: Arc<Fence>,
}

impl tower_service::Service<Request<Body>> for Fenced {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        if is_write(request.method()) {
            let remaining = self.fence.remaining();
            if remaining.is_zero() {
                let refusal = self.fence.refusal(request.method(), request.uri().path());
                tracing::warn!("{refusal}");
                return Box::pin(async move { Err(kube::Error::Service(Box::new(refusal))) });
            }
            // A write held up in the API server (etcd down) must not commit once the fence
            // has closed and a standby may lead: the API server gives up on it by then.
            *request.uri_mut() = with_deadline(request.uri(), remaining);
        }
        let client = self.client.clone();
        Box::pin(async move { client.send(request).await })
    }
}

/// `uri` with its `timeout` query parameter (the API server's deadline for the request, a Go
/// duration) set to `remaining`, in milliseconds.
fn with_deadline(uri: &http::Uri, remaining: Duration) -> http::Uri {
    let millis = remaining.as_millis().max(1);
    let path = uri.path();
    let mut pairs: Vec<String> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("timeout="))
        .map(str::to_owned)
        .collect();
    pairs.push(format!("timeout={millis}ms"));
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = format!("{path}?{}", pairs.join("&")).parse().ok();
    http::Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_is_open_for_the_renew_deadline_after_a_renewal_began() {
        let fence = Fence::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(!fence.open_at(t0), "open before any renewal");
        fence.renewed(t0);
        for (after, open) in [(0, true), (9_999, true), (10_000, false), (60_000, false)] {
            assert_eq!(
                fence.open_at(t0 + Duration::from_millis(after)),
                open,
                "{after} ms after the renewal began"
            );
        }
    }

    #[test]
    fn what_remains_counts_down_from_the_renewal_to_zero() {
        let fence = Fence::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(fence.remaining_at(t0), Duration::ZERO);
        fence.renewed(t0);
        assert_eq!(
            fence.remaining_at(t0 + Duration::from_secs(4)),
            Duration::from_secs(6)
        );
        assert_eq!(
            fence.remaining_at(t0 + Duration::from_secs(11)),
            Duration::ZERO
        );
    }

    #[test]
    fn a_late_answer_to_an_older_attempt_does_not_reopen_the_fence() {
        let fence = Fence::new(Duration::from_secs(10));
        let t0 = Instant::now();
        fence.renewed(t0 + Duration::from_secs(5));
        fence.renewed(t0);
        assert!(fence.open_at(t0 + Duration::from_secs(14)));
        assert!(!fence.open_at(t0 + Duration::from_secs(15)));
    }

    #[test]
    fn closing_shuts_it_until_the_next_renewal() {
        let fence = Fence::new(Duration::from_secs(10));
        let t0 = Instant::now();
        fence.renewed(t0);
        fence.close();
        assert!(!fence.open_at(t0));
        fence.renewed(t0 + Duration::from_secs(1));
        assert!(fence.open_at(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn a_write_carries_what_remains_of_the_fence_as_its_deadline() {
        for (uri, remaining_ms, expected) in [
            (
                "/api/v1/namespaces/n/pods",
                6_500,
                "/api/v1/namespaces/n/pods?timeout=6500ms",
            ),
            (
                "/apis/g/v1/x/y?fieldManager=m",
                200,
                "/apis/g/v1/x/y?fieldManager=m&timeout=200ms",
            ),
            ("/a?timeout=30s&b=c", 4_000, "/a?b=c&timeout=4000ms"),
        ] {
            let uri: http::Uri = uri.parse().unwrap();
            let with = with_deadline(&uri, Duration::from_millis(remaining_ms));
            assert_eq!(with.to_string(), expected);
        }
    }

    #[test]
    fn only_reads_and_watches_pass_a_closed_fence() {
        for (method, write) in [
            (Method::GET, false),
            (Method::HEAD, false),
            (Method::OPTIONS, false),
            (Method::POST, true),
            (Method::PUT, true),
            (Method::PATCH, true),
            (Method::DELETE, true),
        ] {
            assert_eq!(is_write(&method), write, "{method}");
        }
    }

    #[tokio::test]
    async fn a_write_through_a_closed_fence_is_refused_before_it_is_sent() {
        // Nothing listens here: a request that went out would fail to connect instead.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let fence = Arc::new(Fence::new(Duration::from_secs(10)));
        let fenced = fenced_client(client, Arc::clone(&fence));
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(fenced, "default");
        let err = api
            .create(&Default::default(), &Default::default())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("refused POST /api/v1/namespaces/default/configmaps"),
            "{text}"
        );
        assert!(text.contains("not surely leading"), "{text}");
        let read = api.get("x").await.unwrap_err().to_string();
        assert!(!read.contains("not surely leading"), "{read}");
        fence.renewed(Instant::now());
        let write = api
            .create(&Default::default(), &Default::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(!write.contains("not surely leading"), "{write}");
    }
}
