//! Overrides on demand at the edge: who asked for one, what its Events say, and taking a
//! Namespace's override away once it has run out (the workloads have their own records, so the
//! order of the two does not matter).

pub mod request;

use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{Patch, PatchParams},
};

use crate::{
    error::Error,
    runtime::{CONTROLLER_NAME, api_errors::is_status, key::ObjectKey, worker::Next},
    scaling::ScalingContext,
    schedule::{Direction, Transition, expired_keys, key_of, patches::remove_if_still},
};

/// The override a transition applied, in words: `cronscaler.dev/awake-until
/// "2026-11-24T00:00:00Z" (set by kubectl-annotate)`.
pub fn describe(transition: &Transition, set_by: Option<&str>) -> String {
    let until = transition
        .until
        .map(|until| until.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default();
    let key = key_of(transition.direction);
    match set_by {
        Some(manager) => format!("{key} {until:?} (set by {manager})"),
        None => format!("{key} {until:?}"),
    }
}

/// The Event of an override applied: reason and note.
pub fn describe_applied(
    transition: &Transition,
    set_by: Option<&str>,
    what: String,
) -> (&'static str, String) {
    let reason = match transition.direction {
        Direction::Up => "WokenOnDemand",
        Direction::Down => "SleptOnDemand",
    };
    (
        reason,
        format!("{what} on demand by {}", describe(transition, set_by)),
    )
}

/// Removes the Namespace's overrides that have run out by `now`, each only if it still holds
/// the value that ran out: one set anew meanwhile stays.
pub async fn end_namespace_override(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Next, Error> {
    let Some(annotations) = ctx.namespaces.annotations_of(namespace) else {
        return Ok(Next::Done);
    };
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    for (key, value) in expired_keys(&annotations, now) {
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        let patch = Patch::<()>::Json(remove_if_still(key, &value));
        let what = format!("remove the ended override {key} of Namespace {namespace}");
        match ctx
            .writes
            .make(what, api.patch(namespace, &params, &patch))
            .await
        {
            Ok(None) => {}
            Ok(Some(_)) => {
                tracing::info!(namespace, key, %value, "removed the Namespace's ended override")
            }
            // Gone, or set anew since (the test fails): nothing of ours to remove.
            Err(error) if is_status(&error, 404) || is_status(&error, 422) => {}
            // An older ClusterRole: retrying would not help. The override has no effect once it
            // has ended, so only its annotation stays.
            Err(error) if is_status(&error, 403) => {
                tracing::warn!(namespace, key, %error, "may not patch Namespaces: the ended override stays on the Namespace; grant `patch` on namespaces (rbac/cluster-role.yaml)");
            }
            Err(error) => {
                return Err(Error::api(
                    "remove the ended override from Namespace",
                    "Namespace",
                    &ObjectKey::new(namespace, namespace),
                )(error));
            }
        }
    }
    Ok(Next::Done)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::TimeZone;
    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        namespaces::NamespaceSchedules,
        schedule::{ASLEEP_UNTIL, AWAKE_UNTIL, UPTIME},
    };

    const STATUS_422: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","code":422}"#;

    async fn end_against(script: Vec<Exchange>) -> Result<Next, Error> {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(script));
        let namespaces = NamespaceSchedules::watched([]);
        namespaces.update(
            "staging",
            None,
            &BTreeMap::from([
                (UPTIME.to_string(), "Mon-Fri 07:00-20:00".to_string()),
                (AWAKE_UNTIL.to_string(), "2026-11-24T00:00:00Z".to_string()),
                (ASLEEP_UNTIL.to_string(), "2026-11-30T00:00:00Z".to_string()),
            ]),
        );
        let ctx = crate::scaling::test_support::context(client, false).with_namespaces(namespaces);
        let midnight = Utc.with_ymd_and_hms(2026, 11, 24, 0, 0, 0).unwrap();
        let result = end_namespace_override(&ctx, "staging", midnight).await;
        drop(ctx);
        server.await.unwrap();
        result
    }

    fn removal(reply_status: u16, reply: serde_json::Value) -> Exchange {
        Exchange::new("PATCH", "/api/v1/namespaces/staging?&fieldManager=cronscaler")
            .content_type("application/json-patch+json")
            .body(json!([
                { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": "2026-11-24T00:00:00Z" },
                { "op": "remove", "path": "/metadata/annotations/cronscaler.dev~1awake-until" },
            ]))
            .reply(reply_status, reply)
    }

    #[tokio::test]
    async fn only_the_ended_override_is_removed_and_only_while_it_holds_that_value() {
        // The asleep-until still to come stays.
        end_against(vec![removal(
            200,
            json!({ "metadata": { "name": "staging" } }),
        )])
        .await
        .unwrap();
        // Set anew since it was seen: the test fails, and nothing is wrong.
        let conflict: serde_json::Value = serde_json::from_str(STATUS_422).unwrap();
        end_against(vec![removal(422, conflict)]).await.unwrap();
        // Under an older ClusterRole: said in the log, not retried for ever.
        let forbidden = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "namespaces \"staging\" is forbidden: User \"system:serviceaccount:cronscaler:cronscaler\" cannot patch resource \"namespaces\" in API group \"\" in the namespace \"staging\"",
            "reason": "Forbidden", "details": { "name": "staging", "kind": "namespaces" }, "code": 403,
        });
        end_against(vec![removal(403, forbidden)]).await.unwrap();
    }
}
