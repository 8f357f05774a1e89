use http::{Request, Response};
use k8s_openapi::{api::coordination::v1::LeaseSpec, apimachinery::pkg::apis::meta::v1::MicroTime};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower_test::mock::{Handle, SendResponse};

use super::{lease::*, *};
use crate::mock_api::{ALREADY_EXISTS, Exchange, NOT_FOUND, mock_client};

const NS: &str = "cronscaler";
const NAME: &str = "cronscaler";
const ME: &str = "cronscaler-6d9f8c7b5-x2k4q";
const OTHER: &str = "cronscaler-6d9f8c7b5-7wz8m";
const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases/cronscaler";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases";

const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

fn wall(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn micro_time(text: &str) -> MicroTime {
    MicroTime(wall(text))
}

// ---------------------------------------------------------------------------------------------
// The decisions, without I/O.

fn spec(holder: Option<&str>, duration: Option<i32>, transitions: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: holder.map(str::to_string),
        lease_duration_seconds: duration,
        acquire_time: Some(micro_time("2026-11-21T17:00:00Z")),
        renew_time: Some(micro_time("2026-11-21T17:59:58.5Z")),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

fn lease_with(spec: LeaseSpec) -> Lease {
    Lease {
        spec: Some(spec),
        ..Lease::default()
    }
}

#[test]
fn a_holder_renewed_within_the_lease_duration_is_live() {
    // Renewed at 17:59:58.5 for 15 s: held until 18:00:13.5.
    let lease = lease_with(spec(Some(OTHER), Some(15), 1));
    assert_eq!(
        live_holder(&lease, wall("2026-11-21T18:00:13Z")),
        Some(LiveHolder {
            identity: OTHER.into(),
            renewed: wall("2026-11-21T17:59:58.5Z"),
            lease_duration: LEASE_DURATION,
        })
    );
    assert_eq!(live_holder(&lease, wall("2026-11-21T18:00:13.5Z")), None);
    assert!(
        live_holder(&lease, wall("2026-11-21T17:59:00Z")).is_some(),
        "a renewal ahead of our clock is recent"
    );
}

#[test]
fn a_released_or_incomplete_lease_has_no_live_holder() {
    let now = wall("2026-11-21T18:00:00Z");
    let released = spec(Some(""), Some(1), 1);
    let no_holder = spec(None, Some(15), 1);
    let no_duration = spec(Some(OTHER), None, 1);
    let negative = spec(Some(OTHER), Some(-15), 1);
    let never_renewed = LeaseSpec {
        renew_time: None,
        ..spec(Some(OTHER), Some(15), 1)
    };
    for spec in [released, no_holder, no_duration, negative, never_renewed] {
        assert_eq!(
            live_holder(&lease_with(spec.clone()), now),
            None,
            "{spec:?}"
        );
    }
    assert_eq!(live_holder(&Lease::default(), now), None);
}

fn observed(spec: LeaseSpec, resource_version: &str, at: Instant) -> ObservedLease {
    ObservedLease {
        lease: Lease {
            metadata: ObjectMeta {
                name: Some(NAME.into()),
                namespace: Some(NS.into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        },
        at,
    }
}

#[test]
fn a_free_lease_is_acquired() {
    let at = Instant::now();
    assert!(can_acquire(None, ME, at, LEASE_DURATION), "no Lease yet");
    for free in [None, Some("")] {
        let lease = observed(spec(free, Some(15), 3), "7", at);
        assert!(
            can_acquire(Some(&lease), ME, at, LEASE_DURATION),
            "holder {free:?}"
        );
    }
}

#[test]
fn a_lease_held_by_another_and_renewed_recently_is_not_acquired() {
    let at = Instant::now();
    let lease = observed(spec(Some(OTHER), Some(15), 3), "7", at);
    assert!(!can_acquire(Some(&lease), ME, at, LEASE_DURATION));
    assert!(!can_acquire(
        Some(&lease),
        ME,
        at + LEASE_DURATION - Duration::from_millis(1),
        LEASE_DURATION
    ));
}

#[test]
fn a_lease_held_by_another_but_unchanged_for_its_duration_is_acquired() {
    let at = Instant::now();
    let lease = observed(spec(Some(OTHER), Some(15), 3), "7", at);
    assert!(can_acquire(Some(&lease), ME, at + secs(15), LEASE_DURATION));

    // The holder's own duration counts, not ours.
    let long = observed(spec(Some(OTHER), Some(40), 3), "7", at);
    assert!(!can_acquire(Some(&long), ME, at + secs(39), LEASE_DURATION));
    assert!(can_acquire(Some(&long), ME, at + secs(40), LEASE_DURATION));

    // A Lease that states no usable duration is given ours.
    for missing in [None, Some(0), Some(-5)] {
        let lease = observed(spec(Some(OTHER), missing, 3), "7", at);
        assert!(
            !can_acquire(Some(&lease), ME, at + secs(14), LEASE_DURATION),
            "{missing:?}"
        );
        assert!(
            can_acquire(Some(&lease), ME, at + secs(15), LEASE_DURATION),
            "{missing:?}"
        );
    }
}

#[test]
fn the_observation_time_moves_only_when_the_lease_changes() {
    let first = Instant::now();
    let later = first + secs(8);
    let seen = observed(spec(Some(OTHER), Some(15), 3), "7", first);

    let same = observe(Some(seen.clone()), seen.lease.clone(), later);
    assert_eq!(
        same.at, first,
        "an unchanged Lease keeps its observation time"
    );

    let renewed = observed(spec(Some(OTHER), Some(15), 3), "8", later).lease;
    assert_eq!(observe(Some(seen.clone()), renewed, later).at, later);

    let mut respecified = seen.lease.clone();
    if let Some(spec) = respecified.spec.as_mut() {
        spec.renew_time = Some(micro_time("2026-11-21T18:00:00Z"));
    }
    assert_eq!(observe(Some(seen), respecified, later).at, later);

    let fresh = observed(spec(Some(OTHER), Some(15), 3), "7", first).lease;
    assert_eq!(observe(None, fresh, later).at, later);
}

#[test]
fn our_own_lease_is_renewed_keeping_acquire_time_and_transitions() {
    let at = Instant::now();
    let ours = observed(spec(Some(ME), Some(15), 3), "7", at);
    assert!(
        can_acquire(Some(&ours), ME, at + secs(3600), LEASE_DURATION),
        "ours, however old"
    );
    assert!(can_acquire(Some(&ours), ME, at, LEASE_DURATION));

    let now = wall("2026-11-21T18:00:00Z");
    let renewed = next_spec(ours.spec(), ME, LEASE_DURATION, now);
    assert_eq!(renewed.holder_identity.as_deref(), Some(ME));
    assert_eq!(renewed.lease_duration_seconds, Some(15));
    assert_eq!(
        renewed.acquire_time,
        Some(micro_time("2026-11-21T17:00:00Z"))
    );
    assert_eq!(renewed.renew_time, Some(MicroTime(now)));
    assert_eq!(renewed.lease_transitions, Some(3));
}

#[test]
fn lease_transitions_increment_only_when_the_holder_changes() {
    let now = wall("2026-11-21T18:00:00Z");
    let created = next_spec(None, ME, LEASE_DURATION, now);
    assert_eq!(created.lease_transitions, Some(0));
    assert_eq!(created.acquire_time, Some(MicroTime(now)));
    assert_eq!(created.renew_time, Some(MicroTime(now)));
    assert_eq!(created.holder_identity.as_deref(), Some(ME));

    let ours = spec(Some(ME), Some(15), 3);
    assert_eq!(
        next_spec(Some(&ours), ME, LEASE_DURATION, now).lease_transitions,
        Some(3)
    );

    let mut theirs = spec(Some(OTHER), Some(30), 3);
    theirs.preferred_holder = Some(OTHER.into());
    theirs.strategy = Some("OldestEmulationVersion".into());
    let taken = next_spec(Some(&theirs), ME, LEASE_DURATION, now);
    assert_eq!(taken.lease_transitions, Some(4));
    assert_eq!(taken.holder_identity.as_deref(), Some(ME));
    assert_eq!(taken.lease_duration_seconds, Some(15), "our duration now");
    assert_eq!(taken.acquire_time, Some(MicroTime(now)));
    assert_eq!(taken.preferred_holder.as_deref(), Some(OTHER), "not ours");
    assert_eq!(taken.strategy.as_deref(), Some("OldestEmulationVersion"));

    let released = spec(Some(""), Some(1), 3);
    assert_eq!(
        next_spec(Some(&released), ME, LEASE_DURATION, now).lease_transitions,
        Some(4),
        "from nobody to us is a transition, as in client-go"
    );
}

#[test]
fn a_renewal_moves_renew_time_even_when_the_wall_clock_did_not() {
    let ours = spec(Some(ME), Some(15), 3);
    let stuck = wall("2026-11-21T17:59:58.5Z");
    let renewed = next_spec(Some(&ours), ME, LEASE_DURATION, stuck);
    assert_eq!(
        renewed.renew_time,
        Some(micro_time("2026-11-21T17:59:58.500001Z"))
    );
    let behind = wall("2026-11-21T17:00:00Z");
    let renewed = next_spec(Some(&ours), ME, LEASE_DURATION, behind);
    assert_eq!(
        renewed.renew_time,
        Some(micro_time("2026-11-21T17:59:58.500001Z"))
    );
}

#[test]
fn times_are_written_with_microseconds() {
    let now = wall("2026-11-21T18:00:00.123456789Z");
    let created = serde_json::to_value(next_spec(None, ME, LEASE_DURATION, now)).unwrap();
    assert_eq!(created["renewTime"], "2026-11-21T18:00:00.123456Z");
    assert_eq!(created["acquireTime"], "2026-11-21T18:00:00.123456Z");
}

#[test]
fn the_renew_deadline_passed_means_step_down() {
    let renewed = Instant::now();
    assert!(!must_step_down(renewed, RENEW_DEADLINE, renewed));
    assert!(!must_step_down(
        renewed,
        RENEW_DEADLINE,
        renewed + RENEW_DEADLINE - Duration::from_millis(1)
    ));
    assert!(must_step_down(
        renewed,
        RENEW_DEADLINE,
        renewed + RENEW_DEADLINE
    ));
}

#[test]
fn a_release_clears_the_holder_and_keeps_transitions() {
    let now = wall("2026-11-21T18:00:00Z");
    let released = released_spec(Some(&spec(Some(ME), Some(15), 3)), now);
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(3));
    assert_eq!(released.renew_time, Some(MicroTime(now)));
}

#[test]
fn the_lease_duration_is_written_in_whole_seconds_rounded_up() {
    assert_eq!(lease_seconds(secs(15)), 15);
    assert_eq!(lease_seconds(Duration::from_millis(15_001)), 16);
    assert_eq!(lease_seconds(Duration::from_millis(200)), 1);
    assert_eq!(lease_seconds(Duration::ZERO), 1);
}

#[test]
fn configurations_that_could_allow_two_leaders_are_refused() {
    let defaults = LeaderConfig::new(NS, NAME, ME);
    assert_eq!(defaults.lease_duration, secs(15));
    assert_eq!(defaults.renew_deadline, secs(10));
    assert_eq!(defaults.retry_period, secs(2));
    assert_eq!(defaults.check(), Ok(()));

    let as_long = LeaderConfig {
        renew_deadline: secs(15),
        ..defaults.clone()
    };
    assert_eq!(
        as_long.check(),
        Err("renew_deadline 15s must be shorter than lease_duration 15s".into())
    );
    let slow_retries = LeaderConfig {
        retry_period: Duration::from_millis(10_250),
        ..defaults.clone()
    };
    assert_eq!(
        slow_retries.check(),
        Err("retry_period 10s must be shorter than renew_deadline 10s".into())
    );
    let anonymous = LeaderConfig {
        identity: String::new(),
        ..defaults
    };
    assert!(anonymous.check().is_err(), "an empty holder means free");
}

// ---------------------------------------------------------------------------------------------
// Against the scripted API server. Time is paused: it jumps to the next timer whenever every
// task waits, so `start.elapsed()` is exact and retry periods pass at once.

/// The Lease as a v1.24+ API server returns it.
fn lease(holder: &str, resource_version: u32, transitions: i32) -> Value {
    json!({
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": "0b7f4d0e-4a54-4c7e-9a53-1f0c3f6c2a11",
            "resourceVersion": resource_version.to_string(),
            "creationTimestamp": "2026-11-21T17:00:00Z",
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": if holder.is_empty() { 1 } else { 15 },
            "acquireTime": "2026-11-21T17:00:00.000000Z",
            "renewTime": format!("2026-11-21T18:00:00.{resource_version:06}Z"),
            "leaseTransitions": transitions,
        },
    })
}

/// A captured `Status` body, re-addressed to the Lease.
fn status(captured: &str, code: u16, reason: &str, message: &str) -> Value {
    let mut body: Value = serde_json::from_str(captured).unwrap();
    body["code"] = json!(code);
    body["reason"] = json!(reason);
    body["message"] = json!(message);
    body["details"] = json!({ "name": NAME, "group": "coordination.k8s.io", "kind": "leases" });
    body
}

fn not_found() -> Value {
    status(
        NOT_FOUND,
        404,
        "NotFound",
        "leases.coordination.k8s.io \"cronscaler\" not found",
    )
}

fn conflict() -> Value {
    status(
        ALREADY_EXISTS,
        409,
        "Conflict",
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"cronscaler\": the object has been modified; please apply your changes to the latest version and try again",
    )
}

fn internal_error() -> Value {
    let mut body = status(
        NOT_FOUND,
        500,
        "InternalError",
        "Internal error occurred: etcdserver: request timed out",
    );
    body["details"] = json!({ "causes": [{ "message": "etcdserver: request timed out" }] });
    body
}

fn get(reply: Value) -> Exchange {
    let code = reply["code"].as_u64().map_or(200, |code| code as u16);
    Exchange::new("GET", LEASE).reply(code, reply)
}

fn put_path() -> String {
    format!("{LEASE}?&fieldManager=cronscaler")
}

/// A PUT of the Lease read at `resource_version`, holding it with `transitions`; the server
/// stores it as the next resourceVersion.
fn hold(resource_version: u32, transitions: i32) -> Exchange {
    Exchange::new("PUT", put_path())
        .content_type("application/json")
        .body(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": { "name": NAME, "namespace": NS, "resourceVersion": resource_version.to_string() },
            "spec": { "holderIdentity": ME, "leaseDurationSeconds": 15, "leaseTransitions": transitions },
        }))
        .reply(200, lease(ME, resource_version + 1, transitions))
}

