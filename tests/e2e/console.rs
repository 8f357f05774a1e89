//! The web console (`cronscaler console`, issue 41) against a real API server, run as its
//! install's ServiceAccount (`console/rbac.yaml`): a ServiceAccount holding only `edit` in
//! `team-a` signs in with its token, sees `team-a` and not `team-b`, wakes `team-a` and watches
//! it go from asleep through waking to awake, and is refused for `team-b` with nothing written;
//! one holding `view` sees `team-a` with no buttons and its forged POST is refused; nobody sees
//! anything, and a proxy's headers count only from a trusted address.

use crate::support;

use std::{net::IpAddr, time::Duration};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use serde_json::json;
use support::{
    Controller, Scenario, cdp,
    console::{
        Visitor, annotations_of, bind, form_token, install_self_service, look_of, requests_in,
        section_of, service_account, start_console, team, teams_asleep, user,
    },
    envtest, eventually, mark_pods_ready, replicas_become, stop_cleanly_and_finish,
    window_around_now,
};

/// Lateness we accept: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(20);

/// The address the console trusts as its authenticating proxy.
const PROXY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

/// The console's page at `path` for `visitor`, once `ready` says it is what the test waits for
/// (the controller, the aggregation of roles and the console's brief caches take moments).
async fn page_when(
    visitor: &mut Visitor,
    path: &str,
    what: &str,
    ready: impl Fn(&str) -> bool,
) -> String {
    let deadline = std::time::Instant::now() + LATENESS;
    loop {
        let answer = visitor.get(path).await;
        if answer.status == 200 && ready(&answer.body) {
            return answer.body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {LATENESS:?}; the page:\n{}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits until `namespace`'s Deployment `web` has its 2 replicas available, marking its Pods
/// ready as the ReplicaSet controller makes them (there is no kubelet).
async fn ready_in(scenario: &Scenario, namespace: &str) {
    let web: Api<Deployment> = Api::namespaced(scenario.client.clone(), namespace);
    eventually(&format!("{namespace} ready"), LATENESS, || async {
        mark_pods_ready(&scenario.client, namespace).await;
        let web = web.get("web").await.ok()?;
        (web.status?.available_replicas == Some(2)).then_some(())
    })
    .await;
}

/// The controller over the whole cluster, once it has put team-a to sleep; and team-a's
/// Deployments.
async fn controller_once_team_a_sleeps(scenario: &Scenario) -> (Controller, Api<Deployment>) {
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;
    let web_a = Api::namespaced(scenario.client.clone(), "team-a");
    replicas_become(&web_a, "web", 0, "team-a asleep", LATENESS).await;
    (controller, web_a)
}

#[tokio::test]
async fn an_editor_wakes_its_environment_from_the_console_and_nobody_else_does_anything() {
    let Some(scenario) = Scenario::own("console", envtest::Options::default()).await else {
        return;
    };
    install_self_service(&scenario).await;
    teams_asleep(&scenario, &["team-a", "team-b"]).await;
    // Awake in working hours that last until an hour from now, and start again tomorrow.
    let working = json!({ "cronscaler.dev/uptime": window_around_now() });
    team(&scenario, "team-s", working).await;
    let (dev, dev_token) = service_account(&scenario, "team-a", "dev").await;
    bind(&scenario, dev.clone(), "edit", "team-s").await;
    bind(&scenario, dev, "edit", "team-a").await;
    let (reader, reader_token) = service_account(&scenario, "team-a", "reader").await;
    bind(&scenario, reader, "view", "team-a").await;
    bind(&scenario, user("pat"), "view", "team-b").await;
    let (controller, web_a) = controller_once_team_a_sleeps(&scenario).await;
    // team-s is awake and ready: nothing but what the test wakes is waking.
    ready_in(&scenario, "team-s").await;
    let trusted = PROXY.to_string();
    let (mut console, addr) =
        start_console(&scenario, &["--console-trusted-proxies", &trusted]).await;

    // Nobody sees anything; a proxy's headers sent straight to the console name nobody.
    let mut anyone = Visitor::new(addr);
    anyone.headers = vec![("X-Forwarded-User".into(), "system:admin".into())];
    let page = anyone.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains(r#"action="/sign-in""#), "{}", page.body);
    assert!(!page.body.contains("team-"), "{}", page.body);
    assert_eq!(anyone.sign_in("not-a-token").await.status, 401);

    // Through the trusted proxy, its user sees what RBAC lets them see, with no buttons.
    let mut proxied = Visitor::new(addr);
    proxied.from = PROXY;
    proxied.headers = vec![("X-Forwarded-User".into(), "pat".into())];
    let page = page_when(&mut proxied, "/", "pat sees team-b", |page| {
        look_of(page, "team-b").is_some()
    })
    .await;
    assert_eq!(look_of(&page, "team-a"), None, "{page}");
    assert!(!page.contains(r#"action="/act""#), "{page}");

    // The editor signs in with its token and sees its environment, asleep, with its buttons.
    let mut dev = Visitor::new(addr);
    let signed_in = dev.sign_in(&dev_token).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    assert!(
        signed_in
            .head
            .to_lowercase()
            .contains("httponly; samesite=strict"),
        "{}",
        signed_in.head
    );
    let page = page_when(&mut dev, "/", "dev sees team-a with buttons", |page| {
        section_of(page, "team-a").contains(r#"action="/act""#)
    })
    .await;
    assert_eq!(
        look_of(&page, "team-a").as_deref(),
        Some("asleep"),
        "{page}"
    );
    assert_eq!(
        look_of(&page, "team-b"),
        None,
        "team-b is not dev's: {page}"
    );
    let token = form_token(&page);

    // Its week ahead, as `plan` draws it; another team's is not shown.
    let chart = dev.get("/chart?namespace=team-a").await;
    assert_eq!(chart.status, 200, "{}", chart.body);
    assert!(
        chart
            .head
            .to_lowercase()
            .contains("content-type: image/svg+xml"),
        "{}",
        chart.head
    );
    assert!(
        chart.body.contains("<svg") && chart.body.contains("team-a"),
        "{}",
        chart.body
    );
    assert_eq!(dev.get("/chart?namespace=team-b").await.status, 404);

    // Another team's environment: refused, nothing written.
    let refused = dev.press("team-b", "wake-1h", &token).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("may not create overriderequests.cronscaler.dev in team-b"),
        "{}",
        refused.body
    );
    // A form another site made, with dev's cookie: refused, nothing written.
    let forged = dev.press("team-a", "wake-1h", "0000").await;
    assert_eq!(forged.status, 403, "{}", forged.body);

    // Woken from the console: asleep, then waking, then awake once its Pods are ready.
    let woken = dev.press("team-a", "wake-1h", &token).await;
    assert_eq!(woken.status, 303, "{}", woken.body);
    assert!(
        woken
            .head
            .to_lowercase()
            .contains("location: /?watch=team-a"),
        "{}",
        woken.head
    );
    replicas_become(&web_a, "web", 2, "team-a woken from the console", LATENESS).await;
    let page = page_when(&mut dev, "/?watch=team-a", "team-a waking", |page| {
        look_of(page, "team-a").as_deref() == Some("waking")
    })
    .await;
    assert!(
        page.contains(r#"http-equiv="refresh""#),
        "reloads while waking: {page}"
    );
    assert!(
        section_of(&page, "team-a").contains("0 of 1 workloads ready"),
        "{page}"
    );
    mark_pods_ready(&scenario.client, "team-a").await;
    let page = page_when(&mut dev, "/?watch=team-a", "team-a awake", |page| {
        look_of(page, "team-a").as_deref() == Some("awake")
    })
    .await;
    assert!(!page.contains(r#"http-equiv="refresh""#), "{page}");
    assert!(
        section_of(&page, "team-a").contains("(set by system:serviceaccount:team-a:dev (console))"),
        "who woke it, and by which means: {page}"
    );
    let requests = requests_in(&scenario, "team-a").await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(
        requests[0].data["spec"]["by"],
        "system:serviceaccount:team-a:dev"
    );
    assert_eq!(requests[0].data["spec"]["means"], "console");
    assert_eq!(requests[0].data["status"]["phase"], "Done");

    // Back to its schedule: asleep again.
    let back = dev.press("team-a", "schedule", &token).await;
    assert_eq!(back.status, 303, "{}", back.body);
    replicas_become(&web_a, "web", 0, "team-a back to its schedule", LATENESS).await;

    // Snoozed: asleep now, until its working hours start again tomorrow.
    let web_s: Api<Deployment> = Api::namespaced(scenario.client.clone(), "team-s");
    let snoozed = dev.press("team-s", "snooze", &token).await;
    assert_eq!(snoozed.status, 303, "{}", snoozed.body);
    replicas_become(
        &web_s,
        "web",
        0,
        "team-s snoozed from the console",
        LATENESS,
    )
    .await;
    let page = page_when(&mut dev, "/", "team-s shown asleep", |page| {
        look_of(page, "team-s").as_deref() == Some("asleep")
    })
    .await;
    let section = section_of(&page, "team-s");
    assert!(
        section.contains("asleep until ")
            && section.contains("(set by system:serviceaccount:team-a:dev (console))"),
        "{section}"
    );

    // The viewer sees team-a and has no buttons; a POST it forges with its own page's token is
    // refused by the API server's answer.
    let mut reader = Visitor::new(addr);
    assert_eq!(reader.sign_in(&reader_token).await.status, 303);
    let page = page_when(&mut reader, "/", "reader sees team-a", |page| {
        look_of(page, "team-a").is_some()
    })
    .await;
    assert!(!page.contains(r#"action="/act""#), "{page}");
    let token = form_token(&page);
    let forged = reader.press("team-a", "wake-2h", &token).await;
    assert_eq!(forged.status, 403, "{}", forged.body);

    // Nothing came of any refusal.
    assert!(requests_in(&scenario, "team-b").await.is_empty());
    assert!(
        !annotations_of(&scenario, "team-b")
            .await
            .contains_key("cronscaler.dev/awake-until")
    );
    let asked = requests_in(&scenario, "team-a").await;
    assert_eq!(
        asked.len(),
        2,
        "the wake and back to schedule only: {asked:?}"
    );
    eventually("the console still serves", LATENESS, || async {
        console
            .get("/healthz")
            .await
            .filter(|(status, _)| *status == 200)
    })
    .await;
    console.assert_stops_cleanly(Duration::from_secs(10)).await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// The look of `namespace`'s environment in the browser's tab, or null where it is not shown.
const LOOK: &str =
    "(n => { const s = document.getElementById('ns-' + n); return s ? s.dataset.look : null; })";

#[tokio::test]
async fn in_a_browser_a_person_sees_exactly_their_environments_and_watches_one_wake() {
    let Some(chromium) = cdp::chromium() else {
        support::say(
            "in_a_browser…: skipped: no chromium on PATH (`which chromium`), so the console is \
             not tried in a browser; install Debian's chromium to run it",
        );
        return;
    };
    let Some(scenario) = Scenario::own("console-browser", envtest::Options::default()).await else {
        return;
    };
    install_self_service(&scenario).await;
    let asleep = json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00", "cronscaler.dev/timezone": "Europe/Berlin" });
    let awake = json!({ "cronscaler.dev/uptime": "Mon-Sun 00:00-24:00", "cronscaler.dev/timezone": "Europe/Berlin" });
    for (name, schedule) in [
        ("team-a", &asleep),
        ("team-b", &asleep),
        ("team-c", &awake),
        ("team-d", &asleep),
    ] {
        team(&scenario, name, schedule.clone()).await;
    }
    let (dev, token) = service_account(&scenario, "team-a", "dev").await;
    bind(&scenario, dev.clone(), "edit", "team-a").await;
    bind(&scenario, dev.clone(), "edit", "team-d").await;
    bind(&scenario, dev, "view", "team-c").await;
    let (controller, _) = controller_once_team_a_sleeps(&scenario).await;
    ready_in(&scenario, "team-c").await;
    let (mut console, addr) = start_console(&scenario, &[]).await;

    let mut browser = cdp::Browser::start(chromium, (1100, 900));
    browser.open(&format!("http://{addr}/"));
    browser.eval(&format!(
        "document.querySelector('input[name=token]').value = {}; document.querySelector('form').submit()",
        serde_json::to_string(&token).expect("JSON")
    ));
    browser.wait_loaded();
    let sections = "[...document.querySelectorAll('section[id^=ns-]')].map(s => s.id).join(' ')";
    browser.until(
        "exactly team-a, team-c and team-d shown",
        LATENESS,
        |browser| browser.eval(sections) == json!("ns-team-a ns-team-c ns-team-d"),
    );
    browser.until("team-c awake", LATENESS, |browser| {
        browser.eval(&format!("{LOOK}('team-c')")) == json!("awake")
    });
    let buttons =
        |namespace: &str| format!("document.querySelectorAll('#ns-{namespace} button').length");
    assert_eq!(
        browser.eval(&buttons("team-c")),
        json!(0),
        "view only: no buttons"
    );
    assert_eq!(browser.eval(&buttons("team-a")), json!(6));
    assert_eq!(browser.eval(&format!("{LOOK}('team-a')")), json!("asleep"));

    // Wake team-a; the page follows it by itself, reloading while it wakes.
    browser.eval("document.querySelector('#ns-team-a button[value=wake-1h]').click()");
    browser.wait_loaded();
    let mut seen = vec!["asleep".to_string()];
    let mut follow = |browser: &mut cdp::Browser, until: &str| {
        let deadline = std::time::Instant::now() + LATENESS;
        loop {
            let look = browser.eval(&format!("{LOOK}('team-a')"));
            if let Some(look) = look.as_str()
                && seen.last().map(String::as_str) != Some(look)
            {
                seen.push(look.to_string());
            }
            if look == json!(until) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "team-a not {until} within {LATENESS:?}; seen {seen:?} at {} {}",
                browser.eval("location.href"),
                browser.eval("document.head.innerHTML")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    follow(&mut browser, "waking");
    browser.eval("window.scrollTo(0, 0)");
    let shot = browser.screenshot();
    assert!(shot.starts_with(b"\x89PNG"), "a PNG");
    if std::env::var_os("CRONSCALER_BLESS").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/console.png");
        std::fs::write(&path, &shot).expect("writing docs/console.png");
    }
    mark_pods_ready(&scenario.client, "team-a").await;
    follow(&mut browser, "awake");
    assert_eq!(seen, ["asleep", "waking", "awake"]);

    // On a phone: nothing wider than the screen.
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true }),
    );
    browser.open(&format!("http://{addr}/"));
    assert_eq!(
        browser.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        json!(true),
        "the page fits a phone's width"
    );
    drop(browser);
    console.assert_stops_cleanly(Duration::from_secs(10)).await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
