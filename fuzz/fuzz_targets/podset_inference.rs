//! PodSet inference on any JSON template: never panics, and what it infers is consistent (every
//! path leads to a pod template, and the inferred PodSets validate against themselves).
#![no_main]

use appwrapper_controller::podsets::path::resolve_map;
use appwrapper_controller::podsets::{check_pod_template, infer_pod_sets, validate_pod_sets};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(template) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(pod_sets) = infer_pod_sets(&template) else {
        return;
    };
    for pod_set in &pod_sets {
        resolve_map(&template, &pod_set.path).expect("an inferred path resolves to a map");
        check_pod_template(&template, &pod_set.path).expect("an inferred path is a pod template");
    }
    validate_pod_sets(&pod_sets, &pod_sets).expect("inferred PodSets validate against themselves");
});
