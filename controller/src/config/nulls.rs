//! How the `null`s an overlay leaves in a configuration decode: as the reference's nil pointers,
//! maps and slices behave.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::AutopilotTaint;

/// A section the reference dereferences unchecked, so that `null` crashes it: refused.
pub fn refuse_null<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)?
        .ok_or_else(|| serde::de::Error::custom("must not be null"))
}

/// `null` is the zero value: a nil string or slice is empty, and the nil `*bool` of
/// `webhooksEnabled` reads as false. A nil `certManagement` becomes the defaults, which only
/// matter to certificate management.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// `resourceTaints`: a nil map has no entries and a nil entry has no taints.
pub fn taint_map<'de, D>(deserializer: D) -> Result<BTreeMap<String, Vec<AutopilotTaint>>, D::Error>
where
    D: Deserializer<'de>,
{
    let map = Option::<BTreeMap<String, Option<Vec<AutopilotTaint>>>>::deserialize(deserializer)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(resource, taints)| (resource, taints.unwrap_or_default()))
        .collect())
}
