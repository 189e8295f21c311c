//! Per-AppWrapper fault-tolerance annotations resolved against the configuration (spec §3.5,
//! §3.6). Malformed values fall back to the defaults and are reported as warnings.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::FaultToleranceConfig;
use crate::duration::{GoDuration, atoi};

pub const ADMISSION_GRACE_PERIOD: &str =
    "workload.codeflare.dev.appwrapper/admissionGracePeriodDuration";
pub const WARMUP_GRACE_PERIOD: &str = "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration";
pub const FAILURE_GRACE_PERIOD: &str =
    "workload.codeflare.dev.appwrapper/failureGracePeriodDuration";
pub const RETRY_PAUSE_PERIOD: &str = "workload.codeflare.dev.appwrapper/retryPausePeriodDuration";
pub const RETRY_LIMIT: &str = "workload.codeflare.dev.appwrapper/retryLimit";
pub const FORCEFUL_DELETION_GRACE_PERIOD: &str =
    "workload.codeflare.dev.appwrapper/forcefulDeletionGracePeriodDuration";
pub const DELETION_ON_FAILURE_GRACE_PERIOD: &str =
    "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration";
pub const SUCCESS_TTL: &str = "workload.codeflare.dev.appwrapper/successTTLDuration";
pub const TERMINAL_EXIT_CODES: &str = "workload.codeflare.dev.appwrapper/terminalExitCodes";
pub const RETRYABLE_EXIT_CODES: &str = "workload.codeflare.dev.appwrapper/retryableExitCodes";

/// The effective fault-tolerance settings of one AppWrapper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultTolerance {
    pub admission_grace_period: Duration,
    pub warmup_grace_period: Duration,
    pub failure_grace_period: Duration,
    pub retry_pause_period: Duration,
    pub retry_limit: i64,
    pub forceful_deletion_grace_period: Duration,
    pub deletion_on_failure_grace_period: Duration,
    pub success_ttl: Duration,
    pub terminal_exit_codes: Vec<i64>,
    pub retryable_exit_codes: Vec<i64>,
}

/// An annotation that was present but malformed, and so ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationWarning {
    pub key: String,
    pub value: String,
    pub error: String,
}

impl std::fmt::Display for AnnotationWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ignoring malformed annotation {}={:?}: {}",
            self.key, self.value, self.error
        )
    }
}

impl FaultTolerance {
    pub fn resolve(
        annotations: &BTreeMap<String, String>,
        config: &FaultToleranceConfig,
    ) -> (FaultTolerance, Vec<AnnotationWarning>) {
        let mut warnings = Vec::new();
        let ceiling = config.grace_period_ceiling;
        let mut clamped = |key: &str, default: GoDuration| {
            let value = match annotations.get(key) {
                None => default,
                Some(raw) => GoDuration::parse(raw).unwrap_or_else(|e| {
                    warnings.push(AnnotationWarning {
                        key: key.to_owned(),
                        value: raw.clone(),
                        error: e.to_string(),
                    });
                    default
                }),
            };
            clamp(value, ceiling)
        };
        let admission_grace_period = clamped(ADMISSION_GRACE_PERIOD, config.admission_grace_period);
        let warmup_grace_period = clamped(WARMUP_GRACE_PERIOD, config.warmup_grace_period);
        let failure_grace_period = clamped(FAILURE_GRACE_PERIOD, config.failure_grace_period);
        let retry_pause_period = clamped(RETRY_PAUSE_PERIOD, config.reset_pause);
        let forceful_deletion_grace_period =
            clamped(FORCEFUL_DELETION_GRACE_PERIOD, config.deletion_grace_period);
        let deletion_on_failure_grace_period =
            clamped(DELETION_ON_FAILURE_GRACE_PERIOD, GoDuration::ZERO);

        let retry_limit = match annotations.get(RETRY_LIMIT) {
            None => i64::from(config.retry_limit),
            Some(raw) => atoi(raw).unwrap_or_else(|| {
                warnings.push(AnnotationWarning {
                    key: RETRY_LIMIT.to_owned(),
                    value: raw.clone(),
                    error: format!("strconv.Atoi: parsing {raw:?}: invalid syntax"),
                });
                i64::from(config.retry_limit)
            }),
        };

        let ceiling_ttl = config.success_ttl_ceiling;
        let success_ttl = match annotations
            .get(SUCCESS_TTL)
            .map(|raw| (raw, GoDuration::parse(raw)))
        {
            Some((_, Ok(d))) if d > GoDuration::ZERO && d < ceiling_ttl => d,
            Some((raw, Err(e))) => {
                warnings.push(AnnotationWarning {
                    key: SUCCESS_TTL.to_owned(),
                    value: raw.clone(),
                    error: e.to_string(),
                });
                ceiling_ttl
            }
            _ => ceiling_ttl,
        };

        let ft = FaultTolerance {
            admission_grace_period,
            warmup_grace_period,
            failure_grace_period,
            retry_pause_period,
            retry_limit,
            forceful_deletion_grace_period,
            deletion_on_failure_grace_period,
            success_ttl: success_ttl.to_std(),
            terminal_exit_codes: exit_codes(annotations.get(TERMINAL_EXIT_CODES)),
            retryable_exit_codes: exit_codes(annotations.get(RETRYABLE_EXIT_CODES)),
        };
        (ft, warnings)
    }

