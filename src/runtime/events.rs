//! Kubernetes Events, the messages a user reads in `kubectl describe`. Publishing one is best
//! effort: a failure is logged and never fails the reconcile that wanted to tell something.
//!
//! Every Event is created anew, never folded into a series. kube's `Recorder` folds Events of
//! the same reason about the same object into the first one and keeps its note, so a real
//! "scaled up from 0 to 2" showed in `kubectl describe` as the earlier "replicas left at 2".
//! The controller says each thing once per cause, so there are no repeats worth folding.
//!
//! The API server refuses a note over 1,024 bytes (422), so every note is fitted here, in the
//! one place Events are built: lists in it name their first items and count the rest.

use std::fmt;

use chrono::Utc;
use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1::Event},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{PostParams, ResourceExt as _},
};

use crate::runtime::CONTROLLER_NAME;

#[derive(Clone)]
pub struct Events {
    client: Client,
    /// Tells replicas apart (the Pod name in a cluster).
    instance: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    Normal,
    Warning,
}

impl Events {
    /// `instance` tells replicas apart (the Pod name in a cluster).
    pub fn new(client: Client, instance: Option<String>) -> Self {
        Self {
            client,
            instance: instance.unwrap_or_else(|| CONTROLLER_NAME.into()),
        }
    }

    pub async fn normal(&self, regarding: &ObjectReference, reason: &str, note: impl Into<Note>) {
        self.publish(EventType::Normal, regarding, reason, note.into())
            .await;
    }

    /// True when the Event was published: a warning that was not is to be said again.
    pub async fn warning(
        &self,
        regarding: &ObjectReference,
        reason: &str,
        note: impl Into<Note>,
    ) -> bool {
        self.publish(EventType::Warning, regarding, reason, note.into())
            .await
    }

    async fn publish(
        &self,
        type_: EventType,
        regarding: &ObjectReference,
        reason: &str,
        note: Note,
    ) -> bool {
        let event = event(type_, regarding, reason, note.fitted(), &self.instance);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => true,
            Err(error) => {
                tracing::warn!(
                    object = %describe(regarding),
                    reason,
                    event = event.name_any(),
                    %error,
                    "could not publish event"
                );
                false
            }
        }
    }
}

/// The most an Event's note may hold, in bytes, by the API server's validation.
pub const NOTE_LIMIT: usize = 1024;

/// What an Event says: text, and lists that may be shortened to fit [`NOTE_LIMIT`]. Shown
/// whole (`Display`) in logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    List {
        items: Vec<String>,
        separator: &'static str,
    },
}

impl Note {
    pub fn new(text: impl Into<String>) -> Self {
        Self::default().text(text)
    }

    /// Adds text after what is there.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Adds a list, its items joined by `separator`: the first to go when the note is too long.
    pub fn list(mut self, items: Vec<String>, separator: &'static str) -> Self {
        self.parts.push(Part::List { items, separator });
        self
    }

    /// The note as sent: whole when it fits, else with its longest lists cut short ("a, b, and
    /// 38 more"), and should that not do, cut at the limit.
    pub fn fitted(&self) -> String {
        let mut named: Vec<usize> = self
            .parts
            .iter()
            .map(|part| match part {
                Part::Text(_) => 0,
                Part::List { items, .. } => items.len(),
            })
            .collect();
        loop {
            let note = self.render(&named);
            let excess = note.len().saturating_sub(NOTE_LIMIT);
            if excess == 0 {
                return note;
            }
            let longest = self
                .parts
                .iter()
                .enumerate()
                .filter(|(index, _)| named[*index] > 0)
                .filter_map(|(index, part)| match part {
                    Part::List { items, separator } => {
                        let length: usize = items[..named[index]]
                            .iter()
                            .map(|item| item.len() + separator.len())
                            .sum();
                        Some((length, index))
                    }
                    Part::Text(_) => None,
                })
                .max();
            let Some((_, index)) = longest else {
                return cut(note);
            };
            let Part::List { items, separator } = &self.parts[index] else {
                return cut(note);
            };
            let mut dropped = 0;
            while named[index] > 0 && dropped < excess {
                named[index] -= 1;
                dropped += items[named[index]].len() + separator.len();
            }
        }
    }

