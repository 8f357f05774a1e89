//! The wake-up backend's state on this replica, and how it answers one request: it finds the
//! Namespace from the watch's cache, reads its readiness at most once a second, and writes a
//! wake at most once per cooldown, so a flood of requests costs the API server almost nothing.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
};

use chrono::{DateTime, TimeDelta, Utc};
use http::{HeaderValue, Response, StatusCode, header};

use super::{
    answer::{Decision, Settings, decide},
    cluster::{Asked, Cluster},
    page::{Progress, page},
    route::{Request, namespace_of_query},
};
use crate::{
    namespaces::NamespaceSchedules,
    ops::metrics::{Metrics, WakeResult},
    schedule::WakeOnRequest,
};

/// What a program is told to wait before it asks again.
const RETRY_AFTER_SECONDS: &str = "10";
/// How often the Namespaces woken long ago, deleted or opted out are forgotten.
const FORGET_EVERY: TimeDelta = TimeDelta::minutes(1);

/// An opted-in Namespace's annotations, and its opt-in read from them.
type OptedIn = (BTreeMap<String, String>, WakeOnRequest);

pub struct Backend {
    cluster: Arc<Cluster>,
    schedules: NamespaceSchedules,
    metrics: Metrics,
    settings: Settings,
    woken: Arc<Mutex<Woken>>,
}

/// When this replica last woke each Namespace, within the cooldown.
#[derive(Default)]
struct Woken {
    at: HashMap<String, DateTime<Utc>>,
    forgotten: Option<DateTime<Utc>>,
}

/// A response's status, headers and body, before hyper's types.
pub struct Answer {
    pub status: StatusCode,
    pub content_type: Option<&'static str>,
    pub retry_after: bool,
    pub body: String,
}

