//! Label-value sanitizing of user names and UIDs (§6.2).

const MAX_BYTES: usize = 63;

/// Keeps the first 63 bytes, turns every character other than an ASCII letter, digit, `_`, `-`
/// or `.` into `_` (one per code point, and one per byte of a code point cut by the
/// truncation), then strips leading and trailing `-`, `_` and `.`.
pub fn sanitize(s: &str) -> String {
    let bytes = &s.as_bytes()[..s.len().min(MAX_BYTES)];
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend(chunk.valid().chars().map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        }));
        out.extend(chunk.invalid().iter().map(|_| '_'));
    }
    out.trim_matches(['-', '_', '.']).to_owned()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::sanitize;

    #[rstest]
    #[case::service_account("system:serviceaccount:ns:sa", "system_serviceaccount_ns_sa")]
    #[case::plain("limited-user", "limited-user")]
    #[case::uid(
        "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c",
        "8da0fcfe-6d7f-4f44-b433-d91d22cc1b8c"
    )]
    #[case::email("jane@example.com", "jane_example.com")]
    #[case::trims_separators("-_.x._-", "x")]
    #[case::trims_replaced_characters(":admin:", "admin")]
    #[case::empty("", "")]
    #[case::only_separators("@@@", "")]
    #[case::non_ascii_code_point_is_one_underscore("ümlaut", "mlaut")]
    #[case::inner_non_ascii("aüb", "a_b")]
    fn sanitizes(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(sanitize(input), expected);
    }

    #[test]
    fn truncates_to_63_bytes() {
        let long = "a".repeat(70);
        assert_eq!(sanitize(&long), "a".repeat(63));
    }

    #[test]
    fn a_code_point_cut_by_truncation_becomes_one_underscore_per_byte() {
        // 62 ASCII bytes then a 2-byte 'é': byte 63 is the first half of 'é'.
        let input = format!("{}éz", "a".repeat(62));
        assert_eq!(sanitize(&input), "a".repeat(62));
        let input = format!("{}é", "a".repeat(61));
        assert_eq!(sanitize(&input), "a".repeat(61));
        let input = format!("{}€x", "a".repeat(61));
        // '€' is 3 bytes; two of them survive the cut and trail, so they are trimmed.
        assert_eq!(sanitize(&input), "a".repeat(61));
        let input = format!("{}€x", "b".repeat(60));
        assert_eq!(sanitize(&input), "b".repeat(60));
    }
}
