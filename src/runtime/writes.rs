//! Where a reconcile's writes go: to the API server, or, in a dry run (`run --dry-run`), only to
//! the log. Every write of a reconcile asks here, and every Event that tells of one, so that
//! what a dry run does is decided in one place.

use std::{fmt::Display, future::Future};

use k8s_openapi::api::core::v1::ObjectReference;

use crate::runtime::events::{Events, Note};

/// Cheap to clone.
#[derive(Clone)]
pub struct Writes {
    events: Events,
    dry_run: bool,
}

impl Writes {
    pub fn new(events: Events, dry_run: bool) -> Self {
        Self { events, dry_run }
    }

    /// Whether writes are only logged.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Makes `write`, a request to the API server. A dry run only logs `what` it would have
    /// done, and answers `None`: the request is never sent.
    pub async fn make<T, E>(
        &self,
        what: impl Display,
        write: impl Future<Output = Result<T, E>>,
    ) -> Result<Option<T>, E> {
        if self.dry_run {
            tracing::info!(%what, "dry run, not done");
            return Ok(None);
        }
        write.await.map(Some)
    }

    /// Tells on `regarding` what a write or a step did, as a Normal Event, or a Warning where
    /// `warning`; a dry run, which did nothing, tells nothing.
    pub async fn tell(
        &self,
        regarding: &ObjectReference,
        reason: &'static str,
        note: impl Into<Note>,
        warning: bool,
    ) {
        match (self.dry_run, warning) {
            (true, _) => {}
            (false, true) => {
                self.events.warning(regarding, reason, note).await;
            }
            (false, false) => self.events.normal(regarding, reason, note).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::mock_api::{Exchange, events_path, mock_client};

    fn namespace_shop() -> ObjectReference {
        ObjectReference {
            kind: Some("Namespace".into()),
            name: Some("shop".into()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test]
    async fn a_dry_run_sends_no_request_and_tells_nothing() {
        let (client, server) = mock_client();
        // The scripted server fails the test on any request.
        let server = tokio::spawn(server.serve(vec![]));
        let writes = Writes::new(Events::new(client, None), true);
        let sent = AtomicBool::new(false);
        let write = async {
            sent.store(true, Ordering::SeqCst);
            Ok::<_, ()>(())
        };
        assert_eq!(writes.make("scale web", write).await, Ok(None));
        assert!(!sent.load(Ordering::SeqCst), "the request was never made");
        writes
            .tell(&namespace_shop(), "WakeTurn", "waited", false)
            .await;
        drop(writes);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn otherwise_the_write_is_made_and_told() {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("POST", events_path("default"))
                .body(serde_json::json!({ "type": "Warning", "reason": "WakeNotReady" }))
                .reply(201, serde_json::json!({})),
        ]));
        let writes = Writes::new(Events::new(client, None), false);
        assert_eq!(
            writes.make("scale web", async { Ok::<_, ()>(7) }).await,
            Ok(Some(7))
        );
        writes
            .tell(&namespace_shop(), "WakeNotReady", "late", true)
            .await;
        drop(writes);
        server.await.unwrap();
    }
}