    /// Whether a non-zero container exit code makes the failure terminal (§3.6).
    pub fn is_terminal_exit_code(&self, code: i32) -> bool {
        let code = i64::from(code);
        (!self.terminal_exit_codes.is_empty() && self.terminal_exit_codes.contains(&code))
            || (!self.retryable_exit_codes.is_empty() && !self.retryable_exit_codes.contains(&code))
    }
}

/// Negative ⇒ 0, above the ceiling ⇒ the ceiling.
fn clamp(value: GoDuration, ceiling: GoDuration) -> Duration {
    if value.is_negative() {
        Duration::ZERO
    } else if value > ceiling {
        ceiling.to_std()
    } else {
        value.to_std()
    }
}

/// Comma-separated integers; pieces that are not integers are dropped.
fn exit_codes(value: Option<&String>) -> Vec<i64> {
    value
        .map(|v| v.split(',').filter_map(atoi).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn resolve(pairs: &[(&str, &str)]) -> (FaultTolerance, Vec<AnnotationWarning>) {
        let annotations = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        FaultTolerance::resolve(&annotations, &FaultToleranceConfig::default())
    }

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn absent_annotations_give_config_defaults() {
        let (ft, warnings) = resolve(&[]);
        assert!(warnings.is_empty());
        assert_eq!(ft.admission_grace_period, S(60));
        assert_eq!(ft.warmup_grace_period, S(300));
        assert_eq!(ft.failure_grace_period, S(60));
        assert_eq!(ft.retry_pause_period, S(90));
        assert_eq!(ft.retry_limit, 3);
        assert_eq!(ft.forceful_deletion_grace_period, S(600));
        assert_eq!(ft.deletion_on_failure_grace_period, Duration::ZERO);
        assert_eq!(ft.success_ttl, S(7 * 24 * 3600));
        assert!(ft.terminal_exit_codes.is_empty() && ft.retryable_exit_codes.is_empty());
    }

    #[rstest]
    #[case::r_ann_1_valid(ADMISSION_GRACE_PERIOD, "10s", S(10))]
    #[case::r_ann_1_compound(ADMISSION_GRACE_PERIOD, "1m30s", S(90))]
    #[case::r_ann_1_negative_clamped_to_zero(ADMISSION_GRACE_PERIOD, "-10m", S(0))]
    #[case::r_ann_1_above_maximum_clamped(ADMISSION_GRACE_PERIOD, "25h", S(24 * 3600))]
    #[case::r_ann_1_malformed_uses_default(ADMISSION_GRACE_PERIOD, "10", S(60))]
    #[case::r_ann_1_days_are_malformed(ADMISSION_GRACE_PERIOD, "1d", S(60))]
    fn admission_grace_resolution(#[case] key: &str, #[case] value: &str, #[case] want: Duration) {
        assert_eq!(resolve(&[(key, value)]).0.admission_grace_period, want);
    }

    #[rstest]
    #[case(WARMUP_GRACE_PERIOD)]
    #[case(FAILURE_GRACE_PERIOD)]
    #[case(RETRY_PAUSE_PERIOD)]
    #[case(FORCEFUL_DELETION_GRACE_PERIOD)]
    #[case(DELETION_ON_FAILURE_GRACE_PERIOD)]
    fn every_clamped_duration_reads_its_annotation(#[case] key: &str) {
        let get = |ft: &FaultTolerance| match key {
            WARMUP_GRACE_PERIOD => ft.warmup_grace_period,
            FAILURE_GRACE_PERIOD => ft.failure_grace_period,
            RETRY_PAUSE_PERIOD => ft.retry_pause_period,
            FORCEFUL_DELETION_GRACE_PERIOD => ft.forceful_deletion_grace_period,
            _ => ft.deletion_on_failure_grace_period,
        };
        assert_eq!(get(&resolve(&[(key, "7s")]).0), S(7));
        assert_eq!(get(&resolve(&[(key, "48h")]).0), S(24 * 3600));
        assert_eq!(get(&resolve(&[(key, "-1s")]).0), S(0));
    }

    #[test]
    fn configured_default_is_clamped_too() {
        let config = FaultToleranceConfig {
            warmup_grace_period: GoDuration::from_hours(48),
            reset_pause: GoDuration(-5),
            ..FaultToleranceConfig::default()
        };
        let (ft, _) = FaultTolerance::resolve(&BTreeMap::new(), &config);
        assert_eq!(ft.warmup_grace_period, S(24 * 3600));
        assert_eq!(ft.retry_pause_period, S(0));
    }

    #[test]
    fn malformed_durations_are_reported() {
        let (ft, warnings) = resolve(&[(FAILURE_GRACE_PERIOD, "soon")]);
        assert_eq!(ft.failure_grace_period, S(60));
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].key, FAILURE_GRACE_PERIOD);
        assert_eq!(warnings[0].value, "soon");
    }

    #[rstest]
    #[case::r_ann_2_integer("5", 5, 0)]
    #[case::r_ann_2_zero("0", 0, 0)]
    #[case::r_ann_2_negative_allowed("-1", -1, 0)]
    #[case::r_ann_2_plus_sign("+2", 2, 0)]
    #[case::r_ann_2_malformed("three", 3, 1)]
    #[case::r_ann_2_whitespace(" 4", 3, 1)]
    fn retry_limit_resolution(#[case] value: &str, #[case] want: i64, #[case] warnings: usize) {
        let (ft, w) = resolve(&[(RETRY_LIMIT, value)]);
        assert_eq!((ft.retry_limit, w.len()), (want, warnings));
    }

    #[rstest]
    #[case::r_ann_3_within_ceiling("1m", S(60))]
    #[case::r_ann_3_above_grace_maximum_not_clamped("48h", S(48 * 3600))]
    #[case::r_ann_3_zero_uses_ceiling("0", S(7 * 24 * 3600))]
    #[case::r_ann_3_negative_uses_ceiling("-1m", S(7 * 24 * 3600))]
    #[case::r_ann_3_equal_to_ceiling_uses_ceiling("168h", S(7 * 24 * 3600))]
    #[case::r_ann_3_above_ceiling_uses_ceiling("200h", S(7 * 24 * 3600))]
    #[case::r_ann_3_malformed_uses_ceiling("1w", S(7 * 24 * 3600))]
    fn success_ttl_resolution(#[case] value: &str, #[case] want: Duration) {
        assert_eq!(resolve(&[(SUCCESS_TTL, value)]).0.success_ttl, want);
    }

    #[rstest]
    #[case("3,10,abc,42", vec![3, 10, 42])]
    #[case("x,10,20", vec![10, 20])]
    #[case("1, 2", vec![1])]
    #[case("", vec![])]
    fn exit_code_lists_drop_non_integers(#[case] value: &str, #[case] want: Vec<i64>) {
        assert_eq!(
            resolve(&[(TERMINAL_EXIT_CODES, value)])
                .0
                .terminal_exit_codes,
            want
        );
    }

    #[rstest]
    #[case::neither_list_never_terminal(None, None, 1, false)]
    #[case::terminal_list_contains(Some("3,42"), None, 42, true)]
    #[case::terminal_list_lacks(Some("3,42"), None, 1, false)]
    #[case::retryable_list_contains(None, Some("10,20"), 10, false)]
    #[case::retryable_list_lacks(None, Some("10,20"), 11, true)]
    #[case::both_lists_terminal_wins(Some("10"), Some("10"), 10, true)]
    #[case::both_lists_neither_matches(Some("3"), Some("10"), 4, true)]
    #[case::only_garbage_means_no_list(Some("abc"), None, 1, false)]
    fn exit_code_semantics(
        #[case] terminal: Option<&str>,
        #[case] retryable: Option<&str>,
        #[case] code: i32,
        #[case] want: bool,
    ) {
        let mut pairs = Vec::new();
        if let Some(t) = terminal {
            pairs.push((TERMINAL_EXIT_CODES, t));
        }
        if let Some(r) = retryable {
            pairs.push((RETRYABLE_EXIT_CODES, r));
        }
        assert_eq!(resolve(&pairs).0.is_terminal_exit_code(code), want);
    }
}
