//! What the console answers, against a scripted API server that allows only what
//! `console/rbac.yaml` grants: what is refused asks the API server nothing, and a button pressed
//! is checked by a SubjectAccessReview before its request is made.

use chrono::{TimeDelta, Utc};
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::json;

use super::{
    Console,
    session::{COOKIE, Identity},
};
use crate::{
    commands::cli::{Cli, Command},
    mock_api::{Exchange, mock_console_client},
};

const REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews?";

fn alice() -> Identity {
    Identity {
        user: "alice".into(),
        groups: vec!["system:authenticated".into()],
    }
}

/// A session cookie of alice's, for an hour.
fn alices_session(console: &Console) -> String {
    console
        .keys
        .seal(&alice(), Utc::now() + TimeDelta::hours(1))
}

/// What the console answers to `requests`, one after another, while the API server answers
/// `script` and nothing more.
async fn answered(
    script: Vec<Exchange>,
    requests: impl FnOnce(&Console) -> Vec<Request<Full<Bytes>>>,
) -> Vec<(StatusCode, String)> {
    let Command::Console(args) = Cli::parse_args(["cronscaler", "console"]).unwrap().command else {
        unreachable!("the console's command");
    };
    let (client, server) = mock_console_client();
    let server = tokio::spawn(server.serve(script));
    let console = Console::new(client, &args).await.unwrap();
    let mut answers = Vec::new();
    for request in requests(&console) {
        let response = console.respond(request, false).await;
        let status = response.status();
        answers.push((
            status,
            String::from_utf8_lossy(response.body()).into_owned(),
        ));
    }
    drop(console);
    server.await.unwrap();
    answers
}

fn post(path: &str, cookie: Option<&str>, form: &str) -> Request<Full<Bytes>> {
    let mut request =
        Request::post(path).header("content-type", "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header("cookie", format!("{COOKIE}={cookie}"));
    }
    request
        .body(Full::new(Bytes::from(form.to_string())))
        .unwrap()
}

fn get(path: &str, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut request = Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Full::new(Bytes::new())).unwrap()
}

