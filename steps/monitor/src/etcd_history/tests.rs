use std::collections::BTreeMap;

use super::*;

/// A key's history: each write's revision and the uid and phase it left (`None`: deleted).
struct History(BTreeMap<u64, Option<(&'static str, &'static str)>>);

impl Store for History {
    async fn at(&self, _key: &str, revision: u64) -> Result<Option<Stored>, Error> {
        Ok(self
            .0
            .range(..=revision)
            .next_back()
            .and_then(|(&rev, written)| {
                written.map(|(uid, phase)| Stored {
                    mod_revision: rev,
                    object: json!({"metadata": {"uid": uid, "resourceVersion": rev.to_string()},
                                   "status": {"phase": phase}}),
                })
            }))
    }
}

fn history(writes: &[(u64, Option<(&'static str, &'static str)>)]) -> History {
    History(writes.iter().copied().collect())
}

fn phases(states: Option<Vec<Stored>>) -> Option<Vec<String>> {
    states.map(|s| {
        s.iter()
            .map(|s| {
                format!(
                    "{}@{}",
                    s.object["status"]["phase"].as_str().unwrap(),
                    s.mod_revision
                )
            })
            .collect()
    })
}

async fn walk(h: &History, after: Option<u64>, upto: u64) -> Option<Vec<String>> {
    phases(between(h, "k", "a", after, upto).await.unwrap())
}

#[tokio::test]
async fn the_states_between_two_logged_ones_are_read_back_oldest_first() {
    let h = history(&[
        (10, Some(("a", "Suspended"))),
        (12, Some(("a", "Resuming"))),
        (15, Some(("a", "Running"))),
        (20, Some(("a", "Succeeded"))),
    ]);
    assert_eq!(
        walk(&h, Some(10), 20).await,
        Some(vec!["Resuming@12".into(), "Running@15".into()])
    );
    assert_eq!(walk(&h, Some(15), 20).await, Some(vec![]));
}

#[tokio::test]
async fn a_lost_creation_is_read_back_to_the_start_of_the_key() {
    let h = history(&[(10, Some(("a", "Empty"))), (12, Some(("a", "Suspended")))]);
    assert_eq!(walk(&h, None, 12).await, Some(vec!["Empty@10".into()]));
}

#[tokio::test]
async fn a_history_that_does_not_reach_the_last_state_handed_on_tells_nothing() {
    // The state handed on (11) is not in the history: another object held the key, or the
    // revisions were compacted and rewritten.
    let h = history(&[
        (10, Some(("a", "Suspended"))),
        (12, Some(("a", "Resuming"))),
    ]);
    assert_eq!(walk(&h, Some(11), 13).await, None);
    let recreated = history(&[
        (10, Some(("a", "Suspended"))),
        (11, None),
        (12, Some(("b", "Empty"))),
    ]);
    assert_eq!(walk(&recreated, Some(10), 13).await, None);
}

#[test]
fn a_range_answer_gives_the_object_with_its_revision_as_resource_version() {
    let value = STANDARD.encode(r#"{"metadata":{"uid":"a"},"status":{"phase":"Running"}}"#);
    let answer = json!({"header": {"revision": "30"},
                        "kvs": [{"mod_revision": "27", "value": value}], "count": "1"});
    let s = stored(&answer).unwrap().unwrap();
    assert_eq!(s.mod_revision, 27);
    assert_eq!(s.object["metadata"]["resourceVersion"], "27");
    assert_eq!(stored(&json!({"header": {}, "count": "0"})), Ok(None));
    let compacted = json!({"error": "etcdserver: mvcc: required revision has been compacted",
                           "code": 11});
    assert!(stored(&compacted).unwrap_err().contains("compacted"));
}
