//! Kubernetes resource quantities (`resource.ParseQuantity`): only what the controller needs,
//! namely whether a string is a well-formed quantity and whether it is zero.

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    #[error("unable to parse quantity's suffix")]
    Suffix,
    #[error("unable to parse numeric part of quantity")]
    Numeric,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    zero: bool,
}

impl Quantity {
    pub fn is_zero(&self) -> bool {
        self.zero
    }

    pub fn is_negative(&self) -> bool {
        self.negative && !self.zero
    }
}

const SUFFIX_CHARS: &str = "eEinumkKMGTP";
const DECIMAL_SI: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
const BINARY_SI: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Parses with the reference's (lenient) grammar: `<sign>?<digits>?(.<digits>?)?<suffix>`,
/// where an empty number counts as zero (so `"."`, `"-"` and `"Ki"` are valid zeros) unless
/// its suffix is one of [`digitless_is_numeric_error`]'s.
pub fn parse_quantity(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let bytes = s.as_bytes();
    let mut pos = 0;
    let negative = match bytes[0] {
        b'-' => {
            pos += 1;
            true
        }
        b'+' => {
            pos += 1;
            false
        }
        _ => false,
    };
    let digits_end = |from: usize| {
        bytes[from..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| from + n)
    };
    let int_end = digits_end(pos);
    let mut significant = &s[pos..int_end];
    let mut fraction = "";
    pos = int_end;
    if bytes.get(pos) == Some(&b'.') {
        let frac_end = digits_end(pos + 1);
        fraction = &s[pos + 1..frac_end];
        pos = frac_end;
    }
    let suffix = &s[pos..];
    if !suffix.is_empty() {
        let unit_end = suffix
            .find(|c: char| !SUFFIX_CHARS.contains(c))
            .unwrap_or(suffix.len());
        let mut rest = &suffix[unit_end..];
        rest = rest.strip_prefix(['-', '+']).unwrap_or(rest);
        if !rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err(QuantityError::Format);
        }
        if !valid_suffix(suffix) {
            return Err(QuantityError::Suffix);
        }
    }
    if significant.is_empty() && fraction.is_empty() && digitless_is_numeric_error(suffix) {
        return Err(QuantityError::Numeric);
    }
    if significant.is_empty() {
        significant = "0";
    }
    let zero = significant
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b == b'0');
    Ok(Quantity { negative, zero })
}

/// Go reads a number without digits as 0 on its int64 fast path, but fails with ErrNumeric
/// when the suffix sends it to the `inf.Dec` path, which wants a digit. That path is taken by
/// the binary suffixes whose precision estimate `15 - 1 - int32(float32(exp)*3/10) - 1` is
/// negative (`Pi`, `Ei`), and by decimal exponents below -9 (nano), the exponent truncated to
/// an int32 as Go does.
fn digitless_is_numeric_error(suffix: &str) -> bool {
    if matches!(suffix, "Pi" | "Ei") {
        return true;
    }
    if DECIMAL_SI.contains(&suffix) || BINARY_SI.contains(&suffix) {
        return false;
    }
    let exponent = suffix
        .get(1..)
        .and_then(|e| e.parse::<i64>().ok())
        .unwrap_or(0);
    (exponent as i32) < -9
}

fn valid_suffix(suffix: &str) -> bool {
    if DECIMAL_SI.contains(&suffix) || BINARY_SI.contains(&suffix) {
        return true;
    }
    match suffix.strip_prefix(['e', 'E']) {
        Some(exponent) => !exponent.is_empty() && exponent.parse::<i64>().is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case("1", false)]
    #[case("0", true)]
    #[case("000", true)]
    #[case("0.000", true)]
    #[case("-0", true)]
    #[case("100m", false)]
    #[case("0m", true)]
    #[case("1.5Gi", false)]
    #[case("2Ki", false)]
    #[case("1e3", false)]
    #[case("1E-3", false)]
    #[case("1e+3", false)]
    #[case("0.1n", false)]
    #[case("1.", false)]
    #[case(".5", false)]
    #[case(".", true)]
    #[case("-", true)]
    #[case("Ki", true)]
    #[case("-8", false)]
    #[case::digitless_tebi_binary("Ti", true)]
    #[case::digitless_nano(".n", true)]
    #[case::digitless_exponent_nano("e-9", true)]
    #[case::digitless_int32_wraps_to_zero("e4294967296", true)]
    #[case::digits_below_nano("1e-10", false)]
    #[case::digits_peta_binary("0Pi", true)]
    fn parses_valid_quantities(#[case] input: &str, #[case] zero: bool) {
        assert_eq!(parse_quantity(input).map(|q| q.is_zero()), Ok(zero));
    }

    #[rstest]
    #[case("", QuantityError::Format)]
    #[case("abc", QuantityError::Format)]
    #[case("1 ", QuantityError::Format)]
    #[case("1x", QuantityError::Format)]
    #[case("1.2.3", QuantityError::Format)]
    #[case("1Mi5", QuantityError::Suffix)]
    #[case("1ki", QuantityError::Suffix)]
    #[case("1e", QuantityError::Suffix)]
    #[case("1KiB", QuantityError::Format)]
    #[case::digitless_peta_binary("Pi", QuantityError::Numeric)]
    #[case::digitless_exa_binary("-.Ei", QuantityError::Numeric)]
    #[case::digitless_below_nano("e-10", QuantityError::Numeric)]
    #[case::digitless_below_nano_upper("+.E-10", QuantityError::Numeric)]
    #[case::digitless_int32_wraps_below_nano("e4294967286", QuantityError::Numeric)]
    fn rejects_malformed_quantities(#[case] input: &str, #[case] error: QuantityError) {
        assert_eq!(parse_quantity(input), Err(error));
    }
}
