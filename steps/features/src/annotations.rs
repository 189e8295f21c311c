//! The AppWrapper annotations a scenario may set (spec §1.6). A misspelt key must fail the
//! step: the controller would ignore it and fall back to its default, and the scenario would
//! test something else than it says.

pub const PREFIX: &str = "workload.codeflare.dev.appwrapper/";

/// The annotations the controller reads, without the prefix, spelt as the reference operator
/// spells them.
pub const KNOWN: [&str; 10] = [
    "admissionGracePeriodDuration",
    "warmupGracePeriodDuration",
    "failureGracePeriodDuration",
    "retryPausePeriodDuration",
    "retryLimit",
    "forcefulDeletionGracePeriodDuration",
    "deletionOnFailureGracePeriodDuration",
    "successTTLDuration",
    "terminalExitCodes",
    "retryableExitCodes",
];

/// The full key of a known annotation, given short (`retryLimit`) or in full.
pub fn key(given: &str) -> anyhow::Result<String> {
    let short = given.strip_prefix(PREFIX).unwrap_or(given);
    if KNOWN.contains(&short) {
        return Ok(format!("{PREFIX}{short}"));
    }
    let suggestion = closest(short)
        .map(|k| format!(" (did you mean {k:?}?)"))
        .unwrap_or_default();
    anyhow::bail!(
        "unknown AppWrapper annotation {given:?}{suggestion}; the known ones (short, or with \
         the prefix {PREFIX:?}) are: {}",
        KNOWN.join(", ")
    )
}

/// The `(full key, value)` pairs of a `| key | value |` table, in order.
pub fn table(rows: &[Vec<String>]) -> anyhow::Result<Vec<(String, String)>> {
    if rows.is_empty() {
        anyhow::bail!("the annotation table has no rows; each row is | key | value |");
    }
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let [given, value] = row.as_slice() else {
            anyhow::bail!(
                "row {} of the annotation table has {} cell(s) ({}); each row is | key | value |",
                index + 1,
                row.len(),
                row.iter()
                    .map(|c| format!("{c:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let full = key(given.trim())?;
        if pairs.iter().any(|(k, _)| *k == full) {
            anyhow::bail!("the annotation table sets {given:?} twice");
        }
        pairs.push((full, value.trim().to_string()));
    }
    Ok(pairs)
}

/// The known key nearest to `given` by edit distance, ignoring case.
fn closest(given: &str) -> Option<&'static str> {
    let given = given.to_lowercase();
    KNOWN
        .iter()
        .min_by_key(|k| strsim::levenshtein(&given, &k.to_lowercase()))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn short_and_full_keys_name_the_same_annotation() {
        assert_eq!(
            key("retryLimit").unwrap(),
            "workload.codeflare.dev.appwrapper/retryLimit"
        );
        assert_eq!(
            key("workload.codeflare.dev.appwrapper/retryLimit").unwrap(),
            "workload.codeflare.dev.appwrapper/retryLimit"
        );
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_nearest_known_one() {
        let err = key("failureGracePeriod").unwrap_err().to_string();
        assert!(
            err.contains(r#"did you mean "failureGracePeriodDuration"?"#),
            "{err}"
        );
        assert!(err.contains("retryableExitCodes"), "{err}");
        let err = key("RetryLimit").unwrap_err().to_string();
        assert!(err.contains(r#"did you mean "retryLimit"?"#), "{err}");
        assert!(key("example.com/retryLimit").is_err());
    }

    #[test]
    fn a_table_gives_full_keys_and_values_in_order() {
        let pairs = table(&rows(&[
            &["failureGracePeriodDuration", "8s"],
            &["retryLimit", " 2 "],
        ]))
        .unwrap();
        assert_eq!(
            pairs,
            vec![
                (format!("{PREFIX}failureGracePeriodDuration"), "8s".into()),
                (format!("{PREFIX}retryLimit"), "2".into()),
            ]
        );
    }

    #[test]
    fn a_table_refuses_rows_that_are_not_key_and_value() {
        let err = table(&rows(&[
            &["retryLimit", "1"],
            &["retryPausePeriodDuration"],
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("row 2") && err.contains("1 cell"), "{err}");
        let err = table(&rows(&[&["retryLimit", "1", "2"]]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 cell"), "{err}");
        assert!(table(&[]).is_err());
    }

    #[test]
    fn a_table_refuses_a_misspelt_or_repeated_key() {
        let err = table(&rows(&[&["key", "value"]])).unwrap_err().to_string();
        assert!(
            err.contains(r#"unknown AppWrapper annotation "key""#),
            "{err}"
        );
        let err = table(&rows(&[&["retryLimit", "1"], &["retryLimit", "2"]]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("twice"), "{err}");
    }
}
