//! Go `time.ParseDuration`, `Duration.String()` and `strconv.Atoi`, which the reference uses for
//! annotations and messages (spec §0.4).

use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// A Go `time.Duration`: signed nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(pub i64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit { unit: String, input: String },
}

impl GoDuration {
    pub const ZERO: GoDuration = GoDuration(0);

    pub const fn from_secs(secs: i64) -> Self {
        GoDuration(secs * SECOND as i64)
    }

    pub const fn from_mins(mins: i64) -> Self {
        GoDuration(mins * MINUTE as i64)
    }

    pub const fn from_hours(hours: i64) -> Self {
        GoDuration(hours * HOUR as i64)
    }

    pub fn from_std(d: Duration) -> Self {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// The duration as a `std::time::Duration`; negative values become zero.
    pub fn to_std(self) -> Duration {
        Duration::from_nanos(u64::try_from(self.0).unwrap_or(0))
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Go `time.ParseDuration`.
    pub fn parse(input: &str) -> Result<Self, DurationError> {
        let invalid = || DurationError::Invalid(input.to_owned());
        let mut s = input;
        let mut neg = false;
        if let Some(rest) = s.strip_prefix('-') {
            neg = true;
            s = rest;
        } else if let Some(rest) = s.strip_prefix('+') {
            s = rest;
        }
        if s == "0" {
            return Ok(GoDuration(0));
        }
        if s.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !s.is_empty() {
            let first = s.as_bytes()[0];
            if !(first == b'.' || first.is_ascii_digit()) {
                return Err(invalid());
            }
            let (int_part, rest, pre) = leading_int(s).ok_or_else(invalid)?;
            s = rest;
            let mut frac = 0u64;
            let mut scale = 1f64;
            let mut post = false;
            if let Some(rest) = s.strip_prefix('.') {
                let (f, sc, rest, consumed) = leading_fraction(rest);
                frac = f;
                scale = sc;
                post = consumed;
                s = rest;
            }
            if !pre && !post {
                return Err(invalid());
            }
            let unit_len = s
                .bytes()
                .position(|c| c == b'.' || c.is_ascii_digit())
                .unwrap_or(s.len());
            if unit_len == 0 {
                return Err(DurationError::MissingUnit(input.to_owned()));
            }
            let (unit_str, rest) = s.split_at(unit_len);
            s = rest;
            let unit = unit_nanos(unit_str).ok_or_else(|| DurationError::UnknownUnit {
                unit: unit_str.to_owned(),
                input: input.to_owned(),
            })?;
            let limit = 1u64 << 63;
            if int_part > limit / unit {
                return Err(invalid());
            }
            let mut v = int_part * unit;
            if frac > 0 {
                // Same float arithmetic as Go, so rounding matches.
                v += (frac as f64 * (unit as f64 / scale)) as u64;
                if v > limit {
                    return Err(invalid());
                }
            }
            // Go adds in uint64 and wraps: two terms of exactly 2^63 ns sum to 0.
            total = total.wrapping_add(v);
            if total > limit {
                return Err(invalid());
            }
        }
        if neg {
            return Ok(GoDuration((total as i64).wrapping_neg()));
        }
        i64::try_from(total).map(GoDuration).map_err(|_| invalid())
    }
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// Leading decimal digits; `None` on overflow. Returns (value, rest, consumed any).
fn leading_int(s: &str) -> Option<(u64, &str, bool)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut v: u64 = 0;
    for c in s.as_bytes()[..len].iter() {
        if v > (1u64 << 63) / 10 {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
        if v > 1u64 << 63 {
            return None;
        }
    }
    Some((v, &s[len..], len > 0))
}

/// Leading fraction digits; digits past the point of overflow are consumed but ignored.
fn leading_fraction(s: &str) -> (u64, f64, &str, bool) {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    let mut scale = 1f64;
    let mut overflow = false;
    for c in s.as_bytes()[..len].iter() {
        if overflow {
            continue;
        }
        if x > (1u64 << 63) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1u64 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[len..], len > 0)
}

/// Go `Duration.String()`.
impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let mut u = self.0.unsigned_abs();
        let mut out = String::new();
        if u < SECOND {
            let (prec, unit) = match u {
                0 => return f.write_str("0s"),
                u if u < MICROSECOND => (0, "ns"),
                u if u < MILLISECOND => (3, "\u{b5}s"),
                _ => (6, "ms"),
            };
            let (frac, rest) = fmt_frac(u, prec);
            out.push_str(&rest.to_string());
            out.push_str(&frac);
            out.push_str(unit);
        } else {
            let (frac, secs) = fmt_frac(u, 9);
            u = secs;
            let mut body = format!("{}{}s", u % 60, frac);
            u /= 60;
            if u > 0 {
                body = format!("{}m{}", u % 60, body);
                u /= 60;
                if u > 0 {
                    body = format!("{u}h{body}");
                }
            }
            out = body;
        }
        if neg {
            f.write_str("-")?;
        }
        f.write_str(&out)
    }
}

/// The fraction of `v / 10^prec` as `.ddd` without trailing zeros (empty when zero), and the
/// integer part.
fn fmt_frac(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            digits.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if digits.is_empty() {
        return (String::new(), v);
    }
    digits.push('.');
    (digits.into_iter().rev().collect(), v)
}

/// Go `strconv.Atoi` (64-bit `int`): optional sign, decimal digits, nothing else.
pub fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// Config files hold Go `time.Duration` JSON values (integer nanoseconds); Go duration strings
/// such as `90s` are accepted as well.
impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = GoDuration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration: integer nanoseconds or a Go duration string such as \"90s\"",
                )
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GoDuration, E> {
                Ok(GoDuration(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GoDuration, E> {
                i64::try_from(v)
                    .map(GoDuration)
                    .map_err(|_| E::custom(format!("duration {v} out of range")))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<GoDuration, E> {
                GoDuration::parse(v).map_err(|e| E::custom(format!("invalid duration {v:?}: {e}")))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("0", 0)]
    #[case("+0", 0)]
    #[case("-0", 0)]
    #[case("90s", 90 * SECOND as i64)]
    #[case("1m30s", 90 * SECOND as i64)]
    #[case("1.5h", 90 * MINUTE as i64)]
    #[case("-10m", -10 * MINUTE as i64)]
    #[case("+5s", 5 * SECOND as i64)]
    #[case("10ns", 10)]
    #[case("3us", 3_000)]
    #[case("3\u{b5}s", 3_000)]
    #[case("3\u{3bc}s", 3_000)]
    #[case("4ms", 4_000_000)]
    #[case(".5s", 500_000_000)]
    #[case("5.s", 5 * SECOND as i64)]
    #[case("1h2m3s4ms5us6ns", (HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6) as i64)]
    #[case("0.000000001s", 1)]
    #[case("2562047h47m16.854775807s", i64::MAX)]
    #[case("-2562047h47m16.854775808s", i64::MIN)]
    // Go sums the terms in a uint64 that wraps: 2^63 ns twice is 0 (found by fuzz/go_duration).
    #[case("9223372036854775808ns9223372036854775808ns", 0)]
    fn parses_go_durations(#[case] input: &str, #[case] nanos: i64) {
        assert_eq!(GoDuration::parse(input), Ok(GoDuration(nanos)));
    }

    #[rstest]
    #[case("")]
    #[case("-")]
    #[case("s")]
    #[case(".s")]
    #[case("1")]
    #[case("1d")]
    #[case("10 s")]
    #[case(" 10s")]
    #[case("1.5.5s")]
    #[case("abc")]
    #[case("2562047h47m16.854775808s")]
    #[case("9223372036854775808ns")]
    #[case("1m-5s")]
    fn rejects_malformed_durations(#[case] input: &str) {
        assert!(
            GoDuration::parse(input).is_err(),
            "{input:?} should be malformed"
        );
    }

    #[rstest]
    #[case(0, "0s")]
    #[case(1, "1ns")]
    #[case(1_100, "1.1\u{b5}s")]
    #[case(2_200_000, "2.2ms")]
    #[case(SECOND as i64, "1s")]
    #[case(10 * SECOND as i64, "10s")]
    #[case(1_500_000_000, "1.5s")]
    #[case(90 * SECOND as i64, "1m30s")]
    #[case(5 * MINUTE as i64, "5m0s")]
    #[case(HOUR as i64, "1h0m0s")]
    #[case(168 * HOUR as i64, "168h0m0s")]
    #[case(-10 * MINUTE as i64, "-10m0s")]
    #[case(-1, "-1ns")]
    #[case(i64::MAX, "2562047h47m16.854775807s")]
    #[case(i64::MIN, "-2562047h47m16.854775808s")]
    fn formats_like_go(#[case] nanos: i64, #[case] expected: &str) {
        assert_eq!(GoDuration(nanos).to_string(), expected);
    }

    #[rstest]
    #[case("3", Some(3))]
    #[case("+3", Some(3))]
    #[case("-3", Some(-3))]
    #[case("007", Some(7))]
    #[case(" 3", None)]
    #[case("3 ", None)]
    #[case("", None)]
    #[case("+", None)]
    #[case("3.0", None)]
    #[case("abc", None)]
    #[case("99999999999999999999", None)]
    fn atoi_follows_go(#[case] input: &str, #[case] expected: Option<i64>) {
        assert_eq!(atoi(input), expected);
    }

    #[test]
    fn negative_durations_become_zero_std_durations() {
        assert_eq!(GoDuration(-5).to_std(), Duration::ZERO);
        assert_eq!(GoDuration::from_secs(2).to_std(), Duration::from_secs(2));
    }
}