impl Answer {
    /// The bare 503 of every refusal: it names nothing, so it tells nothing.
    pub fn refused() -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            content_type: None,
            retry_after: false,
            body: String::new(),
        }
    }

    pub fn into_response<B: From<String>>(self) -> Response<B> {
        let mut response = Response::new(B::from(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(content_type) = self.content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        if self.retry_after {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

impl Backend {
    pub fn new(
        cluster: Arc<Cluster>,
        schedules: NamespaceSchedules,
        metrics: Metrics,
        settings: Settings,
    ) -> Self {
        Self {
            cluster,
            schedules,
            metrics,
            settings,
            woken: Arc::default(),
        }
    }

    /// Answers one request, whatever its method and path: the proxy sends its errors here.
    pub async fn answer(&self, request: &Request, now: DateTime<Utc>) -> Answer {
        if request.is_status_poll() {
            return self.status(request, now).await;
        }
        let Some((namespace, (annotations, opt_in))) = self.route(request) else {
            self.metrics.wake_request("", WakeResult::Refused);
            return Answer::refused();
        };
        // Read before the ask is sent: the two then share the backend's idle connection to the
        // API server, where an ask sent first would leave the read a new connection to open (a
        // TLS handshake, seconds on a machine under attack).
        let readiness = self.cluster.readiness(&namespace).await;
        let woken_here = self.woken_at(&namespace);
        let result = match decide(self.settings, &annotations, now, woken_here, readiness) {
            Decision::Wake if self.claim(&namespace, now) => {
                self.ask(&namespace, request.field_manager(), now);
                WakeResult::Woken
            }
            Decision::Wake => WakeResult::Waking,
            decided => decided.result(),
        };
        self.metrics.wake_request(&namespace, result);
        let progress = Progress::new(&namespace, readiness, result != WakeResult::Awake);
        if request.wants_html {
            let warm_up = opt_in.last_warm_up.map(|took| took.as_secs());
            Answer {
                status: StatusCode::SERVICE_UNAVAILABLE,
                content_type: Some("text/html; charset=utf-8"),
                retry_after: true,
                body: page(&progress, &request.original_uri, warm_up),
            }
        } else {
            Answer {
                status: StatusCode::SERVICE_UNAVAILABLE,
                content_type: Some("application/json"),
                retry_after: true,
                body: progress.json(),
            }
        }
    }

    /// `GET /.cronscaler/status?namespace=NS`, asked directly or through the proxy: the
    /// progress of the Namespace the request's host belongs to, and of no other, so nobody
    /// learns which Namespaces opted in by asking.
    async fn status(&self, request: &Request, now: DateTime<Utc>) -> Answer {
        let asked = namespace_of_query(&request.original_uri);
        let routed = self
            .route(request)
            .filter(|(namespace, _)| asked.as_ref().is_none_or(|asked| asked == namespace));
        let Some((namespace, _)) = routed else {
            self.metrics.wake_request("", WakeResult::Refused);
            return Answer::refused();
        };
        let readiness = self.cluster.readiness(&namespace).await;
        let waking = self
            .woken_at(&namespace)
            .is_some_and(|at| now < at + self.settings.cooldown);
        self.metrics.wake_request(&namespace, WakeResult::Status);
        Answer {
            status: StatusCode::OK,
            content_type: Some("application/json"),
            retry_after: false,
            body: Progress::new(&namespace, readiness, waking).json(),
        }
    }

    /// The opted-in Namespace the request is for, with its annotations and opt-in: the one a
    /// trusted proxy named, else the one whose `wake-hosts` claims its host.
    fn route(&self, request: &Request) -> Option<(String, OptedIn)> {
        let namespace = match &request.namespace {
            Some(named) => named.clone(),
            None => self
                .schedules
                .host_claims()
                .route(request.host.as_deref()?)?
                .to_string(),
        };
        let annotations = self.schedules.annotations_of(&namespace)?;
        let opt_in = WakeOnRequest::of(&annotations)?;
        Some((namespace, (annotations, opt_in)))
    }

    /// Asks the controller for `namespace`'s wake, for `by`, in the background: the page answers
    /// at once, however long the API server takes, and the claim keeps a flood to this one ask.
    /// An ask that fails gives back its claim (made at `claimed`, and no later one), so that
    /// the next request asks again.
    fn ask(&self, namespace: &str, by: String, claimed: DateTime<Utc>) {
        let (cluster, woken) = (self.cluster.clone(), self.woken.clone());
        let namespace = namespace.to_string();
        tokio::spawn(async move {
            match cluster.ask_wake(&namespace, &by).await {
                Ok(Asked::Now) => tracing::info!(namespace, by, "asked to wake by a request"),
                Ok(Asked::Already) => {}
                Err(error) => {
                    tracing::warn!(namespace, %error, "could not ask for the Namespace's wake; the next request asks again");
                    let mut woken = woken.lock().unwrap_or_else(PoisonError::into_inner);
                    if woken.at.get(&namespace) == Some(&claimed) {
                        woken.at.remove(&namespace);
                    }
                }
            }
        });
    }

    fn woken_at(&self, namespace: &str) -> Option<DateTime<Utc>> {
        self.woken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .at
            .get(namespace)
            .copied()
    }

    /// Takes the wake for this request, unless another took it within the cooldown.
    fn claim(&self, namespace: &str, now: DateTime<Utc>) -> bool {
        let cooldown = self.settings.cooldown;
        let mut woken = self.woken.lock().unwrap_or_else(PoisonError::into_inner);
        if woken
            .forgotten
            .is_none_or(|forgotten| now >= forgotten + FORGET_EVERY)
        {
            woken.forgotten = Some(now);
            forget_woken(&mut woken.at, now, cooldown, |namespace| {
                self.schedules
                    .annotations_of(namespace)
                    .is_some_and(|annotations| WakeOnRequest::of(&annotations).is_some())
            });
        }
        if woken
            .at
            .get(namespace)
            .is_some_and(|at| now < *at + cooldown)
        {
            return false;
        }
        woken.at.insert(namespace.to_string(), now);
        true
    }
}

/// Keeps of `woken` only the wakes still within the cooldown of Namespaces still opted in.
fn forget_woken(
    woken: &mut HashMap<String, DateTime<Utc>>,
    now: DateTime<Utc>,
    cooldown: TimeDelta,
    opted_in: impl Fn(&str) -> bool,
) {
    woken.retain(|namespace, at| now < *at + cooldown && opted_in(namespace));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::at;

    #[test]
    fn wakes_past_their_cooldown_and_namespaces_no_longer_opted_in_are_forgotten() {
        let mut woken: HashMap<String, DateTime<Utc>> = [
            ("recent", "2026-11-25T09:59:30Z"),
            ("cooled", "2026-11-25T09:58:00Z"),
            ("opted-out", "2026-11-25T09:59:50Z"),
        ]
        .into_iter()
        .map(|(namespace, woken_at)| (namespace.to_string(), at(woken_at)))
        .collect();
        forget_woken(
            &mut woken,
            at("2026-11-25T10:00:00Z"),
            TimeDelta::minutes(1),
            |namespace| namespace != "opted-out",
        );
        assert_eq!(woken.keys().collect::<Vec<_>>(), vec!["recent"]);
    }
}