    /// The note with the first `named[i]` items of each list.
    fn render(&self, named: &[usize]) -> String {
        self.parts
            .iter()
            .zip(named)
            .map(|(part, &named)| match part {
                Part::Text(text) => text.clone(),
                Part::List { items, .. } if named >= items.len() => part_whole(part),
                Part::List { items, separator } => {
                    let rest = items.len() - named;
                    let mut shown: Vec<String> = items[..named].to_vec();
                    shown.push(if named == 0 {
                        format!("{rest} not named")
                    } else {
                        format!("and {rest} more")
                    });
                    shown.join(separator)
                }
            })
            .collect()
    }
}

fn part_whole(part: &Part) -> String {
    match part {
        Part::Text(text) => text.clone(),
        Part::List { items, separator } => items.join(separator),
    }
}

/// `note` cut to the limit at a character's boundary, ending in an ellipsis.
fn cut(mut note: String) -> String {
    const ELLIPSIS: char = '…';
    let mut end = NOTE_LIMIT - ELLIPSIS.len_utf8();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note.truncate(end);
    note.push(ELLIPSIS);
    note
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.parts
            .iter()
            .try_for_each(|part| f.write_str(&part_whole(part)))
    }
}

impl From<String> for Note {
    fn from(text: String) -> Self {
        Note::new(text)
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Self {
        Note::new(text)
    }
}

/// An `events.k8s.io/v1` Event as the API server requires it: a unique name, the time, who
/// reports it and about what.
fn event(
    type_: EventType,
    regarding: &ObjectReference,
    reason: &str,
    note: String,
    instance: &str,
) -> Event {
    let now = Utc::now();
    let nanos = now.timestamp_nanos_opt().unwrap_or_default();
    let time = Timestamp::new(now.timestamp(), now.timestamp_subsec_nanos() as i32)
        .unwrap_or(Timestamp::UNIX_EPOCH);
    Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{nanos:x}",
                regarding.name.as_deref().unwrap_or(CONTROLLER_NAME)
            )),
            namespace: regarding.namespace.clone(),
            ..ObjectMeta::default()
        },
        type_: Some(format!("{type_:?}")),
        reason: Some(reason.into()),
        action: Some(reason.into()),
        note: Some(note),
        regarding: Some(regarding.clone()),
        event_time: Some(MicroTime(time)),
        reporting_controller: Some(CONTROLLER_NAME.into()),
        reporting_instance: Some(instance.into()),
        ..Event::default()
    }
}

fn describe(reference: &ObjectReference) -> String {
    format!(
        "{} {}/{}",
        reference.kind.as_deref().unwrap_or("object"),
        reference.namespace.as_deref().unwrap_or(""),
        reference.name.as_deref().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_that_fits_is_sent_whole() {
        let note = Note::new("slept 2 workloads (")
            .list(vec!["Deployment web".into(), "CronJob report".into()], ", ")
            .text(")");
        assert_eq!(
            note.fitted(),
            "slept 2 workloads (Deployment web, CronJob report)"
        );
        assert_eq!(note.fitted(), note.to_string());
    }

    #[test]
    fn the_longest_list_names_its_first_items_and_counts_the_rest() {
        let workloads: Vec<String> = (0..100).map(|n| format!("Deployment api-{n:02}")).collect();
        let failures: Vec<String> = (0..3)
            .map(|n| format!("StatefulSet db-{n}: Internal error occurred"))
            .collect();
        let note = Note::new("slept 100 workloads (")
            .list(workloads, ", ")
            .text("); 3 failed: ")
            .list(failures, "; ");
        let fitted = note.fitted();
        assert!(fitted.len() <= NOTE_LIMIT, "{} bytes", fitted.len());
        assert!(
            fitted.starts_with("slept 100 workloads (Deployment api-00, Deployment api-01, "),
            "{fitted}"
        );
        assert!(
            fitted.ends_with(
                " more); 3 failed: StatefulSet db-0: Internal error occurred; StatefulSet db-1: \
                 Internal error occurred; StatefulSet db-2: Internal error occurred"
            ),
            "the short list stays whole: {fitted}"
        );
        let named = fitted.matches("Deployment api-").count();
        assert!(
            fitted.contains(&format!(", and {} more)", 100 - named)),
            "{fitted}"
        );
    }

    #[test]
    fn text_too_long_for_any_list_is_cut_at_a_character() {
        let note = Note::new("é".repeat(NOTE_LIMIT));
        let fitted = note.fitted();
        assert!(fitted.len() <= NOTE_LIMIT, "{} bytes", fitted.len());
        assert!(fitted.ends_with("é…"), "{fitted}");
    }
}
