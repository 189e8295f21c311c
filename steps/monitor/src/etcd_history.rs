//! The states of an AppWrapper that an API server stored but died before logging, read back
//! from etcd's history. A custom resource is stored as JSON under its key, and its
//! resourceVersion is the etcd revision of the write that left it, so the state just before
//! the write at revision `r` is the key's value at revision `r - 1`: walking back from a logged
//! state to the last one handed on finds every state written in between, until the API
//! server compacts that history (every five minutes by default).

use std::future::Future;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {key} at revision {revision} from etcd: {source}")]
    Read {
        key: String,
        revision: u64,
        source: reqwest::Error,
    },
    #[error("etcd answered {key} at revision {revision} with {answer}")]
    Answer {
        key: String,
        revision: u64,
        answer: String,
    },
}

/// A key's value at a revision, and the revision that wrote it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub mod_revision: u64,
    pub object: Value,
}

/// Where the history is read; tests script one.
pub trait Store {
    /// The value of `key` as it was at `revision`, `None` where there was none.
    fn at(&self, key: &str, revision: u64) -> impl Future<Output = Result<Option<Stored>, Error>>;
}

/// An etcd reached through its JSON gateway (`/v3/kv/range`), as the local cluster runs it.
pub struct Etcd {
    url: String,
    http: reqwest::Client,
}

impl Etcd {
    pub fn new(url: &str) -> Etcd {
        Etcd {
            url: url.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(5))
                .build()
                .unwrap_or_default(),
        }
    }
}

impl Store for Etcd {
    async fn at(&self, key: &str, revision: u64) -> Result<Option<Stored>, Error> {
        let read = |source| Error::Read {
            key: key.to_string(),
            revision,
            source,
        };
        let answer: Value = self
            .http
            .post(format!("{}/v3/kv/range", self.url))
            .json(&json!({ "key": STANDARD.encode(key), "revision": revision.to_string() }))
            .send()
            .await
            .map_err(read)?
            .json()
            .await
            .map_err(read)?;
        stored(&answer).map_err(|answer| Error::Answer {
            key: key.to_string(),
            revision,
            answer,
        })
    }
}

/// The one value of a range answer (`Err`: what etcd said instead, e.g. that the revision was
/// compacted).
fn stored(answer: &Value) -> Result<Option<Stored>, String> {
    if answer.get("error").is_some() || answer.get("header").is_none() {
        return Err(answer.to_string());
    }
    let Some(kv) = answer["kvs"].as_array().and_then(|kvs| kvs.first()) else {
        return Ok(None);
    };
    let unreadable = || format!("an unreadable value: {kv}");
    let mod_revision: u64 = kv["mod_revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .ok_or_else(unreadable)?;
    let bytes = STANDARD
        .decode(kv["value"].as_str().unwrap_or_default())
        .map_err(|_| unreadable())?;
    let mut object: Value = serde_json::from_slice(&bytes).map_err(|_| unreadable())?;
    // The stored object has no resourceVersion: the API server sets it from the revision.
    object["metadata"]["resourceVersion"] = Value::String(mod_revision.to_string());
    Ok(Some(Stored {
        mod_revision,
        object,
    }))
}

/// Where the API server keeps an AppWrapper (`--etcd-prefix=/registry`).
pub fn key(namespace: &str, name: &str) -> String {
    format!("/registry/workload.codeflare.dev/appwrappers/{namespace}/{name}")
}

/// Past this many states between two logged ones, the walk gives up.
const MOST: usize = 64;

/// The states of the object with `uid` written after revision `after` (the last state handed
/// on; `None`: none was) and before revision `upto` (the logged state that follows them),
/// oldest first; `None` when the history cannot tell them all (compacted, or the key held
/// another object in between).
pub async fn between(
    store: &impl Store,
    key: &str,
    uid: &str,
    after: Option<u64>,
    upto: u64,
) -> Result<Option<Vec<Stored>>, Error> {
    let mut lost = Vec::new();
    let mut revision = upto.saturating_sub(1);
    while lost.len() <= MOST {
        match store.at(key, revision).await? {
            Some(s) if Some(s.mod_revision) == after => {
                lost.reverse();
                return Ok(Some(lost));
            }
            Some(s)
                if after.is_none_or(|a| s.mod_revision > a)
                    && s.object["metadata"]["uid"] == uid =>
            {
                revision = s.mod_revision.saturating_sub(1);
                lost.push(s);
            }
            None if after.is_none() => {
                lost.reverse();
                return Ok(Some(lost));
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
