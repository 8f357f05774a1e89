//! `gitops: pause`: the owner's repair stops while any Namespace it deploys to sleeps, and is
//! given back when the last wakes. What it had, and which Namespaces paused it, is recorded on
//! the owner itself (`cronscaler.dev/gitops-paused`), so a restart loses nothing. A person who
//! changes the switch meanwhile wins: it is not written back.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Owner, Paused, owner::OwnerState};
use crate::schedule::GITOPS_PAUSED;

/// A merge patch of an owner, guarded by the resourceVersion it was decided on, and the Event
/// it is told with.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerWrite {
    pub owner: Owner,
    /// Its uid, for the Event's reference.
    pub uid: Option<String>,
    pub body: Value,
    /// Reason and note, said on the owner once the write is made.
    pub event: Option<(&'static str, String)>,
    /// The event is a Warning: something a person should look at.
    pub warns: bool,
}

/// The body that sets the record to `record` (removes it with `None`), and the switch to
/// `switch` where given (`Some(None)` unsets it).
fn body(
    owner: &Owner,
    state: &OwnerState,
    record: Option<&Paused>,
    switch: Option<Option<bool>>,
) -> Value {
    let record = record
        .and_then(|record| serde_json::to_string(record).ok())
        .map_or(Value::Null, Value::String);
    let mut body = json!({ "metadata": { "annotations": { GITOPS_PAUSED: record } } });
    if let Some(version) = &state.resource_version {
        body["metadata"]["resourceVersion"] = json!(version);
    }
    if let Some(switch) = switch {
        // The switch under `spec`, built from the leaf up: `{suspend: true}`.
        let path = owner.tool.spec().repair;
        body["spec"] = path.iter().rev().fold(
            switch.map_or(Value::Null, Value::Bool),
            |value, step| json!({ *step: value }),
        );
    }
    body
}

/// What `namespace` going to sleep writes on its owner: the pause, recorded with what the switch
/// had; or, paused already, the Namespace added to the record. Nothing when the owner does not
/// repair (nothing to pause) or the Namespace is recorded.
pub fn pause(owner: &Owner, state: &OwnerState, namespace: &str) -> Option<OwnerWrite> {
    let spec = owner.tool.spec();
    match &state.record {
        Some(Ok(record)) if record.namespaces.contains(namespace) => None,
        // Paused for another Namespace: this one keeps it paused too. Should a person have
        // turned the repair back on since, it stays on: they win.
        Some(Ok(record)) => {
            let mut record = record.clone();
            record.namespaces.insert(namespace.to_string());
            Some(OwnerWrite {
                owner: owner.clone(),
                uid: state.uid.clone(),
                body: body(owner, state, Some(&record), None),
                event: None,
                warns: false,
            })
        }
        // A record no one can read is replaced, with the switch as it is now.
        Some(Err(_)) | None if !state.repairs(owner.tool) => None,
        Some(Err(_)) | None => {
            let record = Paused {
                previous: state.repair,
                namespaces: BTreeSet::from([namespace.to_string()]),
            };
            let note = format!(
                "{} set to {} while Namespace {namespace} sleeps (it was {}); given back at its wake",
                spec.repair_word,
                spec.paused,
                describe_switch(state.repair),
            );
            Some(OwnerWrite {
                owner: owner.clone(),
                uid: state.uid.clone(),
                body: body(owner, state, Some(&record), Some(Some(spec.paused))),
                event: Some(("GitOpsPaused", note)),
                warns: false,
            })
        }
    }
}

/// What the wake of the recorded Namespaces that are no longer `asleep` writes on their owner:
/// the record without them, or, the last one awake, the switch given back and the record gone.
/// A switch someone changed since the pause is left as they set it, and said.
pub fn release(
    owner: &Owner,
    state: &OwnerState,
    asleep: impl Fn(&str) -> bool,
) -> Option<OwnerWrite> {
    let spec = owner.tool.spec();
    let record = match &state.record {
        None => return None,
        Some(Ok(record)) => record,
        // Unreadable: the record goes. A switch paused now, by cronscaler as the API server's
        // managedFields say, is given back to repairing, since a pause is only ever recorded
        // over an owner that repairs: left paused, it would stay so with no record for the
        // gauge and its alert to count. A Namespace still asleep under it pauses it again, with
        // a record that reads. A switch someone else paused is theirs: left as it is.
        Some(Err(text)) => {
            let paused_now = state.repair == Some(spec.paused) && state.switch_ours;
            let (switch, what) = match paused_now {
                true => (
                    Some(Some(!spec.paused)),
                    format!(
                        "{} given back ({}), as cronscaler pauses only an owner that repairs",
                        spec.repair_word, !spec.paused
                    ),
                ),
                false => (
                    None,
                    format!(
                        "{} left as it is, now {}",
                        spec.repair_word,
                        describe_switch(state.repair)
                    ),
                ),
            };
            return Some(OwnerWrite {
                owner: owner.clone(),
                uid: state.uid.clone(),
                body: body(owner, state, None, switch),
                event: Some((
                    "GitOpsPauseUnreadable",
                    format!(
                        "{GITOPS_PAUSED} {text:?} cannot be read: removed, and {what}; check \
                         that it is as it should be"
                    ),
                )),
                warns: true,
            });
        }
    };
    let remaining: BTreeSet<String> = record
        .namespaces
        .iter()
        .filter(|namespace| asleep(namespace))
        .cloned()
        .collect();
    if remaining == record.namespaces {
        return None;
    }
    if !remaining.is_empty() {
        let record = Paused {
            namespaces: remaining,
            ..record.clone()
        };
        return Some(OwnerWrite {
            owner: owner.clone(),
            uid: state.uid.clone(),
            body: body(owner, state, Some(&record), None),
            event: None,
            warns: false,
        });
    }
    let woken = record
        .namespaces
        .iter()
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if state.repair == Some(spec.paused) {
        Some(OwnerWrite {
            owner: owner.clone(),
            uid: state.uid.clone(),
            body: body(owner, state, None, Some(record.previous)),
            event: Some((
                "GitOpsResumed",
                format!(
                    "{} given back ({}): Namespace {woken} awake",
                    spec.repair_word,
                    describe_switch(record.previous)
                ),
            )),
            warns: false,
        })
    } else {
        Some(OwnerWrite {
            owner: owner.clone(),
            uid: state.uid.clone(),
            body: body(owner, state, None, None),
            event: Some((
                "GitOpsPauseOverridden",
                format!(
                    "{} was changed to {} while Namespace {woken} slept: left as it is",
                    spec.repair_word,
                    describe_switch(state.repair)
                ),
            )),
            warns: false,
        })
    }
}

fn describe_switch(switch: Option<bool>) -> String {
    switch.map_or_else(|| "unset".to_string(), |value| format!("{value}"))
}
