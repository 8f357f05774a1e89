//! Status conditions as Kubernetes API conventions keep them: `lastTransitionTime` moves only
//! when a condition's status changes, so `kubectl describe` tells how long it has held.

use chrono::{DateTime, Utc};
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

/// The condition `type_` at `now`, keeping the time of its last change from `previous`.
pub fn condition(
    previous: &[Condition],
    type_: &str,
    holds: bool,
    reason: &str,
    message: String,
    observed_generation: Option<i64>,
    now: DateTime<Utc>,
) -> Condition {
    let status = if holds { "True" } else { "False" };
    let last_transition_time = previous
        .iter()
        .find(|condition| condition.type_ == type_ && condition.status == status)
        .map(|condition| condition.last_transition_time.clone())
        .unwrap_or_else(|| Time(timestamp(now)));
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation,
        last_transition_time,
    }
}

pub fn timestamp(time: DateTime<Utc>) -> Timestamp {
    Timestamp::new(time.timestamp(), time.timestamp_subsec_nanos() as i32)
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_transition_time_moves_only_when_the_status_does() {
        let at = |hour| Utc.with_ymd_and_hms(2026, 11, 24, hour, 0, 0).unwrap();
        let ready = condition(&[], "Ready", true, "Applied", "a".into(), Some(1), at(1));
        let later = condition(
            std::slice::from_ref(&ready),
            "Ready",
            true,
            "Applied",
            "b".into(),
            Some(2),
            at(2),
        );
        assert_eq!(later.last_transition_time, ready.last_transition_time);
        assert_eq!(later.message, "b");
        let changed = condition(
            &[later],
            "Ready",
            false,
            "InvalidSchedule",
            "c".into(),
            Some(3),
            at(3),
        );
        assert_eq!(changed.last_transition_time, Time(timestamp(at(3))));
    }
}
