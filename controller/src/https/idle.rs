//! When an HTTP/2 connection has had no request in flight for a while. hyper closes an idle
//! HTTP/1 connection itself (its header read timeout) but has no such limit for HTTP/2, where
//! a client may even leave out the connection preface and hold the connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;

pub struct Idle {
    in_flight: AtomicUsize,
    /// When the last request ended (or the connection began).
    since: Mutex<Instant>,
}

impl Idle {
    pub fn new() -> Arc<Self> {
        Arc::new(Idle {
            in_flight: AtomicUsize::new(0),
            since: Mutex::new(Instant::now()),
        })
    }

    /// `app`, counting its requests in flight here.
    pub fn track(self: &Arc<Self>, app: Router) -> Router {
        app.layer(middleware::from_fn_with_state(Arc::clone(self), busy))
    }

    /// Returns once no request has been in flight for `limit`.
    pub async fn for_longer_than(&self, limit: Duration) {
        loop {
            let since = *self.since.lock().unwrap_or_else(|e| e.into_inner());
            let wake = if self.in_flight.load(Ordering::Acquire) > 0 {
                Instant::now() + limit
            } else if since.elapsed() >= limit {
                return;
            } else {
                since + limit
            };
            tokio::time::sleep_until(wake.into()).await;
        }
    }
}

/// Ends the request's count even when its future is dropped.
struct Busy(Arc<Idle>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn busy(State(idle): State<Arc<Idle>>, request: Request, next: Next) -> Response {
    idle.in_flight.fetch_add(1, Ordering::AcqRel);
    let _busy = Busy(idle);
    next.run(request).await
}
