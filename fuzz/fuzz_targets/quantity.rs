//! `parse_quantity` against `resource.ParseQuantity`: same accept/reject, same error kind, same
//! sign (what the controller reads of a quantity: whether it is zero or negative).
#![no_main]

use appwrapper_controller::quantity::{QuantityError, parse_quantity};
use awconf_fuzz::oracle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    if go_takes_minutes(input) {
        return;
    }
    let go = oracle::parse_quantity(input);
    match parse_quantity(input) {
        Ok(q) => {
            assert!(
                go.ok,
                "Rust accepts {input:?}, Go rejects it ({})",
                go.error
            );
            let sign = match (q.is_zero(), q.is_negative()) {
                (true, _) => 0,
                (false, true) => -1,
                (false, false) => 1,
            };
            assert_eq!(sign, go.sign, "sign of {input:?}");
        }
        Err(e) => {
            assert!(!go.ok, "Rust rejects {input:?} ({e}), Go accepts it");
            let kind = match e {
                QuantityError::Format => "format",
                QuantityError::Suffix => "suffix",
                QuantityError::Numeric => "numeric",
            };
            assert_eq!(kind, go.error, "error kind of {input:?}");
        }
    }
});

/// Go's `inf.Dec` spends minutes scaling a number with digits by a huge exponent
/// (`555e555505555555005`, whose exponent Go truncates to -1219542339); such inputs are not asked.
fn go_takes_minutes(input: &str) -> bool {
    let Some(at) = input.find(['e', 'E']) else {
        return false;
    };
    let (number, exponent) = input.split_at(at);
    let exponent = exponent[1..].parse::<i64>().map_or(0, |e| e as i32);
    number.bytes().any(|b| b.is_ascii_digit()) && exponent.unsigned_abs() > 1000
}
