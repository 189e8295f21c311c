//! `GoDuration::parse` and its `Display` against Go's `time.ParseDuration` and
//! `Duration.String()`: same accept/reject, same nanoseconds, same text.
#![no_main]

use appwrapper_controller::duration::GoDuration;
use awconf_fuzz::oracle;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut first = [0u8; 8];
    let n = data.len().min(8);
    first[..n].copy_from_slice(&data[..n]);
    let nanos = i64::from_le_bytes(first);
    assert_eq!(
        GoDuration(nanos).to_string(),
        oracle::format_duration(nanos),
        "formatting {nanos}ns"
    );

    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let go = oracle::parse_duration(input);
    match GoDuration::parse(input) {
        Ok(d) => {
            assert!(go.ok, "Rust accepts {input:?} as {}ns, Go rejects it", d.0);
            assert_eq!(d.0, go.nanos, "nanoseconds of {input:?}");
            assert_eq!(d.to_string(), go.string, "formatting {input:?}");
        }
        Err(e) => assert!(
            !go.ok,
            "Rust rejects {input:?} ({e}), Go accepts it as {}ns",
            go.nanos
        ),
    }
});
