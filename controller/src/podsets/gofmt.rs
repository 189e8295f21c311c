//! Go's `%v` rendering of untyped JSON values, used where the reference stringifies a value
//! (error texts, non-string label values).

use serde_json::{Number, Value};

pub fn go_sprint(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_sprint).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            // serde_json maps are sorted by key, as Go prints maps.
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_sprint(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

fn go_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    // Integers beyond int64 are floats in Go's unstructured decoding.
    let f = n.as_f64().unwrap_or(f64::NAN);
    go_float(f)
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`: shortest digits, exponent form outside [-4, 6).
fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return f.to_string();
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        f.to_string()
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case(json!(null), "<nil>")]
    #[case(json!(true), "true")]
    #[case(json!(-12), "-12")]
    #[case(json!(2.0), "2")]
    #[case(json!(2.5), "2.5")]
    #[case(json!(123456.0), "123456")]
    #[case(json!(1234567.0), "1.234567e+06")]
    #[case(json!(1e21), "1e+21")]
    #[case(json!(0.0001), "0.0001")]
    #[case(json!(0.00001), "1e-05")]
    #[case(json!(1.5e300), "1.5e+300")]
    #[case(json!(18446744073709551615u64), "1.8446744073709552e+19")]
    #[case(json!("two"), "two")]
    #[case(json!([1, "a"]), "[1 a]")]
    #[case(json!({"b": 1, "a": [true]}), "map[a:[true] b:1]")]
    fn renders_like_go(#[case] value: Value, #[case] expected: &str) {
        assert_eq!(go_sprint(&value), expected);
    }
}
