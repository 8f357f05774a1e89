//! Warnings said once per cause, across restarts and failovers. The cause of the last warning
//! is written on the object itself, in the label `cronscaler.dev/warned`; a warning whose cause
//! is already written there is not said again. A cause names what the user would have to change
//! to be told again: the transition a person reverted, the exact annotations that were refused,
//! the owner whose pause was doubted.
//!
//! A label, not an annotation: a Deployment counts every change of its annotations in its
//! `generation` (they are copied to its ReplicaSets), so a warning recorded in one would look
//! like one more change of the workload, made by the controller after someone else's (in
//! `ignore` mode under a GitOps tool's self-heal, after its revert). A label changes neither.

use std::collections::BTreeMap;

use super::keys::{PREFIX, WARNED};
use super::{Annotations, Direction, Recorded, Schedule, Transition, is_written_by_controller};

/// The reason of the Warning said when someone changed what a transition set.
pub const SCALE_REVERTED: &str = "ScaleReverted";

/// The cause of a warning of `reason` about `what`: the reason and a digest of what, which fits
/// a label's value (63 characters of letters, digits, `-`, `_` and `.`) whatever `what` is.
pub fn cause(reason: &str, what: &str) -> String {
    format!("{reason}.{:016x}", digest(what.bytes()))
}

