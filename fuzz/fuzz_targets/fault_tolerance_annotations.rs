//! The fault-tolerance annotations resolved as the reference does, with Go's
//! `time.ParseDuration` and `strconv.Atoi` as the oracle for every value. Input: one
//! `key=value` per line; a key without `/` gets the annotations' prefix.
#![no_main]

use std::collections::BTreeMap;
use std::time::Duration;

use appwrapper_controller::annotations::*;
use appwrapper_controller::config::FaultToleranceConfig;
use appwrapper_controller::duration::GoDuration;
use awconf_fuzz::oracle;
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "workload.codeflare.dev.appwrapper/";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let annotations: BTreeMap<String, String> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let key = if key.contains('/') {
                key.to_owned()
            } else {
                format!("{PREFIX}{key}")
            };
            (key, value.to_owned())
        })
        .collect();
    let config = FaultToleranceConfig::default();
    let (ft, warnings) = FaultTolerance::resolve(&annotations, &config);
    let mut expected_warnings = 0;

    let ceiling = config.grace_period_ceiling;
    let mut clamped = |key: &str, default: GoDuration| {
        let value = match annotations.get(key).map(|raw| oracle::parse_duration(raw)) {
            None => default,
            Some(go) if go.ok => GoDuration(go.nanos),
            Some(_) => {
                expected_warnings += 1;
                default
            }
        };
        if value.is_negative() {
            Duration::ZERO
        } else {
            value.min(ceiling).to_std()
        }
    };
    let periods = [
        (
            ft.admission_grace_period,
            ADMISSION_GRACE_PERIOD,
            config.admission_grace_period,
        ),
        (
            ft.warmup_grace_period,
            WARMUP_GRACE_PERIOD,
            config.warmup_grace_period,
        ),
        (
            ft.failure_grace_period,
            FAILURE_GRACE_PERIOD,
            config.failure_grace_period,
        ),
        (
            ft.retry_pause_period,
            RETRY_PAUSE_PERIOD,
            config.reset_pause,
        ),
        (
            ft.forceful_deletion_grace_period,
            FORCEFUL_DELETION_GRACE_PERIOD,
            config.deletion_grace_period,
        ),
        (
            ft.deletion_on_failure_grace_period,
            DELETION_ON_FAILURE_GRACE_PERIOD,
            GoDuration::ZERO,
        ),
    ];
    for (got, key, default) in periods {
        assert_eq!(got, clamped(key, default), "{key}");
    }

    let ttl_ceiling = config.success_ttl_ceiling;
    let success_ttl = match annotations
        .get(SUCCESS_TTL)
        .map(|raw| oracle::parse_duration(raw))
    {
        Some(go) if go.ok && go.nanos > 0 && go.nanos < ttl_ceiling.0 => GoDuration(go.nanos),
        Some(go) => {
            expected_warnings += usize::from(!go.ok);
            ttl_ceiling
        }
        None => ttl_ceiling,
    };
    assert_eq!(ft.success_ttl, success_ttl.to_std());

    let retry_limit = match annotations.get(RETRY_LIMIT).map(|raw| oracle::atoi(raw)) {
        None => i64::from(config.retry_limit),
        Some(Some(limit)) => limit,
        Some(None) => {
            expected_warnings += 1;
            i64::from(config.retry_limit)
        }
    };
    assert_eq!(ft.retry_limit, retry_limit);

    let exit_codes = |key: &str| -> Vec<i64> {
        annotations
            .get(key)
            .map(|v| v.split(',').filter_map(oracle::atoi).collect())
            .unwrap_or_default()
    };
    assert_eq!(ft.terminal_exit_codes, exit_codes(TERMINAL_EXIT_CODES));
    assert_eq!(ft.retryable_exit_codes, exit_codes(RETRYABLE_EXIT_CODES));
    assert_eq!(warnings.len(), expected_warnings, "{warnings:?}");
});
