//! The Lease's rules, pure: what a replica makes of the Lease it read (who holds it, when it
//! expires on our own clock, whether we may take it), and the spec each write sends.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::{SignedDuration, Timestamp},
};
use tokio::time::Instant;

/// The Lease as last read or written, and the local instant from which it has looked like this.
#[derive(Clone, Debug)]
pub(super) struct ObservedLease {
    pub(super) lease: Lease,
    /// When this record (spec and resourceVersion) was first seen, on our monotonic clock.
    pub(super) at: Instant,
}

impl ObservedLease {
    pub(super) fn spec(&self) -> Option<&LeaseSpec> {
        self.lease.spec.as_ref()
    }
}

pub(super) fn holder(spec: Option<&LeaseSpec>) -> &str {
    spec.and_then(|spec| spec.holder_identity.as_deref())
        .unwrap_or("")
}

/// A replica that holds a Lease and has renewed it within the Lease's duration: a controller
/// that is running, as far as anyone outside it can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveHolder {
    pub identity: String,
    pub renewed: Timestamp,
    pub lease_duration: Duration,
}

/// Who keeps `lease` at `now`, judged by the wall clock (the only clock shared with the holder):
/// a holder whose `renewTime` is less than `leaseDurationSeconds` old. A released Lease (no
/// holder) or one left to expire has none. A `renewTime` in the future (a clock ahead of ours)
/// counts as just renewed.
pub fn live_holder(lease: &Lease, now: Timestamp) -> Option<LiveHolder> {
    let spec = lease.spec.as_ref()?;
    let identity = holder(Some(spec));
    let renewed = spec.renew_time.as_ref()?.0;
    let seconds = u64::try_from(spec.lease_duration_seconds?).ok()?;
    let lease_duration = Duration::from_secs(seconds);
    let held_until = renewed
        .checked_add(SignedDuration::try_from(lease_duration).ok()?)
        .ok()?;
    (!identity.is_empty() && now < held_until).then(|| LiveHolder {
        identity: identity.to_string(),
        renewed,
        lease_duration,
    })
}

/// Records a read of the Lease: the observation time moves only when the Lease changed (any
/// write changes its resourceVersion; a change of spec counts too).
pub(super) fn observe(
    previous: Option<ObservedLease>,
    lease: Lease,
    now: Instant,
) -> ObservedLease {
    match previous {
        Some(previous)
            if previous.lease.spec == lease.spec
                && previous.lease.metadata.resource_version == lease.metadata.resource_version =>
        {
            ObservedLease {
                lease,
                at: previous.at,
            }
        }
        _ => ObservedLease { lease, at: now },
    }
}

/// When the observed holder's term ends for us: the observation time plus the Lease's own
/// `leaseDurationSeconds` (ours, `fallback`, when the Lease states none that is positive).
pub(super) fn expires_at(observed: &ObservedLease, fallback: Duration) -> Instant {
    let duration = observed
        .spec()
        .and_then(|spec| spec.lease_duration_seconds)
        .and_then(|seconds| u64::try_from(seconds).ok())
        .filter(|&seconds| seconds > 0)
        .map_or(fallback, Duration::from_secs);
    observed.at + duration
}

/// Whether we may write ourselves in as holder: no Lease (create it), a free one, ours, or one
/// whose holder has not changed it for its lease duration on our clock.
pub(super) fn can_acquire(
    observed: Option<&ObservedLease>,
    identity: &str,
    now: Instant,
    fallback_duration: Duration,
) -> bool {
    let Some(observed) = observed else {
        return true;
    };
    let current = holder(observed.spec());
    current.is_empty() || current == identity || now >= expires_at(observed, fallback_duration)
}

/// When a leader whose last successful write was sent at `renewed` stops acting, unless it
/// renews again first.
pub(super) fn step_down_at(renewed: Instant, renew_deadline: Duration) -> Instant {
    renewed + renew_deadline
}

/// Whether a leader whose last successful write was sent at `renewed` must stop acting.
pub(super) fn must_step_down(renewed: Instant, renew_deadline: Duration, now: Instant) -> bool {
    now >= step_down_at(renewed, renew_deadline)
}

/// `leaseDurationSeconds` for a duration: whole seconds rounded up, at least 1.
pub(super) fn lease_seconds(duration: Duration) -> i32 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(seconds).unwrap_or(i32::MAX).max(1)
}

/// A wall-clock time as the API server stores it (microseconds).
pub(super) fn micro(time: Timestamp) -> MicroTime {
    MicroTime(Timestamp::from_microsecond(time.as_microsecond()).unwrap_or(time))
}

/// The spec that makes `identity` the holder: a renewal when `old` is already ours (acquireTime
/// and leaseTransitions kept), else a takeover (acquireTime now, leaseTransitions + 1; 0 for a new
/// Lease). Fields we do not own (`preferredHolder`, `strategy`) are kept.
pub(super) fn next_spec(
    old: Option<&LeaseSpec>,
    identity: &str,
    lease_duration: Duration,
    now: Timestamp,
) -> LeaseSpec {
    let now = micro(now);
    let old_spec = old.cloned().unwrap_or_default();
    if old.is_some() && holder(old) == identity {
        // Strictly later than the last renewal, so the write is never a no-op others miss.
        let renew_time = match &old_spec.renew_time {
            Some(last) if now <= *last => last
                .0
                .checked_add(SignedDuration::from_micros(1))
                .map_or_else(|_| now.clone(), MicroTime),
            _ => now.clone(),
        };
        LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(lease_seconds(lease_duration)),
            acquire_time: old_spec.acquire_time.clone().or(Some(now)),
            renew_time: Some(renew_time),
            lease_transitions: Some(old_spec.lease_transitions.unwrap_or(0)),
            ..old_spec
        }
    } else {
        let transitions = match old {
            Some(old) => old.lease_transitions.unwrap_or(0).saturating_add(1),
            None => 0,
        };
        LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(lease_seconds(lease_duration)),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..old_spec
        }
    }
}

/// The spec that gives the Lease up, as client-go's release does: no holder, a one-second
/// duration, times now, leaseTransitions kept.
pub(super) fn released_spec(old: Option<&LeaseSpec>, now: Timestamp) -> LeaseSpec {
    let now = micro(now);
    let old = old.cloned().unwrap_or_default();
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        lease_transitions: Some(old.lease_transitions.unwrap_or(0)),
        ..old
    }
}
