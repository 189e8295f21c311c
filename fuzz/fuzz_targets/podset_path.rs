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
            assert_eq!(
                &Value::Object((*map).clone()),
                &go.value,
                "value at {path:?}"
            );
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