/// The same PUT, answered with an error.
fn hold_refused(resource_version: u32, transitions: i32, reply: Value) -> Exchange {
    let code = reply["code"].as_u64().map_or(500, |code| code as u16);
    hold(resource_version, transitions).reply(code, reply)
}

/// The release: a PUT of the Lease at `resource_version` with no holder and a 1 s duration.
fn release(resource_version: u32, transitions: i32) -> Exchange {
    Exchange::new("PUT", put_path())
        .body(json!({
            "metadata": { "resourceVersion": resource_version.to_string() },
            "spec": { "holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": transitions },
        }))
        .reply(200, lease("", resource_version + 1, transitions))
}

struct Election {
    is_leader: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    elector: JoinHandle<()>,
    server: JoinHandle<()>,
    start: Instant,
}

fn elect(config: LeaderConfig, script: Vec<Exchange>) -> Election {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(script));
    let (stop, stopped) = oneshot::channel::<()>();
    let (is_leader, elector) = spawn(client, config, async {
        let _ = stopped.await;
    });
    Election {
        is_leader,
        stop: Some(stop),
        elector,
        server,
        start: Instant::now(),
    }
}

fn config() -> LeaderConfig {
    LeaderConfig::new(NS, NAME, ME)
}

impl Election {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// The instant (from the start) at which the receiver says `leading`.
    async fn when(&mut self, leading: bool) -> Duration {
        let waited = tokio::time::timeout(
            secs(300),
            self.is_leader.wait_for(|value| *value == leading),
        )
        .await
        .is_ok_and(|seen| seen.is_ok());
        if waited {
            return self.now();
        }
        // Most likely the script failed: show why.
        self.elector.abort();
        let _ = (&mut self.elector).await;
        if let Err(error) = (&mut self.server).await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
        panic!("the receiver never said {leading}");
    }

