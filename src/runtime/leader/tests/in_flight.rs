//! What the script cannot express: connection errors, a request that never gets an answer, and
//! looking at the receiver while a request is in flight. A bare mock service serves these.

use http::{Request, Response};
use kube::client::Body;
use serde_json::Value;
use tokio::sync::oneshot;
use tower_test::mock::{Handle, SendResponse};

use super::*;

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

/// Answers the first read with a free Lease (resourceVersion 7) and the write that follows with
/// it ours (8), and waits until the elector says it leads.
async fn takes_the_free_lease(server: &mut Server, is_leader: &mut watch::Receiver<bool>) {
    let (_, respond) = next(server, "GET", LEASE).await;
    answer(respond, 200, &lease("", 7, 3));
    let (_, respond) = next(server, "PUT", &put_path()).await;
    answer(respond, 200, &lease(ME, 8, 4));
    within(is_leader.wait_for(|leading| *leading))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn connection_errors_and_a_hung_request_end_leadership_at_the_renew_deadline() {
    let start = Instant::now();
    let (mut server, mut is_leader, stop, elector) = bare_election();
    let put = put_path();

    takes_the_free_lease(&mut server, &mut is_leader).await;
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
    takes_the_free_lease(&mut server, &mut is_leader).await;

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
