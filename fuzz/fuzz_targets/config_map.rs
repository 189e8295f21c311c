//! The configuration ConfigMap: any entry is read without panicking; what is read is valid,
//! and writing it back as the reference's ConfigMap and reading that gives it again.
#![no_main]

use appwrapper_controller::config::Config;
use appwrapper_controller::config::config_map::{KEY, config_from, default_config_map};
use k8s_openapi::api::core::v1::ConfigMap;
use libfuzzer_sys::fuzz_target;

const NAMESPACE: &str = "appwrapper-system";
const NAME: &str = "appwrapper-operator-config";

fuzz_target!(|data: &[u8]| {
    let Ok(document) = std::str::from_utf8(data) else {
        return;
    };
    let config_map = ConfigMap {
        data: Some([(KEY.to_owned(), document.to_owned())].into()),
        ..ConfigMap::default()
    };
    let defaults = Config::defaults_in(NAMESPACE);
    let Ok(config) = config_from(&config_map, NAMESPACE, NAME, &defaults) else {
        return;
    };
    config
        .validate()
        .expect("a configuration that was read is valid");
    let written = default_config_map(NAMESPACE, NAME, &config).expect("it can be written");
    let read = config_from(&written, NAMESPACE, NAME, &config).expect("what was written is read");
    assert_eq!(read, config, "written from {document:?}");
});
