//! Wake on request: what a Namespace says about being woken by the first request that reaches
//! it. `wake-on-request` opts it in and says for how long a request wakes it; `wake-hosts`
//! names the hosts whose requests are for it; `last-warm-up` is what the controller measured
//! from its last wake to all ready.

use std::{collections::BTreeMap, time::Duration};

use super::invalid::{InvalidAnnotation, invalid};
use super::keys::{LAST_WARM_UP, WAKE_HOSTS, WAKE_ON_REQUEST};

mod claims;

pub use claims::{Contest, HostClaims};

/// Longest host name DNS allows.
const MAX_HOST: usize = 253;

/// A host name of `wake-hosts`, exact or one label of wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    Exact(String),
    /// `*.example.com`: any one label before `.example.com` (held here with its dot).
    AnyLabelOf(String),
}

impl HostPattern {
    /// A host as `wake-hosts`, an Ingress rule or an HTTPRoute's `hostnames` write it.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        // `staging.example.com.` is the same name, fully qualified.
        let text = text.strip_suffix('.').map(str::to_string).unwrap_or(text);
        let (wildcard, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, text),
        };
        let valid_label = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        };
        if name.is_empty() || name.len() > MAX_HOST || !name.split('.').all(valid_label) {
            return None;
        }
        Some(if wildcard {
            HostPattern::AnyLabelOf(format!(".{name}"))
        } else {
            HostPattern::Exact(name)
        })
    }

    /// Whether `host` (lower case, without a port) is one this pattern names.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(name) => host == name,
            HostPattern::AnyLabelOf(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
        }
    }
}

/// Reads `wake-on-request`: a positive duration.
pub fn parse_wake_on_request(key: &str, value: &str) -> Result<Duration, InvalidAnnotation> {
    match humantime::parse_duration(value) {
        Ok(duration) if !duration.is_zero() => Ok(duration),
        _ => Err(invalid(
            key,
            value,
            "must be how long a request wakes the Namespace for, such as `2h` or `30m`",
        )),
    }
}

/// Reads `wake-hosts`: host names, comma-separated, each exact or `*.` and a domain.
pub fn parse_wake_hosts(key: &str, value: &str) -> Result<Vec<HostPattern>, InvalidAnnotation> {
    let mut hosts = Vec::new();
    for part in value.split(',') {
        match HostPattern::parse(part) {
            Some(host) => hosts.push(host),
            None => {
                return Err(invalid(
                    key,
                    value,
                    &format!(
                        "{:?} is not a host name (such as `staging.example.com` or \
                         `*.preview.example.com`)",
                        part.trim()
                    ),
                ));
            }
        }
    }
    Ok(hosts)
}

/// What a Namespace's annotations say about waking it on request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeOnRequest {
    /// How long a request wakes it for.
    pub duration: Duration,
    pub hosts: Vec<HostPattern>,
    /// The last measured warm-up, for the page's estimate.
    pub last_warm_up: Option<Duration>,
}

impl WakeOnRequest {
    /// The Namespace's opt-in, if it has a valid one.
    pub fn of(annotations: &BTreeMap<String, String>) -> Option<Self> {
        let duration =
            parse_wake_on_request(WAKE_ON_REQUEST, annotations.get(WAKE_ON_REQUEST)?).ok()?;
        let hosts = annotations
            .get(WAKE_HOSTS)
            .and_then(|value| parse_wake_hosts(WAKE_HOSTS, value).ok())
            .unwrap_or_default();
        let last_warm_up = annotations
            .get(LAST_WARM_UP)
            .and_then(|value| humantime::parse_duration(value).ok());
        Some(Self {
            duration,
            hosts,
            last_warm_up,
        })
    }

    /// Whether a request for `host` is for this Namespace.
    pub fn serves(&self, host: &str) -> bool {
        self.hosts.iter().any(|pattern| pattern.matches(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::annotations;

    #[test]
    fn a_wildcard_matches_exactly_one_label() {
        let hosts =
            parse_wake_hosts(WAKE_HOSTS, "staging.example.com, *.preview.example.com").unwrap();
        let any = |host: &str| hosts.iter().any(|pattern| pattern.matches(host));
        assert!(any("staging.example.com"));
        assert!(any("pr-42.preview.example.com"));
        assert!(!any("preview.example.com"), "the wildcard needs a label");
        assert!(!any("a.pr-42.preview.example.com"), "one label only");
        assert!(!any("staging.example.com.evil.net"));
        assert!(!any("xstaging.example.com"));
    }

    #[test]
    fn bad_hosts_and_durations_are_refused_naming_the_value() {
        for bad in [
            "",
            "staging..example.com",
            "*.",
            "exa mple.com",
            "-a.example.com",
            "a.*.com",
        ] {
            let error = parse_wake_hosts(WAKE_HOSTS, bad).unwrap_err().to_string();
            assert!(error.contains(WAKE_HOSTS), "{error}");
        }
        for bad in ["", "0s", "two hours", "-1h"] {
            let error = parse_wake_on_request(WAKE_ON_REQUEST, bad)
                .unwrap_err()
                .to_string();
            assert!(error.contains("such as `2h`"), "{error}");
        }
        assert_eq!(
            parse_wake_on_request(WAKE_ON_REQUEST, "90m").unwrap(),
            Duration::from_secs(5400)
        );
    }

    #[test]
    fn only_a_namespace_with_a_valid_duration_is_opted_in() {
        assert_eq!(
            WakeOnRequest::of(&annotations(&[(WAKE_HOSTS, "a.example.com")])),
            None
        );
        assert_eq!(
            WakeOnRequest::of(&annotations(&[(WAKE_ON_REQUEST, "soon")])),
            None
        );
        let opted = WakeOnRequest::of(&annotations(&[
            (WAKE_ON_REQUEST, "2h"),
            (WAKE_HOSTS, "Staging.Example.com"),
            (LAST_WARM_UP, "42s"),
        ]))
        .unwrap();
        assert_eq!(opted.duration, Duration::from_secs(7200));
        assert!(opted.serves("staging.example.com"));
        assert_eq!(opted.last_warm_up, Some(Duration::from_secs(42)));
    }
}
