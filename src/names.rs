//! Names as the API server accepts them: what a name read from an object or a request must be
//! before it is shown, put in a query or asked about.

/// The longest DNS label: a Namespace's or a Service's name.
const MAX_LABEL: usize = 63;
/// The longest DNS subdomain: most objects' names.
const MAX_SUBDOMAIN: usize = 253;

/// A DNS label (RFC 1123), as the names of Namespaces and Services are.
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LABEL
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// A DNS subdomain (RFC 1123), as the names of Deployments, Pods and most objects are.
pub fn is_dns_subdomain(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= MAX_SUBDOMAIN
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && (name.bytes())
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains_are_as_the_api_server_takes_them() {
        for label in ["a", "team-a", "0", &"a".repeat(63)] {
            assert!(is_dns_label(label) && is_dns_subdomain(label), "{label}");
        }
        for name in ["api.v2", "web-7d9f8c6b5-x2kqz", &"a".repeat(253)] {
            assert!(is_dns_subdomain(name), "{name}");
        }
        assert!(!is_dns_label("api.v2"));
        for strange in [
            "",
            "-a",
            "a-",
            "A",
            "a b",
            "web|.*",
            "a\"}",
            ".a",
            "a.",
            &"a".repeat(254),
        ] {
            assert!(!is_dns_subdomain(strange), "{strange}");
        }
        assert!(!is_dns_label(&"a".repeat(64)));
    }
}
