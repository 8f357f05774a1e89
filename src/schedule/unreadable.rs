//! Values another tool's annotations hold that cronscaler cannot read as that tool meant them
//! (kube-downscaler's forced uptime as a time span). They are held aside under a marker key, so
//! that inheritance carries them like ours and parsing refuses them, naming the key the user
//! wrote. Only ever in memory: a key with two slashes cannot be an annotation.

use super::invalid::{InvalidAnnotation, invalid};

const MARKER: &str = "cronscaler.dev/unreadable/";

/// The key under which `theirs` (`downscaler/force-uptime`) is held aside.
pub fn held_aside(theirs: &str) -> String {
    format!("{MARKER}{theirs}")
}

pub fn is_held_aside(key: &str) -> bool {
    key.starts_with(MARKER)
}

/// The refusal of a value held aside under `key`.
pub fn refusal(key: &str, value: &str) -> InvalidAnnotation {
    invalid(
        key.trim_start_matches(MARKER),
        value,
        "is not `true` or `false`: kube-downscaler reads it as a time span, which cronscaler \
         does not; use `true` while it should hold, or cronscaler.dev/awake-until or \
         cronscaler.dev/asleep-until for a stretch that ends",
    )
}
