//! Which Namespace a request is for, and what of it the answer needs, from its headers alone:
//! ingress-nginx's custom-errors headers first, else its host against the Namespaces'
//! `wake-hosts`. Every value is bounded and checked, since anyone can send anything.

use http::{HeaderMap, Uri};

use crate::schedule::WakeOnRequest;

/// Longest header value read for a URI; longer ones are not read at all.
const MAX_URI: usize = 2048;
/// Longest host name DNS allows.
const MAX_HOST: usize = 253;
/// A Namespace's name is a DNS label.
const MAX_NAMESPACE: usize = 63;
/// The API server's limit on a field manager, which names the request in the Event.
const MAX_FIELD_MANAGER: usize = 128;

/// Where the backend itself answers readiness, for the page to poll.
pub const STATUS_PATH: &str = "/.cronscaler/status";

/// A request as the backend reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `X-Namespace`, when ingress-nginx sent it.
    pub namespace: Option<String>,
    /// The host it was for, lower case, without a port.
    pub host: Option<String>,
    /// The path and query the user asked for: `X-Original-URI`, else the request's own.
    pub original_uri: String,
    /// A browser, which gets the page; anything else gets JSON.
    pub wants_html: bool,
}

impl Request {
    pub fn read(headers: &HeaderMap, uri: &Uri) -> Self {
        let header = |name: &str, max: usize| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|value| !value.is_empty() && value.len() <= max)
        };
        let namespace = header("x-namespace", MAX_NAMESPACE)
            .filter(|name| is_dns_label(name))
            .map(str::to_string);
        let host = header("x-forwarded-host", MAX_URI)
            .and_then(|hosts| hosts.split(',').next())
            .or_else(|| header("host", MAX_URI))
            .and_then(host_name);
        let own = uri.path_and_query().map(|own| own.as_str().to_string());
        let original_uri = header("x-original-uri", MAX_URI)
            .map(str::to_string)
            .or(own)
            .filter(|uri| is_path_on_this_host(uri))
            .unwrap_or_else(|| "/".to_string());
        let wants_html = header("x-format", MAX_URI)
            .or_else(|| header("accept", MAX_URI))
            .is_some_and(|value| value.contains("text/html"));
        Self {
            namespace,
            host,
            original_uri,
            wants_html,
        }
    }

    /// Whether the user's request was the page's own poll, come back through the proxy.
    pub fn is_status_poll(&self) -> bool {
        self.original_uri.split('?').next() == Some(STATUS_PATH)
    }

    /// Whether this request is for the opted-in Namespace `name`: named by the proxy, or one
    /// of its `wake-hosts` serves the request's host.
    pub fn is_for(&self, name: &str, opt_in: &WakeOnRequest) -> bool {
        match (&self.namespace, &self.host) {
            (Some(named), _) => named == name,
            (None, Some(host)) => opt_in.serves(host),
            (None, None) => false,
        }
    }

    /// Who asked, as the field manager of the wake and so in its `WokenOnDemand` Event:
    /// `a request for staging.example.com/login`, printable ASCII, within the API server's limit.
    pub fn field_manager(&self) -> String {
        let path = self.original_uri.split('?').next().unwrap_or_default();
        let text = format!(
            "a request for {}{path}",
            self.host.as_deref().unwrap_or_default()
        );
        text.chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(MAX_FIELD_MANAGER)
            .collect()
    }
}

/// The query's `namespace`, for the status the page polls.
pub fn namespace_of_query(uri: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == "namespace")
        .map(|(_, value)| value)
        .filter(|name| name.len() <= MAX_NAMESPACE && is_dns_label(name))
        .map(str::to_string)
}

/// Whether `uri` is a path the page may load on the host it was served for: `//evil.example/`
/// (or `/\\evil.example/`, which browsers read alike) would send the user to another host.
fn is_path_on_this_host(uri: &str) -> bool {
    uri.starts_with('/') && !uri.starts_with("//") && !uri.starts_with("/\\")
}

