//! The wake-up backend's state on this replica, and how it answers one request: it reads the
//! Namespace from the watch's cache, its readiness at most once a second, and writes a wake
//! at most once per cooldown, so a flood of requests costs the API server almost nothing.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use chrono::{DateTime, Utc};
use http::{HeaderValue, Response, StatusCode, header};
use kube::Client;
use tokio::time::Instant;

use super::{
    answer::{Decision, Settings, decide},
    cluster::{self, Wrote},
    page::{Progress, page},
    readiness::{Readiness, readiness},
    route::{Request, namespace_of_query},
};
use crate::{
    ops::metrics::{Metrics, WakeResult},
    scaling::namespaces::NamespaceSchedules,
    schedule::WakeOnRequest,
};

/// How long a Namespace's readiness, once read, answers every request.
const READINESS_FRESH: Duration = Duration::from_secs(1);
/// What a program is told to wait before it asks again.
const RETRY_AFTER_SECONDS: &str = "10";

/// An opted-in Namespace's annotations, and its opt-in read from them.
type OptedIn = (BTreeMap<String, String>, WakeOnRequest);

type Cached = Arc<tokio::sync::Mutex<Option<(Instant, Readiness)>>>;

pub struct Backend {
    client: Client,
    schedules: NamespaceSchedules,
    metrics: Metrics,
    settings: Settings,
    /// When this replica last woke each Namespace.
    woken: Mutex<HashMap<String, DateTime<Utc>>>,
    /// Each Namespace's readiness as last read: one read at a time, whatever the requests.
    readiness: Mutex<HashMap<String, Cached>>,
}

/// A response's status, headers and body, before hyper's types.
pub struct Answer {
    pub status: StatusCode,
    pub content_type: Option<&'static str>,
    pub retry_after: bool,
    pub body: String,
}

impl Answer {
    fn refused() -> Self {
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
        client: Client,
        schedules: NamespaceSchedules,
        metrics: Metrics,
        settings: Settings,
    ) -> Self {
        Self {
            client,
            schedules,
            metrics,
            settings,
            woken: Mutex::default(),
            readiness: Mutex::default(),
        }
    }

    /// Answers one request, whatever its method and path: the proxy sends its errors here.
    pub async fn answer(&self, request: &Request, now: DateTime<Utc>) -> Answer {
        if request.is_status_poll() {
            return self.status(request).await;
        }
        let Some((namespace, (annotations, opt_in))) = self.opted_in(request) else {
            self.metrics.wake_request("", WakeResult::Refused);
            return Answer::refused();
        };
        let readiness = self.readiness_of(&namespace).await;
        let woken_here = self.woken_at(&namespace);
        let decision = decide(
            self.settings,
            &opt_in,
            &annotations,
            now,
            woken_here,
            readiness,
        );
        let result = match &decision {
            Decision::Wake { patch } if self.claim(&namespace, now, woken_here) => {
                match cluster::write_wake(&self.client, &namespace, patch, &request.field_manager())
                    .await
                {
                    Ok(Wrote::Woken) => {
                        tracing::info!(
                            namespace,
                            by = request.field_manager(),
                            "woken by a request"
                        );
                        WakeResult::Woken
                    }
                    Ok(Wrote::AlreadySet) => WakeResult::Waking,
                    Err(error) => {
                        // The cooldown stands: a flood must not become a flood of failing writes.
                        tracing::warn!(namespace, %error, "could not wake the Namespace");
                        WakeResult::Waking
                    }
                }
            }
            Decision::Wake { .. } => WakeResult::Waking,
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
    /// Namespace's progress, for opted-in Namespaces only.
    async fn status(&self, request: &Request) -> Answer {
        let opted_in = namespace_of_query(&request.original_uri).and_then(|namespace| {
            let annotations = self.schedules.annotations_of(&namespace)?;
            WakeOnRequest::of(&annotations).map(|_| namespace)
        });
        let Some(namespace) = opted_in else {
            return Answer::refused();
        };
        let readiness = self.readiness_of(&namespace).await;
        let waking = self
            .woken_at(&namespace)
            .is_some_and(|at| Utc::now() < at + self.settings.cooldown);
        Answer {
            status: StatusCode::OK,
            content_type: Some("application/json"),
            retry_after: false,
            body: Progress::new(&namespace, readiness, waking).json(),
        }
    }

    /// The opted-in Namespace the request is for, with its annotations and opt-in.
    fn opted_in(&self, request: &Request) -> Option<(String, OptedIn)> {
        let pick = |name: &str, annotations: &BTreeMap<String, String>| {
            let opt_in = WakeOnRequest::of(annotations)?;
            request
                .is_for(name, &opt_in)
                .then(|| (annotations.clone(), opt_in))
        };
        match &request.namespace {
            // Named by the proxy: one look, not a search.
            Some(named) => {
                let annotations = self.schedules.annotations_of(named)?;
                pick(named, &annotations).map(|found| (named.clone(), found))
            }
            None => self.schedules.first_by_name(pick),
        }
    }

    fn woken_at(&self, namespace: &str) -> Option<DateTime<Utc>> {
        self.woken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .copied()
    }

    /// Takes the wake for this request, unless another took it since `seen` was read.
    fn claim(&self, namespace: &str, now: DateTime<Utc>, seen: Option<DateTime<Utc>>) -> bool {
        let mut woken = self.woken.lock().unwrap_or_else(PoisonError::into_inner);
        if woken.get(namespace).copied() != seen {
            return false;
        }
        woken.insert(namespace.to_string(), now);
        true
    }

    async fn readiness_of(&self, namespace: &str) -> Readiness {
        let cached = self
            .readiness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(namespace.to_string())
            .or_default()
            .clone();
        let mut cached = cached.lock().await;
        if let Some((read, readiness)) = *cached
            && read.elapsed() < READINESS_FRESH
        {
            return readiness;
        }
        let readiness = match cluster::workloads(&self.client, namespace).await {
            Ok((deployments, stateful_sets)) => {
                readiness(namespace, &deployments, &stateful_sets, &self.schedules)
            }
            Err(error) => {
                tracing::warn!(namespace, %error, "could not read the Namespace's workloads");
                Readiness::default()
            }
        };
        *cached = Some((Instant::now(), readiness));
        readiness
    }
}
