//! Which Namespace a request is for, and what of it the answer needs, from its headers alone.
//! Anyone can send anything, so every value is bounded and checked, and the headers only a
//! proxy should set (`X-Namespace`, `X-Forwarded-Host`, `X-Original-URI`) are read only from
//! a trusted proxy: otherwise a request's Namespace comes from its `Host` alone.

use std::net::IpAddr;

use http::{HeaderMap, Uri};
use ipnet::IpNet;

use super::request::{MAX_BY, plan::BY_A_REQUEST};
use crate::names::is_dns_label;

/// Longest header value read for a URI; longer ones are not read at all.
const MAX_URI: usize = 2048;
/// Longest host name DNS allows.
const MAX_HOST: usize = 253;
/// A Namespace's name is a DNS label.
const MAX_NAMESPACE: usize = 63;

/// Where the backend itself answers readiness, for the page to poll.
pub const STATUS_PATH: &str = "/.cronscaler/status";

/// `--wake-trusted-proxies`: the source addresses whose routing headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    pub fn new(networks: Vec<IpNet>) -> Self {
        Self(networks)
    }

    /// Whether a connection from `peer` comes from a trusted proxy. An IPv4 client of a
    /// dual-stack listener shows as `::ffff:10.0.0.1`, which counts as `10.0.0.1`.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|network| network.contains(&peer))
    }
}

/// Reads one entry of `--wake-trusted-proxies`: a CIDR (`10.0.0.0/8`) or one address.
pub fn parse_trusted_proxy(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| {
            format!("{text:?} is not an address or a CIDR (such as `10.0.0.0/8` or `10.1.2.3`)")
        })
}

/// A request as the backend reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `X-Namespace`, when a trusted proxy (ingress-nginx) sent it.
    pub namespace: Option<String>,
    /// The host it was for, lower case, without a port or a trailing dot: a trusted proxy's
    /// `X-Forwarded-Host`, else `Host`.
    pub host: Option<String>,
    /// The path and query the user asked for: a trusted proxy's `X-Original-URI`, else the
    /// request's own; printable ASCII only, and always a path on the same host.
    pub original_uri: String,
    /// A browser, which gets the page; anything else gets JSON.
    pub wants_html: bool,
}

impl Request {
    /// Reads a request's headers; `from_proxy` when it came from a trusted proxy.
    pub fn read(headers: &HeaderMap, uri: &Uri, from_proxy: bool) -> Self {
        let header = |name: &str, max: usize| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|value| !value.is_empty() && value.len() <= max)
        };
        let proxy_header = |name: &str, max: usize| header(name, max).filter(|_| from_proxy);
        let namespace = proxy_header("x-namespace", MAX_NAMESPACE)
            .filter(|name| is_dns_label(name))
            .map(str::to_string);
        let host = proxy_header("x-forwarded-host", MAX_URI)
            .and_then(|hosts| hosts.split(',').next())
            .or_else(|| header("host", MAX_URI))
            .and_then(host_name);
        let own = uri.path_and_query().map(|own| own.as_str().to_string());
        let original_uri = proxy_header("x-original-uri", MAX_URI)
            .map(str::to_string)
            .or(own)
            .map(|uri| printable(&uri))
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

    /// Who asked, as the field manager of the wake and so in its `WokenOnDemand` Event:
    /// `a request for staging.example.com/login`, printable ASCII, within the API server's limit.
    pub fn field_manager(&self) -> String {
        let path = self.original_uri.split('?').next().unwrap_or_default();
        let text = format!(
            "{BY_A_REQUEST}{}{path}",
            self.host.as_deref().unwrap_or_default()
        );
        text.chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(MAX_BY)
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
        .filter(|name| is_dns_label(name))
        .map(str::to_string)
}

