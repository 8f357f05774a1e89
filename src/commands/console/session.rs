//! Who a console visitor is, kept between requests: a cookie the console signs (HMAC-SHA256) with
//! the person the API server named at sign-in and when that ends, and the token every form
//! carries against cross-site requests, derived from the same key. Nothing is kept on the
//! server, so any replica started with the same key knows every session.

use chrono::{DateTime, Utc};
use ring::hmac;
use serde::{Deserialize, Serialize};

/// The session cookie's name.
pub const COOKIE: &str = "cronscaler-console";

/// A person as the API server knows them: by a TokenReview at sign-in, or as an authenticating
/// proxy in front of the console named them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    #[serde(rename = "u")]
    pub user: String,
    #[serde(rename = "g", default)]
    pub groups: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    #[serde(flatten)]
    identity: Identity,
    /// Seconds since the epoch after which the session counts for nothing.
    #[serde(rename = "e")]
    ends: i64,
}

/// The console's signing key: from `--console-session-key-file`, else made at start (every
/// session then ends with the process).
#[derive(Clone)]
pub struct Keys(hmac::Key);

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// Why the session key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the session key in {path} has {found} bytes; it needs at least 32")]
    Short { path: String, found: usize },
    #[error("the system's random number generator failed")]
    Random,
}

impl Keys {
    /// A key of `secret`'s bytes (at least 32), named `path` in the error.
    pub fn of(secret: &[u8], path: &str) -> Result<Self, KeyError> {
        let secret = secret.trim_ascii();
        if secret.len() < 32 {
            return Err(KeyError::Short {
                path: path.to_string(),
                found: secret.len(),
            });
        }
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }

    /// A key of its own, for this process alone.
    pub fn random() -> Result<Self, KeyError> {
        let rng = ring::rand::SystemRandom::new();
        hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .map(Self)
            .map_err(|_| KeyError::Random)
    }

    /// The cookie value that says `identity` until `ends`.
    pub fn seal(&self, identity: &Identity, ends: DateTime<Utc>) -> String {
        let sealed = Sealed {
            identity: identity.clone(),
            ends: ends.timestamp(),
        };
        let payload = hex(&serde_json::to_vec(&sealed).unwrap_or_default());
        let tag = hex(hmac::sign(&self.0, payload.as_bytes()).as_ref());
        format!("{payload}.{tag}")
    }

    /// Who `cookie` says, when this key signed it and it has not ended at `now`.
    pub fn open(&self, cookie: &str, now: DateTime<Utc>) -> Option<Identity> {
        let (payload, tag) = cookie.split_once('.')?;
        hmac::verify(&self.0, payload.as_bytes(), &unhex(tag)?).ok()?;
        let sealed: Sealed = serde_json::from_slice(&unhex(payload)?).ok()?;
        (now.timestamp() < sealed.ends).then_some(sealed.identity)
    }

    /// The token the forms of `identity`'s pages carry: a page of another site cannot know it,
    /// so a form it posts in their name is refused.
    pub fn form_token(&self, identity: &Identity) -> String {
        hex(hmac::sign(&self.0, &form_message(identity)).as_ref())
    }

    /// Whether `token` is [`form_token`](Self::form_token) of `identity`, compared in constant
    /// time.
    pub fn is_form_token(&self, identity: &Identity, token: &str) -> bool {
        unhex(token).is_some_and(|tag| hmac::verify(&self.0, &form_message(identity), &tag).is_ok())
    }
}

/// What a form token signs: the person, apart from what a session cookie signs.
fn form_message(identity: &Identity) -> Vec<u8> {
    let mut message = b"form:".to_vec();
    message.extend_from_slice(&serde_json::to_vec(identity).unwrap_or_default());
    message
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

/// When `token` ends, where it says so: a JWT's `exp` (a ServiceAccount's token, an OIDC ID
/// token). A session signed in with it ends no later.
pub fn token_ends(token: &str) -> Option<DateTime<Utc>> {
    use base64::Engine as _;
    let claims = token.split('.').nth(1)?;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims.trim_end_matches('='))
        .ok()?;
    let exp = &serde_json::from_slice::<serde_json::Value>(&claims).ok()?["exp"];
    // NumericDate: seconds, which some issuers write with a fraction.
    let exp = exp
        .as_i64()
        .or_else(|| exp.as_f64().map(|seconds| seconds as i64))?;
    DateTime::from_timestamp(exp, 0)
}

/// The value of the cookie `name` among a request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    fn alice() -> Identity {
        Identity {
            user: "alice".into(),
            groups: vec!["team-a".into()],
        }
    }

    fn keys() -> Keys {
        Keys::of(&[7; 32], "key").unwrap()
    }

    #[test]
    fn a_session_says_who_until_it_ends_and_nothing_once_changed_or_signed_by_another_key() {
        let now = Utc::now();
        let cookie = keys().seal(&alice(), now + TimeDelta::hours(8));
        assert_eq!(keys().open(&cookie, now), Some(alice()));
        assert_eq!(keys().open(&cookie, now + TimeDelta::hours(8)), None);
        let other = Keys::of(&[8; 32], "other").unwrap();
        assert_eq!(other.open(&cookie, now), None);
        // Another person's name with the tag of alice's session.
        let (_, tag) = cookie.split_once('.').unwrap();
        let mallory = Identity {
            user: "admin".into(),
            groups: vec!["system:masters".into()],
        };
        let forged = keys().seal(&mallory, now + TimeDelta::hours(8));
        let (payload, _) = forged.split_once('.').unwrap();
        assert_eq!(keys().open(&format!("{payload}.{tag}"), now), None);
        for garbage in ["", ".", "zz.zz", "7b7d.", "\u{e9}\u{e9}.00"] {
            assert_eq!(keys().open(garbage, now), None, "{garbage:?}");
        }
    }

    #[test]
    fn a_form_token_belongs_to_one_person_and_one_key() {
        let token = keys().form_token(&alice());
        assert!(keys().is_form_token(&alice(), &token));
        let bob = Identity {
            user: "bob".into(),
            groups: vec!["team-a".into()],
        };
        assert!(!keys().is_form_token(&bob, &token));
        assert!(!Keys::random().unwrap().is_form_token(&alice(), &token));
        assert!(!keys().is_form_token(&alice(), ""));
    }

    #[test]
    fn a_short_key_file_is_refused_by_its_path_and_length() {
        let error = Keys::of(b"  short\n", "/etc/console/key").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the session key in /etc/console/key has 5 bytes; it needs at least 32"
        );
    }

    #[test]
    fn a_session_ends_when_its_token_does() {
        use base64::Engine as _;
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"system:serviceaccount:team-a:dev","exp":1795856400}"#);
        let token = format!("eyJhbGciOiJSUzI1NiJ9.{claims}.c2lnbmF0dXJl");
        assert_eq!(
            token_ends(&token),
            DateTime::from_timestamp(1_795_856_400, 0)
        );
        let fraction =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"exp":1795856400.5}"#);
        assert_eq!(
            token_ends(&format!("a.{fraction}.c")),
            DateTime::from_timestamp(1_795_856_400, 0)
        );
        assert_eq!(token_ends("an-opaque-static-token"), None);
        assert_eq!(token_ends("a.%%%.c"), None);
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = http::HeaderMap::new();
        headers.append(
            http::header::COOKIE,
            "a=1; cronscaler-console=x.y".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, COOKIE), Some("x.y"));
        assert_eq!(cookie(&headers, "b"), None);
    }
}
