//! The podSet path walk against the reference's `utils.GetRawTemplate`: same map or same error
//! text. Input: the path on the first line, the template (a JSON object) after it.
#![no_main]

use appwrapper_controller::podsets::path::{resolve_map, resolve_map_mut};
use awconf_fuzz::oracle;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, template) = text.split_once('\n').unwrap_or((text, "{}"));
    let Ok(template) = serde_json::from_str::<Value>(template) else {
        return;
    };
    if !template.is_object() {
        return;
    }
    let go = oracle::raw_template(&template, path);
    let rust = resolve_map(&template, path);
    match &rust {
        Ok(map) => {
            assert!(go.ok, "Rust resolves {path:?}, Go says {}", go.error);
            assert_eq!(as_go_sees_it(map), go.value, "value at {path:?}");
        }
        Err(e) => {
            assert!(!go.ok, "Rust refuses {path:?} ({e}), Go resolves it");
            assert_eq!(e.to_string(), go.error, "error for {path:?}");
        }
    }

    let mut copy = template.clone();
    match (resolve_map_mut(&mut copy, path), rust) {
        (Ok(found), Ok(expected)) => assert_eq!(&*found, expected, "mutable walk of {path:?}"),
        (Err(found), Err(expected)) => assert_eq!(found, expected, "mutable walk of {path:?}"),
        (found, expected) => panic!("mutable walk of {path:?}: {found:?}, shared: {expected:?}"),
    }
});

/// The map as it comes back from Go: Go keeps each number's text, and serde_json reads a float's
/// text a last bit differently from the value it was written from (8.8888881e36).
fn as_go_sees_it(map: &serde_json::Map<String, Value>) -> Value {
    let text = serde_json::to_string(map).expect("a map encodes");
    serde_json::from_str(&text).expect("an encoded map decodes")
}
