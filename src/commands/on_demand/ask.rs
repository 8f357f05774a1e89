//! `cronscaler wake` and `sleep` for someone who may act only in their own Namespace: where the
//! Namespace may not be annotated, the override is asked for with an `OverrideRequest` (which the
//! aggregated `edit` role may create), and the controller's answer is waited for and said.

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams, Preconditions},
};

use super::OverrideError;
use crate::{
    runtime::api_errors::is_status,
    scaling::on_demand::request::{Asked, OverrideRequest, Phase},
    schedule::Direction,
};

/// How long the controller's answer is waited for: it answers within a second when it runs.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// How often the request is read again while it waits for its answer.
const POLL: Duration = Duration::from_millis(250);

/// The request `cronscaler wake` or `sleep` makes for `namespace`: until `requested`, else until
/// the schedule turns, signed `by` who runs the command.
pub fn request(
    direction: Direction,
    requested: Option<DateTime<Utc>>,
    by: Option<String>,
) -> OverrideRequest {
    let state = match direction {
        Direction::Up => Asked::Awake,
        Direction::Down => Asked::Asleep,
    };
    OverrideRequest::asking(state, requested, by.as_deref(), "kubectl")
}

/// Who runs the command: the user the API server knows them as (a SelfSubjectReview, served from
/// Kubernetes 1.28), else their login. The request's own word either way, cut to what the CRD
/// takes.
pub async fn asker(client: &Client) -> Option<String> {
    let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
    let reviewed = (reviews.create(&PostParams::default(), &SelfSubjectReview::default()))
        .await
        .ok()
        .and_then(|review| review.status?.user_info?.username);
    reviewed
        .or_else(|| std::env::var("USER").ok())
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic()))
}