#[tokio::test]
async fn nobody_sees_only_the_sign_in_page_whatever_headers_they_send() {
    let answers = answered(vec![], |_| {
        vec![
            get("/", &[]),
            // A proxy's headers, sent straight to the console: not from a trusted address.
            get(
                "/",
                &[
                    ("x-forwarded-user", "admin"),
                    ("x-forwarded-groups", "system:masters"),
                ],
            ),
            post("/act", None, "namespace=team-a&do=wake-1h&token=x"),
        ]
    })
    .await;
    for (status, page) in &answers[..2] {
        assert_eq!(*status, StatusCode::OK);
        assert!(page.contains(r#"action="/sign-in""#), "{page}");
        assert!(!page.contains("team-a"), "{page}");
    }
    assert_eq!(answers[2].0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_forged_form_is_refused_and_asks_the_api_server_nothing() {
    let answers = answered(vec![], |console| {
        let cookie = alices_session(console);
        let bob = Identity {
            user: "bob".into(),
            groups: vec![],
        };
        let bobs_token = console.keys.form_token(&bob);
        vec![
            post(
                "/act",
                Some(&cookie),
                "namespace=team-a&do=wake-1h&token=guessed",
            ),
            post(
                "/act",
                Some(&cookie),
                &format!("namespace=team-a&do=wake-1h&token={bobs_token}"),
            ),
            post("/act", Some(&cookie), "namespace=team-a&do=wake-1h"),
        ]
    })
    .await;
    assert_eq!(answers[0].0, StatusCode::FORBIDDEN);
    assert!(
        answers[0].1.contains("nothing was changed"),
        "{}",
        answers[0].1
    );
    assert_eq!(answers[1].0, StatusCode::FORBIDDEN);
    assert_eq!(answers[2].0, StatusCode::BAD_REQUEST);
    assert!(
        answers[2]
            .1
            .contains("the form has no field &quot;token&quot;"),
        "{}",
        answers[2].1
    );
}

#[tokio::test]
async fn a_form_another_site_sends_is_refused_sign_in_included() {
    let answers = answered(vec![], |console| {
        let cookie = alices_session(console);
        let token = console.keys.form_token(&alice());
        let mut cross_site = post("/sign-in", None, "token=the-attacker-s-own");
        (cross_site.headers_mut()).insert("sec-fetch-site", "cross-site".parse().unwrap());
        let form = format!("namespace=team-a&do=wake-1h&token={token}");
        let mut elsewhere = post("/act", Some(&cookie), &form);
        (elsewhere.headers_mut()).insert("host", "console.example".parse().unwrap());
        (elsewhere.headers_mut()).insert("origin", "https://evil.example".parse().unwrap());
        // Where anyone may say the host it asked: only a trusted proxy's word counts.
        let mut claimed = post("/act", Some(&cookie), &form);
        (claimed.headers_mut()).insert("host", "console.example".parse().unwrap());
        (claimed.headers_mut()).insert("origin", "https://evil.example".parse().unwrap());
        (claimed.headers_mut()).insert("x-forwarded-host", "evil.example".parse().unwrap());
        vec![cross_site, elsewhere, claimed]
    })
    .await;
    for (status, page) in answers {
        assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
        assert!(page.contains("nothing was changed"), "{page}");
    }
}

#[tokio::test]
async fn a_button_the_api_server_does_not_allow_is_refused_with_the_rule_to_ask_for() {
    let script = vec![
        Exchange::new("POST", REVIEWS)
            .body(json!({
                "spec": {
                    "user": "alice",
                    "groups": ["system:authenticated"],
                    "resourceAttributes": {
                        "verb": "create", "group": "cronscaler.dev",
                        "resource": "overriderequests", "namespace": "team-b",
                    },
                },
            }))
            .reply(201, json!({ "spec": {}, "status": { "allowed": false } })),
    ];
    let answers = answered(script, |console| {
        let cookie = alices_session(console);
        let token = console.keys.form_token(&alice());
        vec![post(
            "/act",
            Some(&cookie),
            &format!("namespace=team-b&do=snooze&token={token}"),
        )]
    })
    .await;
    let (status, page) = &answers[0];
    assert_eq!(*status, StatusCode::FORBIDDEN);
    assert!(
        page.contains("You (alice) may not create overriderequests.cronscaler.dev in team-b, so nothing was changed"),
        "{page}"
    );
}

#[tokio::test]
async fn a_token_the_api_server_does_not_know_signs_nobody_in() {
    let script = vec![
        Exchange::new("POST", "/apis/authentication.k8s.io/v1/tokenreviews?")
            .body(json!({ "spec": { "token": "not-a-token" } }))
            .reply(
                201,
                json!({ "spec": {}, "status": { "authenticated": false } }),
            ),
    ];
    let answers = answered(script, |_| {
        vec![post("/sign-in", None, "token=not-a-token")]
    })
    .await;
    let (status, page) = &answers[0];
    assert_eq!(*status, StatusCode::UNAUTHORIZED);
    assert!(
        page.contains("The API server does not accept that token."),
        "{page}"
    );
}

/// A review of alice's asking to `list` `resource` cluster-wide, answered `allowed`.
fn may_list(resource: &str, allowed: bool) -> Exchange {
    let mut attributes = json!({ "verb": "list", "resource": resource });
    if resource == "poddisruptionbudgets" {
        attributes["group"] = json!("policy");
    }
    Exchange::new("POST", REVIEWS)
        .body(json!({
            "spec": {
                "user": "alice",
                "groups": ["system:authenticated"],
                "resourceAttributes": attributes,
            },
        }))
        .reply(201, json!({ "spec": {}, "status": { "allowed": allowed } }))
}

/// What the page of nodes answers alice twice in a row, the API server answering `script`.
async fn alice_twice_at_the_nodes(script: Vec<Exchange>) -> Vec<(StatusCode, String)> {
    answered(script, |console| {
        let cookie = format!("{COOKIE}={}", alices_session(console));
        vec![
            get("/nodes", &[("cookie", &cookie)]),
            get("/nodes", &[("cookie", &cookie)]),
        ]
    })
    .await
}

fn list(items: serde_json::Value) -> serde_json::Value {
    json!({ "metadata": { "resourceVersion": "1" }, "items": items })
}

#[tokio::test]
async fn the_page_of_nodes_is_refused_to_whoever_may_not_list_pods_or_budgets_everywhere() {
    let script = vec![
        may_list("nodes", true),
        may_list("pods", false),
        may_list("poddisruptionbudgets", false),
    ];
    let answers = answered(script, |console| {
        let cookie = alices_session(console);
        vec![
            get("/nodes", &[("cookie", &format!("{COOKIE}={cookie}"))]),
            get("/nodes", &[]),
        ]
    })
    .await;
    let (status, page) = &answers[0];
    assert_eq!(*status, StatusCode::FORBIDDEN);
    assert!(
        page.contains(
            "You (alice) may not list pods cluster-wide, nor list poddisruptionbudgets.policy \
             cluster-wide"
        ),
        "{page}"
    );
    assert_eq!(answers[1].0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_page_of_nodes_says_what_keeps_each_node_read_once_for_many_pages() {
    let nights = "/api/v1/namespaces/{}/configmaps/cronscaler-nights";
    let not_found = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404 });
    let script = vec![
        may_list("nodes", true),
        may_list("pods", true),
        may_list("poddisruptionbudgets", true),
        Exchange::new("GET", "/api/v1/nodes?&limit=500").reply(
            200,
            list(json!([{
                "metadata": { "name": "node-a", "labels": { "karpenter.sh/nodepool": "general" } },
                "status": { "allocatable": { "cpu": "4", "memory": "16Gi" } },
            }])),
        ),
        Exchange::new("GET", "/apis/policy/v1/poddisruptionbudgets?&limit=500")
            .reply(200, list(json!([]))),
        Exchange::new(
            "GET",
            "/api/v1/pods?&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed%2Cspec.nodeName%21%3D&limit=500",
        )
        .reply(
            200,
            list(json!([{
                "metadata": {
                    "name": "db-0", "namespace": "team-a",
                    "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": true }],
                },
                "spec": {
                    "nodeName": "node-a", "containers": [],
                    "volumes": [{ "name": "scratch", "emptyDir": {} }],
                },
                "status": { "phase": "Running" },
            }])),
        ),
        Exchange::new("GET", nights.replace("{}", "cronscaler")).reply(404, not_found.clone()),
        Exchange::new("GET", nights.replace("{}", "default")).reply(404, not_found),
    ];
    // The second page is the first read again, and the answers kept: nothing is asked.
    let answers = alice_twice_at_the_nodes(script).await;
    for (status, page) in answers {
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(
            page.contains(
                "<td>node-a</td><td>general</td><td>1</td><td>team-a/StatefulSet/db: local storage scratch</td>"
            ),
            "{page}"
        );
        assert!(
            page.contains("1 nodes: 1 kept by Pods that cannot move"),
            "{page}"
        );
        assert!(page.contains("no night recorded with nodes yet"), "{page}");
    }
}

#[tokio::test]
async fn a_read_of_the_nodes_that_failed_is_said_again_not_read_again_at_once() {
    let failure = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "message": "etcd is slow", "code": 500 });
    let script = vec![
        may_list("nodes", true),
        may_list("pods", true),
        may_list("poddisruptionbudgets", true),
        Exchange::new("GET", "/api/v1/nodes?&limit=500").reply(500, failure),
    ];
    let answers = alice_twice_at_the_nodes(script).await;
    for (status, page) in answers {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{page}");
        assert!(page.contains("etcd is slow"), "{page}");
    }
}
