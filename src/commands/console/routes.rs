//! The console's answers: the page of environments (or the sign-in page), signing in and out,
//! and the buttons. A button is checked three times before anything is written: the person, the
//! form token of their page, and a SubjectAccessReview asked then.

use chrono::{DateTime, Utc};
use http::{HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Limited};
use hyper::body::{Body, Bytes};
use kube::{Api, api::PostParams};

use super::{
    Console,
    access::Question,
    act,
    environments::Environment,
    page::{self, Shown, encoded},
    session::{COOKIE, Identity, token_ends},
    snapshot::Snapshot,
    visitor::visitor,
};
use crate::{names::is_dns_label, scaling::on_demand::request::OverrideRequest};

/// The most a form may hold.
const FORM_LIMIT: usize = 16 * 1024;

/// The longest token taken: a ServiceAccount's or an OIDC token is well under it.
const LONGEST_TOKEN: usize = 4096;

/// What no page of the console needs: scripts, frames, other origins.
const SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Reply = Response<Bytes>;

impl Console {
    /// The answer to `request`, from a trusted proxy or not.
    pub async fn respond<B>(&self, request: http::Request<B>, from_proxy: bool) -> Reply
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let now = Utc::now();
        let who = visitor(&parts.headers, from_proxy, &self.proxy, &self.keys, now);
        match (&parts.method, parts.uri.path()) {
            (&Method::GET, "/healthz" | "/readyz") => {
                reply(StatusCode::OK, "text/plain", "ok".into())
            }
            (&Method::GET, "/chart") => match who {
                Some(who) => self.chart(&who, parts.uri.query()).await,
                None => html(StatusCode::UNAUTHORIZED, page::sign_in(None)),
            },
            (&Method::GET, "/nodes") => match who {
                Some(who) => self.nodes_page(&who).await,
                None => html(StatusCode::UNAUTHORIZED, page::sign_in(None)),
            },
            (&Method::GET, "/") => match who {
                Some(who) => self.page(&who, watched(parts.uri.query())).await,
                None => html(StatusCode::OK, page::sign_in(None)),
            },
            // A form another site's page sent, as the browser says (sign-in included: it would
            // sign a person in as someone else).
            (&Method::POST, _) if from_another_site(&parts.headers, from_proxy) => refused_form(),
            (&Method::POST, path) => {
                let Ok(form) = Limited::new(body, FORM_LIMIT).collect().await else {
                    return said(StatusCode::PAYLOAD_TOO_LARGE, "The form is too large", "");
                };
                let form = form.to_bytes();
                match path {
                    "/sign-in" => self.sign_in(&form, now).await,
                    "/sign-out" => self.sign_out(who.as_ref(), &form),
                    "/act" => match who {
                        Some(who) => self.act(&who, &form).await,
                        None => html(StatusCode::UNAUTHORIZED, page::sign_in(None)),
                    },
                    _ => said(
                        StatusCode::NOT_FOUND,
                        "Not found",
                        "The console has no such form.",
                    ),
                }
            }
            _ => said(
                StatusCode::NOT_FOUND,
                "Not found",
                "The console has no such page.",
            ),
        }
    }

    /// The cluster as the pages show it, or the answer that it could not be read (nothing is
    /// changed without it).
    async fn snapshot(&self) -> Result<std::sync::Arc<Snapshot>, Reply> {
        self.reader.now().await.map_err(|error| {
            let why = format!("The cluster could not be read, so nothing was changed: {error}");
            said(StatusCode::SERVICE_UNAVAILABLE, "Not now", &why)
        })
    }

    async fn page(&self, who: &Identity, watched: Option<String>) -> Reply {
        let snapshot = match self.snapshot().await {
            Ok(snapshot) => snapshot,
            Err(refused) => return refused,
        };
        let namespaces: Vec<&str> = (snapshot.environments.iter())
            .map(|environment| environment.namespace.as_str())
            .collect();
        // Whoever may do it cluster-wide costs two reviews, not one a Namespace.
        let everywhere = (self.access)
            .answers(who, &[Question::See(None), Question::Act(None)])
            .await;
        let seen = self
            .each(who, Question::See, everywhere[0], &namespaces)
            .await;
        let visible: Vec<&Environment> = (snapshot.environments.iter().zip(seen))
            .filter_map(|(environment, seen)| seen.then_some(environment))
            .collect();
        let namespaces: Vec<&str> = (visible.iter())
            .map(|environment| environment.namespace.as_str())
            .collect();
        let acting = self
            .each(who, Question::Act, everywhere[1], &namespaces)
            .await;
        let shown: Vec<Shown> = (visible.into_iter().zip(acting))
            .map(|(environment, may_act)| Shown {
                environment,
                may_act,
            })
            .collect();
        let token = self.keys.form_token(who);
        let body = page::environments(who, &shown, &token, watched.as_deref(), snapshot.at);
        html(StatusCode::OK, body)
    }

    /// Each node and what keeps it, and the last night, to whoever may list the Nodes, and the
    /// Pods and PodDisruptionBudgets of every Namespace themselves: the page names the
    /// workloads of every team and their budgets.
    async fn nodes_page(&self, who: &Identity) -> Reply {
        let questions = [
            Question::ListAll("", "nodes"),
            Question::ListAll("", "pods"),
            Question::ListAll("policy", "poddisruptionbudgets"),
        ];
        let answers = self.access.answers(who, &questions).await;
        let refused: Vec<String> = (questions.iter().zip(answers))
            .filter(|(_, allowed)| !allowed)
            .map(|(question, _)| question.said())
            .collect();
        if !refused.is_empty() {
            let why = format!(
                "You ({}) may not {}: the page of nodes names the Pods of every Namespace and \
                 their budgets, so it is shown to whoever may list Nodes, Pods and \
                 PodDisruptionBudgets cluster-wide.",
                who.user,
                refused.join(", nor ")
            );
            return said(StatusCode::FORBIDDEN, "Refused", &why);
        }
        match self.nodes.now().await {
            Ok(view) => html(
                StatusCode::OK,
                page::nodes(who, &view, &self.keys.form_token(who)),
            ),
            Err(error) => {
                let why = format!("The nodes could not be read: {error}");
                said(StatusCode::SERVICE_UNAVAILABLE, "Not now", &why)
            }
        }
    }

    /// The week chart of the environment `?namespace=` names, to whoever may see it.
    async fn chart(&self, who: &Identity, query: Option<&str>) -> Reply {
        let namespace =
            field(query.unwrap_or_default().as_bytes(), "namespace").unwrap_or_default();
        if !is_dns_label(&namespace) {
            return said(
                StatusCode::BAD_REQUEST,
                "No such environment",
                "Name a Namespace.",
            );
        }
        // One answer for a Namespace with no schedule and one they may not see: which of the
        // two it is is not theirs to learn, and a name no environment has asks no review.
        let unseen = || {
            let why = format!("{namespace} is no environment you may see.");
            said(StatusCode::NOT_FOUND, "No such environment", &why)
        };
        let snapshot = match self.snapshot().await {
            Ok(snapshot) => snapshot,
            Err(refused) => return refused,
        };
        if snapshot.environment(&namespace).is_none() {
            return unseen();
        }
        let questions = [Question::See(None), Question::See(Some(namespace.clone()))];
        if !self.access.answers(who, &questions).await.contains(&true) {
            return unseen();
        }
        reply(
            StatusCode::OK,
            "image/svg+xml",
            snapshot.week_chart(&namespace),
        )
    }

    /// `question` of each of `namespaces`: yes to all where it was allowed cluster-wide (`all`).
    async fn each(
        &self,
        who: &Identity,
        question: fn(Option<String>) -> Question,
        all: bool,
        namespaces: &[&str],
    ) -> Vec<bool> {
        if all {
            return vec![true; namespaces.len()];
        }
        let questions: Vec<Question> = (namespaces.iter())
            .map(|namespace| question(Some(namespace.to_string())))
            .collect();
        self.access.answers(who, &questions).await
    }

    async fn sign_in(&self, form: &[u8], now: DateTime<Utc>) -> Reply {
        let token = field(form, "token").unwrap_or_default();
        let token = token.trim();
        if token.is_empty() || token.len() > LONGEST_TOKEN {
            let said = "Give the token: one line, as `kubectl create token` prints it.";
            return html(StatusCode::BAD_REQUEST, page::sign_in(Some(said)));
        }
        // A flood of sign-ins is turned away instead of spending the console's API budget.
        let Ok(_turn) = self.signing_in.try_acquire() else {
            let said = "Too many sign-ins at once: try again in a moment.";
            return html(StatusCode::SERVICE_UNAVAILABLE, page::sign_in(Some(said)));
        };
        let token_end = token_ends(token);
        match self.access.signed_in(token).await {
            Ok(Some(_)) if token_end.is_some_and(|ends| ends <= now) => html(
                StatusCode::UNAUTHORIZED,
                page::sign_in(Some("That token has expired: make a new one.")),
            ),
            Ok(Some(who)) => {
                let ends = (now + self.session).min(token_end.unwrap_or(DateTime::<Utc>::MAX_UTC));
                let cookie = self.keys.seal(&who, ends);
                let max_age = (ends - now).num_seconds().max(0);
                let secure = if self.secure_cookie { "; Secure" } else { "" };
                let set = format!(
                    "{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
                );
                tracing::info!(user = %who.user, "signed in to the console");
                see_other("/", Some(set))
            }
            Ok(None) => html(
                StatusCode::UNAUTHORIZED,
                page::sign_in(Some("The API server does not accept that token.")),
            ),
            Err(error) => {
                tracing::warn!(%error, "a TokenReview failed");
                let said = "The API server could not check the token now: try again in a moment.";
                html(StatusCode::SERVICE_UNAVAILABLE, page::sign_in(Some(said)))
            }
        }
    }

    fn sign_out(&self, who: Option<&Identity>, form: &[u8]) -> Reply {
        let token = field(form, "token").unwrap_or_default();
        if who.is_some_and(|who| !self.keys.is_form_token(who, &token)) {
            return refused_form();
        }
        let set = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
        see_other("/", Some(set))
    }

    async fn act(&self, who: &Identity, form: &[u8]) -> Reply {
        let form = match act::read(form) {
            Ok(form) => form,
            Err(error) => {
                return said(
                    StatusCode::BAD_REQUEST,
                    "Nothing was changed",
                    &error.to_string(),
                );
            }
        };
        if !self.keys.is_form_token(who, &form.token) {
            return refused_form();
        }
        let namespace = form.namespace.clone();
        let question = Question::Act(Some(namespace.clone()));
        if !self.access.may(who, &question).await {
            let why = format!(
                "You ({}) may not {}, so nothing was changed. Ask whoever runs the cluster for \
                 the edit role in it.",
                who.user,
                question.said()
            );
            return said(StatusCode::FORBIDDEN, "Refused", &why);
        }
        let snapshot = match self.snapshot().await {
            Ok(snapshot) => snapshot,
            Err(refused) => return refused,
        };
        let Some(environment) = snapshot.environment(&namespace) else {
            let why = format!("{namespace} has no schedule, so nothing was changed.");
            return said(StatusCode::NOT_FOUND, "No such environment", &why);
        };
        let request = match form
            .action
            .request(environment.timezone, Utc::now(), &who.user)
        {
            Ok(request) => request,
            Err(error) => {
                return said(
                    StatusCode::BAD_REQUEST,
                    "Nothing was changed",
                    &error.to_string(),
                );
            }
        };
        let requests: Api<OverrideRequest> = Api::namespaced(self.client.clone(), &namespace);
        match requests.create(&PostParams::default(), &request).await {
            Ok(made) => {
                tracing::info!(user = %who.user, %namespace, request = made.metadata.name.as_deref().unwrap_or_default(), "asked from the console");
                let to = format!("{}#ns-{}", page::watching(&namespace), encoded(&namespace));
                see_other(&to, None)
            }
            Err(error) => {
                let why = format!("The request for {namespace} could not be made: {error}");
                said(StatusCode::BAD_GATEWAY, "Nothing was changed", &why)
            }
        }
    }
}