/// FNV-1a: stable across builds and versions, unlike std's hasher, because the digest is
/// stored on objects and compared after upgrades.
fn digest(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |digest, byte| {
        (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The cause of `ScaleReverted` for replicas changed after `transition`.
pub fn reverted_cause(transition: Transition) -> String {
    cause(SCALE_REVERTED, &transition.to_string())
}

/// The cause of `InvalidSchedule` for these annotations: a digest of the `cronscaler.dev/`
/// values users set, so any change to them is a new cause and the controller's own writes are
/// not.
pub fn refused_cause(annotations: &BTreeMap<String, String>) -> String {
    let user_set = annotations
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX) && !is_written_by_controller(key))
        .flat_map(|(key, value)| key.bytes().chain([b'=']).chain(value.bytes()).chain([0]));
    format!("InvalidSchedule.{:016x}", digest(user_set))
}

/// Whether the warning of this cause was already said for the object of these labels.
pub fn already_warned(labels: &BTreeMap<String, String>, cause: &str) -> bool {
    labels.get(WARNED).is_some_and(|warned| warned == cause)
}

/// Whether someone else changed the replicas after the transition in force, as its
/// `ScaleReverted`, said and recorded, tells: they have taken over until the next transition.
pub fn taken_over(labels: &BTreeMap<String, String>, recorded: &Recorded) -> bool {
    recorded
        .last_transition
        .is_some_and(|transition| already_warned(labels, &reverted_cause(transition)))
}

/// The transition in force and the replicas the controller set at it, when a later change of
/// replicas by someone else would revert it: a scale-down that changed replicas (it remembered
/// the original), or a scale-up to an explicit `up-replicas`.
pub fn replicas_set(schedule: &Schedule, recorded: &Recorded) -> Option<(Transition, i32)> {
    if schedule.paused {
        return None;
    }
    let transition = recorded.last_transition?;
    let set = match transition.direction {
        Direction::Down => recorded.original_replicas.map(|_| schedule.down_replicas)?,
        Direction::Up => schedule.up_replicas?,
    };
    Some((transition, set))
}

/// The transition and the replicas it set, when the object no longer has them.
pub fn reverted(annotations: &Annotations, replicas: i32) -> Option<(Transition, i32)> {
    let Annotations::Scheduled(schedule, recorded) = annotations else {
        return None;
    };
    replicas_set(schedule, recorded).filter(|&(_, set)| set != replicas)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{test_support::*, *};

    #[test]
    fn the_refused_cause_changes_with_what_users_set_and_only_with_that() {
        let bad = annotations(&[(SCALE_DOWN, "0 20 * * *"), (TIMEZONE, "Mars/Olympus")]);
        let cause = refused_cause(&bad);
        assert_eq!(cause, refused_cause(&bad.clone()), "stable");
        assert!(cause.starts_with("InvalidSchedule."), "{cause}");
        let mut with_ours = bad.clone();
        with_ours.insert(LAST_TRANSITION.into(), "2026-11-23T20:00:00Z down".into());
        with_ours.insert(
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            "{}".into(),
        );
        assert_eq!(
            refused_cause(&with_ours),
            cause,
            "not the controller's or others' keys"
        );
        let fixed_zone = annotations(&[(SCALE_DOWN, "0 20 * * *"), (TIMEZONE, "Mars/Olymp")]);
        assert_ne!(refused_cause(&fixed_zone), cause);
        // A value cannot borrow its end from the next key.
        let shifted = annotations(&[(SCALE_DOWN, "0 20 * * *t"), (TIMEZONE, "ars/Olympus")]);
        assert_ne!(refused_cause(&shifted), cause);
    }

    #[test]
    fn a_cause_written_on_the_object_is_not_said_again() {
        let transition = down("2026-11-23T20:00:00Z");
        let cause = reverted_cause(transition);
        let mut labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
        assert!(!already_warned(&labels, &cause));
        labels.insert(WARNED.into(), cause.clone());
        assert!(already_warned(&labels, &cause));
        assert!(!already_warned(
            &labels,
            &reverted_cause(down("2026-11-24T20:00:00Z"))
        ));
    }

    #[test]
    fn every_cause_is_a_label_value() {
        let label_value = |value: &str| {
            value.len() <= 63
                && value.starts_with(|c: char| c.is_ascii_alphanumeric())
                && value.ends_with(|c: char| c.is_ascii_alphanumeric())
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        let causes = [
            reverted_cause(down("2026-11-23T20:00:00Z")),
            refused_cause(&annotations(&[(TIMEZONE, "Mars/Olympus")])),
            cause(
                "GitOpsOwnerUnconfirmed",
                "Kustomization flux-system/a-name-of-two-hundred-and-fifty-three-characters",
            ),
        ];
        for cause in causes {
            assert!(label_value(&cause), "{cause}");
        }
    }

    #[test]
    fn only_replicas_the_controller_set_can_be_reverted() {
        let night = [
            (SCALE_DOWN, "0 20 * * *"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ];
        let (schedule, recorded) = scheduled(&night);
        assert_eq!(recorded.original_replicas, None);
        assert_eq!(
            replicas_set(&schedule, &recorded),
            None,
            "a scale-down that found nothing to take set nothing"
        );
        let (schedule, recorded) = scheduled(&[night[0], night[1], (ORIGINAL_REPLICAS, "3")]);
        assert_eq!(
            replicas_set(&schedule, &recorded),
            Some((down("2026-11-23T20:00:00Z"), 0))
        );
        let parsed = parse(
            &annotations(&[night[0], night[1], (ORIGINAL_REPLICAS, "3")]),
            chrono_tz::Tz::UTC,
        );
        assert_eq!(reverted(&parsed, 0), None);
        assert_eq!(
            reverted(&parsed, 2),
            Some((down("2026-11-23T20:00:00Z"), 0))
        );
        let morning = [
            (SCALE_UP, "0 7 * * *"),
            (LAST_TRANSITION, "2026-11-24T07:00:00Z up"),
        ];
        let (schedule, recorded) = scheduled(&morning);
        assert_eq!(replicas_set(&schedule, &recorded), None, "no up-replicas");
        let (schedule, recorded) = scheduled(&[morning[0], morning[1], (UP_REPLICAS, "4")]);
        assert_eq!(
            replicas_set(&schedule, &recorded),
            Some((up("2026-11-24T07:00:00Z"), 4))
        );
        let (schedule, recorded) = scheduled(&[
            night[0],
            night[1],
            (ORIGINAL_REPLICAS, "3"),
            (PAUSED, "true"),
        ]);
        assert_eq!(replicas_set(&schedule, &recorded), None, "paused");
    }
}