/// Makes `request` in `namespace` and waits for the controller's answer: what it did, or why it
/// refused.
pub async fn ask(
    client: &Client,
    namespace: &str,
    request: &OverrideRequest,
) -> Result<String, OverrideError> {
    let requests: Api<OverrideRequest> = Api::namespaced(client.clone(), namespace);
    let made = match requests.create(&PostParams::default(), request).await {
        Ok(made) => made,
        Err(error) if is_status(&error, 403) => {
            return Err(OverrideError::MayNotAsk(namespace.to_string()));
        }
        Err(error) if is_status(&error, 404) => {
            return Err(OverrideError::NotServed(namespace.to_string()));
        }
        Err(source) => {
            return Err(OverrideError::Api {
                action: "ask for an override of",
                what: format!("Namespace {namespace}"),
                source,
            });
        }
    };
    let name = made.metadata.name.clone().unwrap_or_default();
    let waited = tokio::time::timeout(ANSWER_WITHIN, async {
        loop {
            tokio::time::sleep(POLL).await;
            match requests.get(&name).await {
                Ok(read) => {
                    if let Some(answer) = read.status.filter(|answer| answer.phase.is_some()) {
                        return Ok(answer);
                    }
                }
                // Removed by someone else before the controller answered.
                Err(error) if is_status(&error, 404) => {
                    return Err(OverrideError::NotFound(format!(
                        "OverrideRequest {namespace}/{name}"
                    )));
                }
                // Anything else (the server busy) is asked again.
                Err(_) => {}
            }
        }
    })
    .await;
    match waited {
        Ok(Err(error)) => Err(error),
        Ok(Ok(answer)) if answer.phase == Some(Phase::Refused) => {
            Err(OverrideError::AskRefused(answer.message))
        }
        Ok(Ok(answer)) => Ok(format!(
            "{} (OverrideRequest {namespace}/{name})",
            answer.message
        )),
        Err(_) => {
            // Taken back, so that no controller carries it out later, when nobody waits for it.
            let uid = Preconditions {
                uid: made.metadata.uid,
                resource_version: None,
            };
            let params = DeleteParams {
                preconditions: Some(uid),
                ..DeleteParams::default()
            };
            let taken_back = requests.delete(&name, &params).await.is_ok();
            Err(OverrideError::NotAnswered {
                request: format!("{namespace}/{name}"),
                within: crate::duration::spoken(ANSWER_WITHIN).to_string(),
                taken_back,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_editor_client},
        schedule::test_support::at,
    };

    const REQUESTS: &str = "/apis/cronscaler.dev/v1alpha1/namespaces/team-a/overriderequests";

    fn stored(status: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "cronscaler.dev/v1alpha1", "kind": "OverrideRequest",
            "metadata": { "name": "wake-x7k2p", "namespace": "team-a" },
            "spec": { "state": "awake" },
            "status": status,
        })
    }

    async fn asked(script: Vec<Exchange>) -> Result<String, String> {
        let (client, server) = mock_editor_client();
        let server = tokio::spawn(server.serve(script));
        let until = Some(at("2026-11-23T23:00:00Z"));
        let said = ask(
            &client,
            "team-a",
            &request(Direction::Up, until, Some("alice".into())),
        )
        .await;
        drop(client);
        server.await.unwrap();
        said.map_err(|error| error.to_string())
    }

    #[tokio::test(start_paused = true)]
    async fn the_request_is_made_and_the_controller_s_answer_said() {
        let said = asked(vec![
            Exchange::new("POST", format!("{REQUESTS}?"))
                .body(json!({
                    "metadata": { "generateName": "wake-" },
                    "spec": {
                        "state": "awake", "until": "2026-11-23T23:00:00Z", "by": "alice",
                        "means": "kubectl",
                    },
                }))
                .reply(201, stored(json!({}))),
            Exchange::new("GET", format!("{REQUESTS}/wake-x7k2p")).reply(200, stored(json!({}))),
            Exchange::new("GET", format!("{REQUESTS}/wake-x7k2p")).reply(
                200,
                stored(json!({
                    "phase": "Done",
                    "message": "Namespace team-a is awake until 2026-11-23T23:00:00Z (2h from now)",
                })),
            ),
        ])
        .await;
        assert_eq!(
            said,
            Ok(
                "Namespace team-a is awake until 2026-11-23T23:00:00Z (2h from now) \
                (OverrideRequest team-a/wake-x7k2p)"
                    .into()
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_and_a_missing_grant_say_what_to_do() {
        let refused = asked(vec![
            Exchange::new("POST", format!("{REQUESTS}?")).reply(201, stored(json!({}))),
            Exchange::new("GET", format!("{REQUESTS}/wake-x7k2p")).reply(
                200,
                stored(
                    json!({ "phase": "Refused", "message": "spec.for: \"2x\" is not a duration" }),
                ),
            ),
        ])
        .await;
        assert_eq!(
            refused,
            Err("the controller refused: spec.for: \"2x\" is not a duration".into())
        );
        let forbidden = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
        });
        let may_not = asked(vec![
            Exchange::new("POST", format!("{REQUESTS}?")).reply(403, forbidden),
        ])
        .await;
        assert!(
            may_not
                .as_ref()
                .is_err_and(|said| said.contains("ask for the edit role in team-a")),
            "{may_not:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_nobody_answers_is_taken_back() {
        // The last poll would fall on the deadline itself.
        let polls = (ANSWER_WITHIN.as_millis() / POLL.as_millis()) as usize - 1;
        let mut made = stored(json!({}));
        made["metadata"]["uid"] = json!("uid-7");
        let script =
            std::iter::once(Exchange::new("POST", format!("{REQUESTS}?")).reply(201, made))
                .chain((0..polls).map(|_| {
                    Exchange::new("GET", format!("{REQUESTS}/wake-x7k2p"))
                        .reply(200, stored(json!({})))
                }))
                .chain(std::iter::once(
                    Exchange::new("DELETE", format!("{REQUESTS}/wake-x7k2p?"))
                        .body(json!({ "preconditions": { "uid": "uid-7" } }))
                        .reply(200, stored(json!({}))),
                ))
                .collect();
        let said = asked(script).await;
        assert_eq!(
            said,
            Err(
                "asked with OverrideRequest team-a/wake-x7k2p, but no controller answered within \
                 20s (is cronscaler running?); the request is taken back"
                    .into()
            )
        );
    }

    #[tokio::test]
    async fn who_asks_is_who_the_api_server_knows_else_the_login() {
        const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews?";
        let asker_with = |reply: Exchange| async move {
            let (client, server) = mock_editor_client();
            let server = tokio::spawn(server.serve(vec![reply]));
            let asker = asker(&client).await;
            drop(client);
            server.await.unwrap();
            asker
        };
        let reviewed = json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
            "status": { "userInfo": { "username": "alice@example.com" } },
        });
        assert_eq!(
            asker_with(Exchange::new("POST", REVIEWS).reply(201, reviewed)).await,
            Some("alice@example.com".into())
        );
        let not_served = json!({ "kind": "Status", "code": 404, "reason": "NotFound" });
        let login = std::env::var("USER")
            .ok()
            .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic()));
        assert_eq!(
            asker_with(Exchange::new("POST", REVIEWS).reply(404, not_served)).await,
            login,
            "before Kubernetes 1.28, the login"
        );
    }
}