/// What a browser keeps of a URI: it drops tabs and line breaks (`/\t/evil.example/` is
/// `//evil.example/` to it), so only printable ASCII is kept, before anything is checked.
fn printable(uri: &str) -> String {
    uri.chars().filter(char::is_ascii_graphic).collect()
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
    // `staging.example.com.` is the same name, fully qualified.
    let host = host.strip_suffix('.').unwrap_or(host);
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

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use proptest::prelude::*;

    use super::*;

    fn read_as(from_proxy: bool, pairs: &[(&'static str, &str)], uri: &str) -> Request {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        Request::read(&headers, &uri.parse().unwrap(), from_proxy)
    }

    fn from_proxy(pairs: &[(&'static str, &str)], uri: &str) -> Request {
        read_as(true, pairs, uri)
    }

    fn from_anyone(pairs: &[(&'static str, &str)], uri: &str) -> Request {
        read_as(false, pairs, uri)
    }

    /// What ingress-nginx sends its default backend for a 503.
    const INGRESS_NGINX: [(&str, &str); 5] = [
        ("x-namespace", "staging"),
        ("x-code", "503"),
        ("x-original-uri", "/login?next=/"),
        ("x-format", "text/html"),
        ("host", "staging.example.com"),
    ];

    #[test]
    fn a_trusted_proxy_names_the_namespace_and_the_original_uri() {
        let request = from_proxy(&INGRESS_NGINX, "/");
        assert_eq!(request.namespace.as_deref(), Some("staging"));
        assert_eq!(request.original_uri, "/login?next=/");
        assert!(request.wants_html);
        assert_eq!(
            request.field_manager(),
            "a request for staging.example.com/login"
        );
        let traefik = from_proxy(
            &[
                ("x-forwarded-host", "Staging.Example.com, proxy.internal"),
                ("host", "cronscaler-wake"),
            ],
            "/",
        );
        assert_eq!(traefik.host.as_deref(), Some("staging.example.com"));
    }

    #[test]
    fn from_anyone_else_only_the_host_and_the_request_s_own_path_count() {
        let request = from_anyone(&INGRESS_NGINX, "/own");
        assert_eq!(request.namespace, None, "X-Namespace is a proxy's to send");
        assert_eq!(request.host.as_deref(), Some("staging.example.com"));
        assert_eq!(request.original_uri, "/own");
        let forwarded = from_anyone(
            &[
                ("x-forwarded-host", "victim.example.com"),
                ("host", "nothing.invalid"),
            ],
            "/",
        );
        assert_eq!(forwarded.host.as_deref(), Some("nothing.invalid"));
    }

    #[test]
    fn trusted_proxies_are_cidrs_or_addresses_and_an_ipv4_client_of_a_dual_stack_listener_counts() {
        let trusted = TrustedProxies::new(vec![
            parse_trusted_proxy("10.0.0.0/8").unwrap(),
            parse_trusted_proxy(" 192.168.1.7 ").unwrap(),
        ]);
        assert!(trusted.trusts("10.1.2.3".parse().unwrap()));
        assert!(trusted.trusts("::ffff:10.1.2.3".parse().unwrap()));
        assert!(trusted.trusts("192.168.1.7".parse().unwrap()));
        assert!(!trusted.trusts("192.168.1.8".parse().unwrap()));
        assert!(!TrustedProxies::default().trusts("127.0.0.1".parse().unwrap()));
        let error = parse_trusted_proxy("10.0.0.0/33").unwrap_err();
        assert!(error.contains("\"10.0.0.0/33\""), "{error}");
    }

    #[test]
    fn hosts_are_lower_case_without_port_or_trailing_dot() {
        for (sent, read) in [
            ("Staging.Example.com:443", Some("staging.example.com")),
            ("staging.example.com.", Some("staging.example.com")),
            ("staging.example.com.:8080", Some("staging.example.com")),
            ("staging..example.com", None),
            (".", None),
            ("[::1]:8080", None),
            ("sta ging.example.com", None),
        ] {
            assert_eq!(
                from_anyone(&[("host", sent)], "/").host.as_deref(),
                read,
                "{sent}"
            );
        }
    }

    #[test]
    fn the_page_never_sends_the_user_to_another_host() {
        for sent in [
            "//evil.example/login",
            "/\\evil.example/",
            "https://evil.example/",
            "/\t/evil.example/",
            "/\t\t/evil.example/",
            " //evil.example/",
        ] {
            let request = from_proxy(&[("x-original-uri", sent)], "/");
            assert_eq!(request.original_uri, "/", "{sent:?}");
        }
        assert_eq!(from_anyone(&[], "//evil.example/x").original_uri, "/");
        assert_eq!(
            from_anyone(&[], "/login?next=%2F%2Fevil.example").original_uri,
            "/login?next=%2F%2Fevil.example"
        );
    }

    #[test]
    fn the_page_s_poll_is_known_through_the_proxy_and_its_namespace_is_checked() {
        let poll = from_proxy(
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
        assert!(from_anyone(&[], "/.cronscaler/status?namespace=staging").is_status_poll());
    }

    proptest! {
        #[test]
        fn any_headers_read_without_panic_and_name_within_limits(
            namespace in "\\PC{0,80}",
            host in "\\PC{0,300}",
            uri in "\\PC{0,3000}",
            trusted in any::<bool>(),
        ) {
            let mut headers = HeaderMap::new();
            for (name, value) in [("x-namespace", &namespace), ("host", &host), ("x-original-uri", &uri)] {
                if let Ok(value) = HeaderValue::from_str(value) {
                    headers.insert(name, value);
                }
            }
            let request = Request::read(&headers, &Uri::from_static("/"), trusted);
            prop_assert!(request.original_uri.len() <= MAX_URI);
            prop_assert!(request.field_manager().len() <= MAX_BY);
            prop_assert!(request.field_manager().chars().all(|c| c.is_ascii_graphic() || c == ' '));
            prop_assert!(request.namespace.is_none_or(|name| is_dns_label(&name)));
        }

        /// Whatever a proxy passes on (tabs, line breaks a browser drops, encoded or other
        /// characters), the URI the page opens is printable ASCII and a path on the same host.
        #[test]
        fn an_original_uri_is_printable_and_stays_on_the_host(
            parts in prop::collection::vec(prop::sample::select(vec![
                "/", "\\", "\t", "\r", "\n", " ", "%2F", "%09", "evil.example", "?", "#", ":", "é", "\u{7f}",
            ]), 0..8),
        ) {
            let sent: String = parts.concat();
            let Ok(value) = HeaderValue::from_bytes(sent.as_bytes()) else {
                return Ok(());
            };
            let mut headers = HeaderMap::new();
            headers.insert("x-original-uri", value);
            let read = Request::read(&headers, &Uri::from_static("/"), true).original_uri;
            prop_assert!(read.chars().all(|c| c.is_ascii_graphic()), "{read:?}");
            prop_assert!(read.starts_with('/'), "{read:?}");
            let browser_sees: String = read.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
            prop_assert!(!browser_sees.starts_with("//") && !browser_sees.starts_with("/\\"), "{read:?}");
        }

        /// Only a trusted proxy's headers name a Namespace or another host, whatever is sent.
        #[test]
        fn from_anyone_the_routing_headers_count_for_nothing(
            namespace in "[a-z]{1,10}",
            forwarded in "[a-z]{1,10}\\.example",
        ) {
            let mut headers = HeaderMap::new();
            headers.insert("x-namespace", HeaderValue::from_str(&namespace).unwrap());
            headers.insert("x-forwarded-host", HeaderValue::from_str(&forwarded).unwrap());
            headers.insert("x-original-uri", HeaderValue::from_static("/elsewhere"));
            headers.insert("host", HeaderValue::from_static("own.example"));
            let request = Request::read(&headers, &Uri::from_static("/own"), false);
            prop_assert_eq!(request.namespace, None);
            prop_assert_eq!(request.host.as_deref(), Some("own.example"));
            prop_assert_eq!(request.original_uri, "/own");
        }
    }
}
