//! The deadlines a conforming controller is allowed, named once. A step's `within ...` is an
//! upper bound taken from the specification, never from how fast our controller is: a fast
//! controller passes as soon as the state holds, a conforming slow one still passes.

use std::time::Duration;

/// How late a conforming controller may notice a change that sends it no watch event: a
/// failed pod, a failed or missing component, an expired grace period of a Running
/// AppWrapper whose pods are ready. The reference re-examines such an AppWrapper every 60 s
/// and reconciles on pod success only (spec §2.0 R-TRIG-2, R-TRIG-3, §2.7).
pub const DETECTION_PERIOD: Duration = Duration::from_secs(60);

/// What the cluster adds on this 2-core machine: API and watch latency, KWOK's pod stages,
/// Kueue's admission.
pub const SLACK: Duration = Duration::from_secs(15);

/// The step text that names a deadline: `N seconds`, `the detection period`, `K detection
/// periods` (K changes each noticed that late, one after the other), each optionally followed
/// by `plus N seconds` (a grace period that starts once the change is noticed).
pub const PATTERN: &str = r"\d+ seconds?|(?:the|\d+) detection periods?(?: plus \d+ seconds?)?";

/// Reads a deadline written as [`PATTERN`].
pub fn parse(text: &str) -> Result<Duration, String> {
    let wrong = || format!("{text:?} is not a deadline ({PATTERN})");
    let seconds = |s: &str| -> Result<Duration, String> {
        let n = s
            .strip_suffix(" seconds")
            .or_else(|| s.strip_suffix(" second"))
            .ok_or_else(wrong)?;
        n.parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| wrong())
    };
    let Some((count, rest)) = text.split_once(" detection period") else {
        return seconds(text);
    };
    let periods: u32 = match count {
        "the" => 1,
        n => n.parse().map_err(|_| wrong())?,
    };
    let rest = rest.strip_prefix('s').unwrap_or(rest);
    let extra = match rest {
        "" => Duration::ZERO,
        _ => seconds(rest.strip_prefix(" plus ").ok_or_else(wrong)?)?,
    };
    Ok((DETECTION_PERIOD + SLACK) * periods + extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_seconds_or_the_detection_period() {
        assert_eq!(parse("30 seconds"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1 second"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("the detection period"), Ok(Duration::from_secs(75)));
        assert_eq!(
            parse("the detection period plus 30 seconds"),
            Ok(Duration::from_secs(105))
        );
        assert_eq!(parse("3 detection periods"), Ok(Duration::from_secs(225)));
        assert!(parse("the detection period minus 3 seconds").is_err());
        assert!(parse("many detection periods").is_err());
        assert!(parse("soon").is_err());
    }

    #[test]
    fn the_pattern_accepts_what_parse_reads() {
        let re = regex::Regex::new(&format!("^(?:{PATTERN})$")).unwrap();
        for text in [
            "5 seconds",
            "the detection period",
            "the detection period plus 5 seconds",
            "2 detection periods plus 1 second",
        ] {
            assert!(re.is_match(text) && parse(text).is_ok(), "{text}");
        }
    }
}
