//! What sleeping withholds now: per Namespace and kind, the objects asleep and the replicas
//! they do not run, kept current by the trackers from watched metadata alone.

use std::collections::{BTreeMap, HashMap};

use prometheus_client::metrics::{family::Family, gauge::Gauge};

use crate::{
    ops::metrics::AsleepLabels,
    runtime::key::ObjectKey,
    schedule::{DOWN_REPLICAS, Direction, LAST_TRANSITION, ORIGINAL_REPLICAS, Transition},
    workloads::target::TargetKind,
};

/// One object's part in the gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Share {
    pub objects: i64,
    pub replicas: i64,
}

/// The transition `last-transition` records (an applied override too: `<instant> down until
/// <instant>`), read even where the object's other annotations are invalid or it is paused: it
/// still sleeps.
pub fn recorded_transition(annotations: &BTreeMap<String, String>) -> Option<Transition> {
    annotations.get(LAST_TRANSITION)?.parse().ok()
}

/// What an object whose `cronscaler.dev/` annotations (as the rules read them, its Namespace's
/// schedule included) are `ours` withholds: nothing unless a scale-down is the last transition
/// recorded; then itself, and what its kind withholds of `original-replicas` at `down-replicas`
/// ([`KindSpec::withheld`]: an on/off kind, none).
///
/// [`KindSpec::withheld`]: crate::workloads::kinds::KindSpec::withheld
pub fn share(kind: TargetKind, ours: &BTreeMap<String, String>) -> Share {
    let asleep =
        recorded_transition(ours).is_some_and(|transition| transition.direction == Direction::Down);
    if !asleep {
        return Share::default();
    }
    let count = |key| {
        ours.get(key)
            .and_then(|value| value.parse::<i64>().ok())
            .filter(|n| *n >= 0)
    };
    let down = count(DOWN_REPLICAS).unwrap_or(0);
    let replicas =
        count(ORIGINAL_REPLICAS).map_or(0, |original| kind.spec().withheld(original, down));
    Share {
        objects: 1,
        replicas,
    }
}

/// The `cronscaler_objects_asleep` and `cronscaler_replicas_asleep` gauges.
#[derive(Clone, Debug, Default)]
pub struct AsleepGauges {
    pub objects: Family<AsleepLabels, Gauge>,
    pub replicas: Family<AsleepLabels, Gauge>,
}

/// One kind's objects' shares in the gauges; trackers of several kinds share the gauges.
#[derive(Debug, Default)]
pub struct AsleepCounts {
    gauges: AsleepGauges,
    /// Only the objects asleep.
    shares: HashMap<ObjectKey, Share>,
}

impl AsleepCounts {
    pub fn new(gauges: AsleepGauges) -> Self {
        Self {
            gauges,
            shares: HashMap::new(),
        }
    }

    /// The object's share is now `share`.
    pub fn set(&mut self, kind: TargetKind, key: &ObjectKey, share: Share) {
        let before = if share == Share::default() {
            self.shares.remove(key)
        } else {
            self.shares.insert(key.clone(), share)
        }
        .unwrap_or_default();
        if before == share {
            return;
        }
        let labels = AsleepLabels {
            namespace: key.namespace.clone(),
            kind: kind.as_str(),
        };
        for (family, delta) in [
            (&self.gauges.objects, share.objects - before.objects),
            (&self.gauges.replicas, share.replicas - before.replicas),
        ] {
            let left = family.get_or_create(&labels).inc_by(delta) + delta;
            // A Namespace with nothing asleep any more leaves no series behind.
            if left == 0 {
                family.remove(&labels);
            }
        }
    }

    pub fn forget(&mut self, kind: TargetKind, key: &ObjectKey) {
        self.set(kind, key, Share::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::annotations;

    const LAST_NIGHT: &str = "2026-11-22T20:00:00Z down";

    #[test]
    fn an_object_asleep_withholds_its_original_replicas_above_down_replicas() {
        let asleep = |pairs: &[(&str, &str)]| share(TargetKind::Deployment, &annotations(pairs));
        assert_eq!(
            asleep(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "5")]),
            Share {
                objects: 1,
                replicas: 5
            }
        );
        assert_eq!(
            asleep(&[
                (LAST_TRANSITION, LAST_NIGHT),
                (ORIGINAL_REPLICAS, "5"),
                (DOWN_REPLICAS, "2")
            ])
            .replicas,
            3
        );
        assert_eq!(
            asleep(&[
                (LAST_TRANSITION, LAST_NIGHT),
                (ORIGINAL_REPLICAS, "1"),
                (DOWN_REPLICAS, "2")
            ])
            .replicas,
            0,
            "never below 0"
        );
        assert_eq!(
            asleep(&[
                (
                    LAST_TRANSITION,
                    "2026-11-22T20:00:00Z down until 2026-11-23T06:00:00Z"
                ),
                (ORIGINAL_REPLICAS, "2")
            ])
            .replicas,
            2,
            "put to sleep by an override"
        );
        assert_eq!(
            asleep(&[
                (LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
                (ORIGINAL_REPLICAS, "5")
            ]),
            Share::default()
        );
        assert_eq!(asleep(&[(ORIGINAL_REPLICAS, "5")]), Share::default());
    }

    #[test]
    fn an_object_of_a_kind_that_sleeps_on_or_off_is_one_object_and_no_replicas() {
        // As the rules read it: `original-suspend: "false"` or an `original-value` reads as 1.
        let ours = annotations(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "1")]);
        let on_off: Vec<_> = TargetKind::catalogue()
            .filter(|kind| kind.is_on_off())
            .collect();
        assert_eq!(
            on_off,
            [
                TargetKind::CronJob,
                TargetKind::Job,
                TargetKind::ScaledObject,
                TargetKind::ScaledJob,
                TargetKind::Cluster
            ]
        );
        for kind in on_off {
            assert_eq!(
                share(kind, &ours),
                Share {
                    objects: 1,
                    replicas: 0
                },
                "{kind}"
            );
        }
    }
}
