//! A write whose admission webhook never answered is tried again.
//!
//! When the connection to a webhook breaks before its answer (the webhook's server closed an
//! idle keep-alive connection the API server was reusing, or a pod network hiccup), the API
//! server reports `Internal error occurred: failed calling webhook "…": … EOF` and the write
//! is not made. Nothing was decided, so trying again is what a user would do; Knative's e2e
//! helpers do the same. A webhook that answers, even with a refusal, is never retried, and
//! neither is one that is down (connection refused), which a scenario may mean to show.
//!
//! A call to an AppWrapper webhook (`mappwrapper.kb.io`, `vappwrapper.kb.io`) is never tried
//! again: the controller under test may serve it, and a webhook server of its that drops
//! connections is a defect the suite must see. Every retry is kept, by namespace, so that the
//! scenario that met it shows it.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// How often a write is made in all before its error is returned.
pub const ATTEMPTS: u32 = 3;
const PAUSE: Duration = Duration::from_millis(300);

/// The webhooks of the controller under test, never retried.
const APPWRAPPER_WEBHOOKS: &[&str] = &["mappwrapper.kb.io", "vappwrapper.kb.io"];

/// Retries made, as (namespace, error); the namespace is empty for cluster-scoped writes.
static RETRIED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Whether the API server says a webhook call broke off before the webhook answered.
pub fn webhook_never_answered(e: &kube::Error) -> bool {
    let kube::Error::Api(status) = e else {
        return false;
    };
    let message = status.message.trim_end();
    status.code == 500
        && message.contains("failed calling webhook")
        && (message.ends_with("EOF") || message.contains("connection reset by peer"))
}

/// Whether the write may be made again: a broken-off call to a webhook other than the
/// AppWrapper ones.
pub fn retryable(e: &kube::Error) -> bool {
    let kube::Error::Api(status) = e else {
        return false;
    };
    webhook_never_answered(e)
        && !APPWRAPPER_WEBHOOKS
            .iter()
            .any(|name| status.message.contains(&format!("webhook \"{name}\"")))
}

/// Runs `write` until it succeeds, fails otherwise, or has met [`ATTEMPTS`] broken-off
/// webhook calls; each retry is kept under `namespace` (see [`retries_in`]).
pub async fn write<T, F, Fut>(namespace: &str, mut write: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match write().await {
            Err(e) if attempt < ATTEMPTS && retryable(&e) => {
                tracing::info!("a webhook call broke off, trying again: {e}");
                if let Ok(mut retried) = RETRIED.lock() {
                    retried.push((namespace.to_string(), e.to_string()));
                }
                attempt += 1;
                tokio::time::sleep(PAUSE).await;
            }
            result => return result,
        }
    }
}

/// Takes the retries made in `namespace` (the errors that caused them).
pub fn retries_in(namespace: &str) -> Vec<String> {
    let Ok(mut retried) = RETRIED.lock() else {
        return Vec::new();
    };
    let (mine, others): (Vec<_>, Vec<_>) = retried.drain(..).partition(|(ns, _)| ns == namespace);
    *retried = others;
    mine.into_iter().map(|(_, error)| error).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn api_error(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            Status::failure(message, "InternalError")
                .with_code(code)
                .boxed(),
        )
    }

    const BROKEN: &str = "Internal error occurred: failed calling webhook \"vclusterqueue.kb.io\": \
        failed to call webhook: Post \"https://kueue-webhook-service.kueue-system.svc:443/validate\
        ?timeout=10s\": EOF";

    #[rstest::rstest]
    #[case::eof(500, BROKEN, true)]
    #[case::reset(
        500,
        "failed calling webhook \"x\": read tcp: connection reset by peer",
        true
    )]
    #[case::down(
        500,
        "failed calling webhook \"x\": dial tcp: connection refused",
        false
    )]
    #[case::refusal(403, "admission webhook \"x\" denied the request: EOF", false)]
    #[case::other_500(500, "etcdserver: request timed out", false)]
    fn only_a_call_that_broke_off_is_retried(
        #[case] code: u16,
        #[case] message: &str,
        #[case] retried: bool,
    ) {
        assert_eq!(webhook_never_answered(&api_error(code, message)), retried);
    }

    #[rstest::rstest]
    #[case::kueue_queue(BROKEN, true)]
    #[case::appwrapper_mutating(
        "failed calling webhook \"mappwrapper.kb.io\": failed to call webhook: Post \"https://127.0.0.1:9443/mutate\": EOF",
        false
    )]
    #[case::appwrapper_validating(
        "failed calling webhook \"vappwrapper.kb.io\": read tcp: connection reset by peer",
        false
    )]
    fn a_call_to_an_appwrapper_webhook_is_never_retried(
        #[case] message: &str,
        #[case] retried: bool,
    ) {
        assert_eq!(retryable(&api_error(500, message)), retried);
    }

    #[tokio::test]
    async fn a_broken_off_call_is_made_again_until_it_succeeds_and_the_retry_is_kept() {
        let calls = AtomicU32::new(0);
        let result = write("retry-kept", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(api_error(500, BROKEN)),
                n => Ok(n),
            }
        })
        .await;
        assert_eq!(result.ok(), Some(1));
        let kept = retries_in("retry-kept");
        assert_eq!(kept.len(), 1);
        assert!(kept[0].contains("vclusterqueue.kb.io"), "{kept:?}");
        assert!(retries_in("retry-kept").is_empty());
    }

    #[tokio::test]
    async fn a_broken_off_call_to_an_appwrapper_webhook_is_returned_at_once() {
        let calls = AtomicU32::new(0);
        let broken = "failed calling webhook \"vappwrapper.kb.io\": Post \"https://x\": EOF";
        let result: Result<(), _> = write("appwrapper-webhook", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(api_error(500, broken))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(retries_in("appwrapper-webhook").is_empty());
    }

    #[tokio::test]
    async fn the_last_error_is_returned_after_all_attempts() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = write("", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(api_error(500, BROKEN))
        })
        .await;
        assert!(result.is_err_and(|e| webhook_never_answered(&e)));
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);
    }

    #[tokio::test]
    async fn a_refusal_is_returned_at_once() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = write("", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(api_error(422, "admission webhook denied the request"))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