/// Whether the browser says a form comes from another site's page: by `Sec-Fetch-Site`, which
/// every current browser sends, else by an `Origin` whose host is not the one asked. (The pages'
/// `Referrer-Policy: same-origin` keeps their own `Origin` whole.)
fn from_another_site(headers: &http::HeaderMap, from_proxy: bool) -> bool {
    let said = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = said("sec-fetch-site") {
        return !matches!(site, "same-origin" | "none");
    }
    let Some(origin) = said("origin") else {
        return false;
    };
    let origin = origin.split_once("://").map(|(_, rest)| rest);
    // The host the browser asked: a trusted proxy that rewrites `Host` says it apart.
    let forwarded = (said("x-forwarded-host").filter(|_| from_proxy))
        .and_then(|hosts| hosts.split(',').next())
        .map(str::trim);
    let asked = [said("host"), forwarded];
    !asked.into_iter().flatten().any(|host| origin == Some(host))
}

/// The environment a page watches wake, from `?watch=`.
fn watched(query: Option<&str>) -> Option<String> {
    field(query?.as_bytes(), "watch")
}

/// The field `name` of a form or a query (`application/x-www-form-urlencoded`).
fn field(form: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(form)
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn refused_form() -> Reply {
    said(
        StatusCode::FORBIDDEN,
        "Refused",
        "This form was not made for you by the console (a request from another site?), so \
         nothing was changed. Reload the console and try again.",
    )
}

fn said(status: StatusCode, title: &str, why: &str) -> Reply {
    let refused = status.is_client_error() || status.is_server_error();
    html(status, page::answer(title, why, refused))
}

fn html(status: StatusCode, body: String) -> Reply {
    reply(status, "text/html; charset=utf-8", body)
}

fn see_other(to: &str, cookie: Option<String>) -> Reply {
    let mut response = reply(StatusCode::SEE_OTHER, "text/plain", String::new());
    if let Ok(to) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    if let Some(cookie) = cookie.and_then(|cookie| HeaderValue::from_str(&cookie).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Reply {
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_form_is_from_this_site_as_the_browser_or_a_trusted_proxy_says() {
        let same = headers(&[("sec-fetch-site", "same-origin"), ("origin", "https://x")]);
        assert!(!from_another_site(&same, false));
        for site in ["same-site", "cross-site"] {
            assert!(from_another_site(
                &headers(&[("sec-fetch-site", site)]),
                false
            ));
        }
        // Behind a proxy that asks the console by its Service's name.
        let proxied = headers(&[
            ("origin", "https://console.example.com"),
            ("host", "cronscaler-console.cronscaler.svc"),
            ("x-forwarded-host", "console.example.com"),
        ]);
        assert!(!from_another_site(&proxied, true));
        assert!(from_another_site(&proxied, false));
        assert!(from_another_site(
            &headers(&[("origin", "null"), ("host", "x")]),
            false
        ));
        assert!(!from_another_site(&headers(&[("host", "x")]), false));
    }
}