fn host_name(value: &str) -> Option<String> {
    let value = value.trim().to_ascii_lowercase();
    // `[::1]:8080`: an address, never a Namespace's host.
    if value.starts_with('[') {
        return None;
    }
    let host = value.split(':').next().unwrap_or_default();
    let valid = !host.is_empty()
        && host.len() <= MAX_HOST
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        });
    valid.then(|| host.to_string())
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{WAKE_HOSTS, WAKE_ON_REQUEST, test_support::annotations};

    fn read(pairs: &[(&'static str, &str)], uri: &str) -> Request {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        Request::read(&headers, &uri.parse().unwrap())
    }

    fn opted_in(hosts: &str) -> WakeOnRequest {
        WakeOnRequest::of(&annotations(&[
            (WAKE_ON_REQUEST, "2h"),
            (WAKE_HOSTS, hosts),
        ]))
        .unwrap()
    }

    /// The first of `among` the request is for, as the backend looks in name order.
    fn namespace_among(request: &Request, among: &[(&str, &WakeOnRequest)]) -> Option<String> {
        among
            .iter()
            .find(|(name, opt_in)| request.is_for(name, opt_in))
            .map(|(name, _)| name.to_string())
    }

    #[test]
    fn ingress_nginx_names_the_namespace_and_the_original_uri() {
        let request = read(
            &[
                ("x-namespace", "staging"),
                ("x-code", "503"),
                ("x-original-uri", "/login?next=/"),
                ("x-format", "text/html"),
                ("host", "staging.example.com"),
            ],
            "/",
        );
        let staging = opted_in("other.example.com");
        assert_eq!(
            namespace_among(&request, &[("preview", &staging), ("staging", &staging)]),
            Some("staging".into())
        );
        assert_eq!(request.original_uri, "/login?next=/");
        assert!(request.wants_html);
        assert_eq!(
            request.field_manager(),
            "a request for staging.example.com/login"
        );
    }

    #[test]
    fn a_host_finds_its_namespace_by_wake_hosts_and_a_wildcard_matches_one_label() {
        let preview = opted_in("*.preview.example.com");
        let staging = opted_in("staging.example.com");
        let among = [("preview", &preview), ("staging", &staging)];
        let for_host = |host: &str| namespace_among(&read(&[("host", host)], "/"), &among);
        assert_eq!(for_host("Staging.Example.com:443"), Some("staging".into()));
        assert_eq!(
            for_host("pr-12.preview.example.com"),
            Some("preview".into())
        );
        assert_eq!(for_host("a.b.preview.example.com"), None);
        assert_eq!(for_host("example.com"), None);
        let forwarded = read(
            &[
                ("x-forwarded-host", "staging.example.com, proxy.internal"),
                ("host", "cronscaler-wake"),
            ],
            "/",
        );
        assert_eq!(namespace_among(&forwarded, &among), Some("staging".into()));
        assert_eq!(namespace_among(&read(&[], "/"), &among), None);
    }

    #[test]
    fn the_page_never_sends_the_user_to_another_host() {
        for sent in [
            "//evil.example/login",
            "/\\evil.example/",
            "https://evil.example/",
        ] {
            let request = read(&[("x-original-uri", sent)], "/");
            assert_eq!(request.original_uri, "/", "{sent}");
        }
        assert_eq!(read(&[], "//evil.example/x").original_uri, "/");
        assert_eq!(read(&[], "/login?next=%2F").original_uri, "/login?next=%2F");
    }

    #[test]
    fn a_namespace_not_opted_in_is_never_named() {
        let staging = opted_in("staging.example.com");
        let request = read(&[("x-namespace", "kube-system")], "/");
        assert_eq!(namespace_among(&request, &[("staging", &staging)]), None);
    }

    #[test]
    fn the_page_s_poll_is_known_through_the_proxy_and_its_namespace_is_checked() {
        let poll = read(
            &[("x-original-uri", "/.cronscaler/status?namespace=staging")],
            "/",
        );
        assert!(poll.is_status_poll());
        assert_eq!(
            namespace_of_query(&poll.original_uri),
            Some("staging".into())
        );
        assert_eq!(
            namespace_of_query("/.cronscaler/status?namespace=<script>"),
            None
        );
    }

    proptest! {
        #[test]
        fn any_headers_read_without_panic_and_name_within_limits(
            namespace in "\\PC{0,80}",
            host in "\\PC{0,300}",
            uri in "\\PC{0,3000}",
        ) {
            let mut headers = HeaderMap::new();
            for (name, value) in [("x-namespace", &namespace), ("host", &host), ("x-original-uri", &uri)] {
                if let Ok(value) = HeaderValue::from_str(value) {
                    headers.insert(name, value);
                }
            }
            let request = Request::read(&headers, &Uri::from_static("/"));
            prop_assert!(request.original_uri.len() <= MAX_URI);
            prop_assert!(request.field_manager().len() <= MAX_FIELD_MANAGER);
            prop_assert!(request.field_manager().chars().all(|c| c.is_ascii_graphic() || c == ' '));
            prop_assert!(request.namespace.is_none_or(|name| is_dns_label(&name)));
        }
    }
}
