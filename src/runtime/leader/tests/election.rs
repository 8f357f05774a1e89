//! Against the scripted API server: creating, taking, renewing and releasing the Lease, and
//! stepping down on a conflict, another holder or the API server gone. Time is paused: it jumps
//! to the next timer whenever every task waits, so `start.elapsed()` is exact and retry periods
//! pass at once.

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::*;
use crate::mock_api::{ALREADY_EXISTS, Exchange, NOT_FOUND, mock_client};

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