    /// Resolves the shutdown future; the elector must end (having sent what the script expects).
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let ended = tokio::time::timeout(secs(60), &mut self.elector).await;
        if ended.is_err() {
            self.elector.abort();
        }
        if let Err(error) = self.server.await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
        assert!(matches!(ended, Ok(Ok(()))), "the elector ended: {ended:?}");
        assert!(!*self.is_leader.borrow(), "false once stopped");
    }
}

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_and_acted_on_after_a_lease_duration() {
    let mut script = vec![
        get(not_found()),
        Exchange::new("POST", format!("{LEASES}?&fieldManager=cronscaler"))
            .content_type("application/json")
            .body(json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": { "name": NAME, "namespace": NS },
                "spec": { "holderIdentity": ME, "leaseDurationSeconds": 15, "leaseTransitions": 0 },
            }))
            .reply(201, lease(ME, 1, 0)),
    ];
    // Held, not yet acted on: renewed at 2, 4, ..., 14 s.
    script.extend((1..=7).map(|rv| hold(rv, 0)));
    script.push(release(8, 0));
    let mut election = elect(config(), script);
    assert_eq!(
        election.when(true).await,
        LEASE_DURATION,
        "a Lease we create may have been deleted under a live leader: wait out its term"
    );
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_once_and_renewed_every_retry_period() {
    let script = vec![
        get(lease("", 7, 3)),
        hold(7, 4),
        hold(8, 4),  // 2 s
        hold(9, 4),  // 4 s
        hold(10, 4), // 6 s
        release(11, 4),
    ];
    let mut election = elect(config(), script);
    assert_eq!(election.when(true).await, Duration::ZERO);
    tokio::time::sleep(secs(7)).await;
    assert!(
        *election.is_leader.borrow_and_update(),
        "still leading at 7 s"
    );
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_held_lease_is_taken_only_a_lease_duration_after_its_last_change() {
    let mut script = vec![get(lease(OTHER, 7, 3)), get(lease(OTHER, 7, 3))];
    // The holder renews (seen at 4 s), then goes silent: the term runs from 4 s on our clock,
    // whatever the renewTime says.
    script.extend((0..9).map(|_| get(lease(OTHER, 8, 3)))); // 4, 6, ..., 20 s
    script.push(hold(8, 4));
    script.push(release(9, 4));
    let mut election = elect(config(), script);
    assert_eq!(
        election.when(true).await,
        secs(20),
        "first read at or after 4 + 15 s"
    );
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_conflict_on_renewal_stops_acting_at_once() {
    let script = vec![
        get(lease("", 7, 3)),
        hold(7, 4),
        hold_refused(8, 4, conflict()), // 2 s: someone else wrote the Lease
        get(lease(OTHER, 10, 5)),       // 4 s: and holds it
    ];
    let mut election = elect(config(), script);
    assert_eq!(election.when(true).await, Duration::ZERO);
    assert_eq!(election.when(false).await, secs(2));
    tokio::time::sleep(secs(3)).await;
    assert!(!*election.is_leader.borrow());
    // Not the holder: nothing to release.
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn another_holder_seen_on_a_read_stops_acting_at_once() {
    let script = vec![
        get(lease("", 7, 3)),
        hold(7, 4),
        hold_refused(8, 4, internal_error()), // 2 s: unknown; still leading
        get(lease(OTHER, 10, 5)),             // 4 s
    ];
    let mut election = elect(config(), script);
    assert_eq!(election.when(true).await, Duration::ZERO);
    tokio::time::sleep(secs(3)).await;
    assert!(
        *election.is_leader.borrow(),
        "one failed renewal is not a loss"
    );
    assert_eq!(election.when(false).await, secs(4));
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn with_the_api_server_down_the_leader_steps_down_before_the_lease_can_expire_and_comes_back()
{
    let script = vec![
        get(lease("", 7, 3)),
        hold(7, 4),
        hold(8, 4),                           // 2 s: the last renewal that succeeds
        hold_refused(9, 4, internal_error()), // 4 s
        get(internal_error()),                // 6 s
        get(internal_error()),                // 8 s
        get(internal_error()),                // 10 s
        get(internal_error()),                // 12 s, just after stepping down
        get(lease(ME, 9, 4)),                 // 14 s: back, and nobody took it
        hold(9, 4),
        release(10, 4),
    ];
    let mut election = elect(config(), script);
    assert_eq!(election.when(true).await, Duration::ZERO);
    let stepped_down = election.when(false).await;
    assert_eq!(stepped_down, secs(2) + RENEW_DEADLINE);
    assert!(
        stepped_down < secs(2) + LEASE_DURATION,
        "before any standby may act"
    );
    assert_eq!(election.when(true).await, secs(14));
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_standby_that_never_held_the_lease_sends_nothing_on_shutdown() {
    let script = vec![get(lease(OTHER, 7, 3)), get(lease(OTHER, 8, 3))];
    let election = elect(config(), script);
    tokio::time::sleep(secs(3)).await;
    assert!(!*election.is_leader.borrow());
    election.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_configuration_never_leads_and_sends_nothing() {
    let config = LeaderConfig {
        renew_deadline: LEASE_DURATION,
        ..config()
    };
    let election = elect(config, vec![]);
    tokio::time::sleep(secs(60)).await;
    assert!(!*election.is_leader.borrow());
    election.stop().await;
}

// ---------------------------------------------------------------------------------------------
// What the script cannot express: connection errors, a request that never gets an answer, and
// looking at the receiver while a request is in flight. A bare mock service serves these.

type Server = Handle<Request<Body>, Response<Body>>;
type Pending = SendResponse<Response<Body>>;

/// The next request, which must be `method path`; its JSON body and the means to answer it.
async fn next(server: &mut Server, method: &str, path: &str) -> (Value, Pending) {
    let Ok(Some((request, respond))) = tokio::time::timeout(secs(60), server.next_request()).await
    else {
        panic!("expected {method} {path}, got nothing");
    };
    let (parts, body) = request.into_parts();
    assert_eq!(
        (parts.method.as_str(), parts.uri.to_string().as_str()),
        (method, path)
    );
    let bytes = body.collect_bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (body, respond)
}

/// `future`'s output, or a failure after a minute (of paused time: at once).
async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(secs(60), future)
        .await
        .expect("waited a minute in vain")
}

fn answer(respond: Pending, code: u16, body: &Value) {
    respond.send_response(
        Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap(),
    );
}

fn refuse_connection(respond: Pending) {
    respond.send_error(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connect: connection refused (10.96.0.1:443)",
    ));
}

fn bare_election() -> (
    Server,
    watch::Receiver<bool>,
    oneshot::Sender<()>,
    JoinHandle<()>,
) {
    let (service, server) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let (stop, stopped) = oneshot::channel::<()>();
    let (is_leader, elector) = spawn(client, config(), async {
        let _ = stopped.await;
    });
    (server, is_leader, stop, elector)
}

#[tokio::test(start_paused = true)]
async fn connection_errors_and_a_hung_request_end_leadership_at_the_renew_deadline() {
    let start = Instant::now();
    let (mut server, mut is_leader, stop, elector) = bare_election();
    let put = put_path();

    let (_, respond) = next(&mut server, "GET", LEASE).await;
    answer(respond, 200, &lease("", 7, 3));
    let (_, respond) = next(&mut server, "PUT", &put).await;
    answer(respond, 200, &lease(ME, 8, 4));
    within(is_leader.wait_for(|leading| *leading))
        .await
        .unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);

    let (_, respond) = next(&mut server, "PUT", &put).await; // 2 s
    refuse_connection(respond);
    let (_, respond) = next(&mut server, "GET", LEASE).await; // 4 s
    refuse_connection(respond);
    assert!(*is_leader.borrow(), "still inside the renew deadline");
    let (_, hung) = next(&mut server, "GET", LEASE).await; // 6 s: never answered
    assert_eq!(start.elapsed(), secs(6));

    within(is_leader.wait_for(|leading| !*leading))
        .await
        .unwrap();
    assert_eq!(
        start.elapsed(),
        RENEW_DEADLINE,
        "stepped down with the request still in flight, 5 s before the Lease can expire"
    );
    let (_, respond) = next(&mut server, "GET", LEASE).await; // 10 s: the next attempt
    assert_eq!(start.elapsed(), RENEW_DEADLINE);
    refuse_connection(respond);

    // On shutdown it may still hold the Lease: it reads, and releases what is still its own.
    let _ = stop.send(());
    let (_, respond) = next(&mut server, "GET", LEASE).await;
    answer(respond, 200, &lease(ME, 8, 4));
    let (body, respond) = next(&mut server, "PUT", &put).await;
    assert_eq!(body["metadata"]["resourceVersion"], "8");
    assert_eq!(body["spec"]["holderIdentity"], "");
    answer(respond, 200, &lease("", 9, 4));
    tokio::time::timeout(secs(60), elector)
        .await
        .unwrap()
        .unwrap();
    drop(hung);
}

#[tokio::test(start_paused = true)]
async fn a_release_stops_acting_before_it_writes_the_lease() {
    let (mut server, mut is_leader, stop, elector) = bare_election();
    let put = put_path();
    let (_, respond) = next(&mut server, "GET", LEASE).await;
    answer(respond, 200, &lease("", 7, 3));
    let (_, respond) = next(&mut server, "PUT", &put).await;
    answer(respond, 200, &lease(ME, 8, 4));
    within(is_leader.wait_for(|leading| *leading))
        .await
        .unwrap();

    let _ = stop.send(());
    let (body, respond) = next(&mut server, "PUT", &put).await;
    assert!(
        !*is_leader.borrow(),
        "a standby may act as soon as this lands"
    );
    assert_eq!(body["metadata"]["resourceVersion"], "8");
    assert_eq!(body["spec"]["holderIdentity"], "");
    assert_eq!(body["spec"]["leaseDurationSeconds"], 1);
    assert_eq!(body["spec"]["leaseTransitions"], 4);
    answer(respond, 200, &lease("", 9, 4));
    tokio::time::timeout(secs(60), elector)
        .await
        .unwrap()
        .unwrap();
    assert!(
        within(server.next_request()).await.is_none(),
        "nothing after the release"
    );
}
