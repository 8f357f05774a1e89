//! Who sent a request to the console: the person an authenticating proxy names in its headers,
//! believed only when the connection comes from `--console-trusted-proxies`, else the person
//! of the session cookie. Anyone else is nobody, and sees only the sign-in page.

use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderName};

use super::session::{COOKIE, Identity, Keys, cookie};

/// The headers an authenticating proxy names its user and their groups in
/// (oauth2-proxy's `X-Forwarded-User` and `X-Forwarded-Groups` by default).
#[derive(Debug, Clone)]
pub struct ProxyHeaders {
    pub user: HeaderName,
    pub groups: HeaderName,
}

/// Who the request is from, or `None`: nobody signed in.
pub fn visitor(
    headers: &HeaderMap,
    from_trusted_proxy: bool,
    proxy: &ProxyHeaders,
    keys: &Keys,
    now: DateTime<Utc>,
) -> Option<Identity> {
    let header = |name: &HeaderName| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    // `system:` names are the API server's own (its masters, its nodes, its ServiceAccounts):
    // no single sign-on hands them out, so a proxy that says one passes on a forgery.
    let reserved = |name: &String| name.starts_with("system:");
    if from_trusted_proxy && let [user] = header(&proxy.user).as_slice() {
        if reserved(user) {
            return None;
        }
        let mut groups = header(&proxy.groups);
        groups.retain(|group| !reserved(group));
        // As the API server's own front-proxy authentication adds it: what RBAC grants every
        // signed-in person is theirs too.
        groups.push("system:authenticated".into());
        return Some(Identity {
            user: user.clone(),
            groups,
        });
    }
    keys.open(cookie(headers, COOKIE)?, now)
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    fn proxy() -> ProxyHeaders {
        ProxyHeaders {
            user: HeaderName::from_static("x-forwarded-user"),
            groups: HeaderName::from_static("x-forwarded-groups"),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_proxy_s_headers_count_only_from_a_trusted_address() {
        let keys = Keys::random().unwrap();
        let now = Utc::now();
        let sent = headers(&[
            ("x-forwarded-user", "alice"),
            ("x-forwarded-groups", "team-a, devs"),
        ]);
        assert_eq!(
            visitor(&sent, true, &proxy(), &keys, now),
            Some(Identity {
                user: "alice".into(),
                groups: vec![
                    "team-a".into(),
                    "devs".into(),
                    "system:authenticated".into()
                ],
            })
        );
        assert_eq!(visitor(&sent, false, &proxy(), &keys, now), None);
        let forged = headers(&[
            ("x-forwarded-user", "alice"),
            ("x-forwarded-groups", "system:masters,devs"),
        ]);
        assert_eq!(
            visitor(&forged, true, &proxy(), &keys, now).map(|who| who.groups),
            Some(vec!["devs".to_string(), "system:authenticated".to_string()])
        );
        let admin = headers(&[("x-forwarded-user", "system:admin")]);
        assert_eq!(visitor(&admin, true, &proxy(), &keys, now), None);
    }

    #[test]
    fn a_session_cookie_names_its_person_and_two_user_headers_name_nobody() {
        let keys = Keys::random().unwrap();
        let now = Utc::now();
        let bob = Identity {
            user: "bob".into(),
            groups: vec![],
        };
        let cookie = format!("{COOKIE}={}", keys.seal(&bob, now + TimeDelta::hours(1)));
        let sent = headers(&[
            ("cookie", &cookie),
            ("x-forwarded-user", "alice"),
            ("x-forwarded-user", "admin"),
        ]);
        assert_eq!(visitor(&sent, true, &proxy(), &keys, now), Some(bob));
        assert_eq!(visitor(&headers(&[]), true, &proxy(), &keys, now), None);
    }
}
