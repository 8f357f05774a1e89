//! Kinds outside the catalogue, named by `--kinds`: one counted in a field of its own
//! (`specReplicasPath: .spec.size`) sleeps and wakes by that field, `status --kinds` shows it,
//! and `plan --kinds` and `restore --kinds` read it; one not installed yet is taken in when its CRD appears, and one the ServiceAccount may not
//! read is named.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use cronscaler::workloads::objects::DISCOVERY_INTERVAL;
use kube::{Api, api::DynamicObject};
use support::{
    Controller, Scenario,
    crds::{grant_optional, install_crd, shared_crd},
    create, deploy, describe, envtest, eventually,
    kinds::{
        LATENESS, READ, annotations, api, apply_all, asleep_remembering, count, grant, gvk,
        install_own_crd, night, replicas, rollout, scalable, scalable_at,
    },
    metric, nightly, occurrences, replicas_become, sleep_until, stop_cleanly_and_finish,
};

/// The Memcached kind of `group`, counted in `spec.size`, installed, the controller's grant to
/// patch it in force, the controller run with it in `--kinds`, ready, and then a Memcached
/// `(name, size)` whose night begins 8 s later and lasts `seconds`: that `--kinds`, the
/// controller, the Memcacheds of the scenario's namespace, and the night's end.
async fn memcached_with_a_night(
    scenario: &Scenario,
    group: &str,
    (name, size): (&str, i32),
    seconds: i64,
) -> (String, Controller, Api<DynamicObject>, DateTime<Utc>) {
    let memcached =
        install_own_crd(&scenario.client, (group, "Memcached", "memcacheds"), "size").await;
    envtest::wait_allowed(&scenario.client, group, "memcacheds", "patch", None)
        .await
        .expect("the Memcached grant in force");
    let kinds = format!("Deployment.apps,Memcached.{group}");
    let controller = scenario
        .ready_controller("cronscaler", &["--kinds", &kinds])
        .await;
    let caches = api(scenario, &memcached, "memcacheds");
    let (down, up) = night(8, seconds);
    create(
        &caches,
        scalable_at(&memcached, name, ("size", size), nightly(down, up)),
    )
    .await;
    (kinds, controller, caches, up)
}

/// A kind whose CRD keeps its count in `spec.size`, as the Memcached operator of the Operator
/// SDK's tutorial does: the controller writes `spec.size`, never a `spec.replicas` the API
/// server would prune (a sleep that changed nothing, told as `4 -> 0`).
#[tokio::test]
async fn a_kind_counted_in_a_field_of_its_own_sleeps_and_wakes_by_it_and_status_shows_it() {
    let test = "sized";
    let Some(scenario) = Scenario::shared(test).await else {
        return;
    };
    let (kinds, controller, caches, up) =
        memcached_with_a_night(&scenario, "size.cronscaler.dev", ("cache", 4), 12).await;

    let asleep = eventually("cache asleep at size 0", LATENESS * 2, || async {
        let object = caches.get("cache").await.ok()?;
        (count(&object, "size") == Some(0)).then_some(object)
    })
    .await;
    assert_eq!(
        annotations(&asleep)
            .get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("4"),
        "it remembers its size"
    );
    assert_eq!(replicas(&asleep), None, "no spec.replicas written");
    // The Event is written just after the patch it tells of.
    let told = scenario.event("cache", "ScaledDown", LATENESS).await;
    let note = told.note.unwrap_or_default();
    assert!(note.contains("scaled down from 4 to 0"), "{note}");

    let namespace = scenario.namespace.clone();
    let shown = scenario.said(&["status", "-n", &namespace, "--kinds", &kinds]);
    let line = shown
        .lines()
        .find(|line| line.contains("cache"))
        .unwrap_or_else(|| panic!("status shows the Memcached:\n{shown}"));
    assert!(
        line.contains("Memcached") && line.contains("asleep"),
        "{shown}"
    );
    let without = scenario.said(&["status", "-n", &namespace]);
    assert!(
        !without.contains("cache"),
        "only --kinds adds it:\n{without}"
    );

    sleep_until(up).await;
    eventually("cache awake at size 4", LATENESS, || async {
        (count(&caches.get("cache").await.ok()?, "size") == Some(4)).then_some(())
    })
    .await;
    let events = scenario.events("cache").await;
    for reason in ["ScaledDown", "ScaledUp"] {
        assert_eq!(occurrences(&events, reason), 1, "{}", describe(&events));
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// What `run --kinds` put to sleep, `restore --kinds` gives back, by its own field, and `plan
/// --kinds` shows (seen failing: `restore` read the catalogue's kinds alone, and left it at 0).
#[tokio::test]
async fn restore_and_plan_read_the_kinds_run_was_told_of() {
    let test = "sized-restore";
    let Some(scenario) = Scenario::shared(test).await else {
        return;
    };
    // A night that begins after it is made: a new object is not put to sleep at birth.
    let (kinds, mut controller, caches, _) =
        memcached_with_a_night(&scenario, "restored.cronscaler.dev", ("store", 3), 600).await;
    eventually("store asleep at size 0", LATENESS * 2, || async {
        (count(&caches.get("store").await.ok()?, "size") == Some(0)).then_some(())
    })
    .await;
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;

    let namespace = scenario.namespace.clone();
    let planned = scenario.said(&["plan", "-n", &namespace, "--kinds", &kinds]);
    assert!(
        planned.contains("store"),
        "plan --kinds shows it:\n{planned}"
    );
    let unread = scenario.run(&["restore", "-n", &namespace, "store"]);
    assert_eq!(
        count(&caches.get("store").await.expect("store"), "size"),
        Some(0),
        "without --kinds, not read: {}",
        String::from_utf8_lossy(&unread.stdout)
    );
    let said = scenario.said(&["restore", "-n", &namespace, "store", "--kinds", &kinds]);
    let restored = caches.get("store").await.expect("store");
    assert_eq!(count(&restored, "size"), Some(3), "{said}");
    assert_eq!(replicas(&restored), None, "no spec.replicas written");
    assert!(
        !annotations(&restored).contains_key("cronscaler.dev/original-replicas"),
        "{said}"
    );
    scenario.finish().await;
}

#[tokio::test]
async fn a_kind_not_installed_is_taken_in_when_its_crd_appears_and_a_forbidden_one_is_named() {
    let test = "kinds-later";
    let (Some(rollouts_crd), Some(clusters_crd)) = (
        shared_crd(test, "argoproj.io_rollouts.yaml"),
        shared_crd(test, "postgresql.cnpg.io_clusters.yaml"),
    ) else {
        return;
    };
    let Some(scenario) = Scenario::own(test, envtest::Options::api_server_only()).await else {
        return;
    };
    // CloudNativePG is installed, but the ServiceAccount was never granted its Clusters.
    let cluster_kind = gvk("postgresql.cnpg.io", "v1", "Cluster");
    install_crd(&scenario.client, &clusters_crd, &cluster_kind).await;
    let controller = scenario
        .ready_controller(
            "cronscaler",
            &[
                "--kinds",
                "Deployment.apps,Rollout.argoproj.io,Cluster.postgresql.cnpg.io,\
             Gizmo.later.cronscaler.dev",
            ],
        )
        .await;
    let ready = |kind: &'static str| {
        let controller = &controller;
        async move {
            let metrics = controller.metrics().await?;
            metric(
                &metrics,
                &format!("cronscaler_kind_ready{{kind=\"{kind}\"}}"),
            )
        }
    };
    // Ready once listed and found patchable: the access review answers a moment after the list.
    eventually("Deployments said ready", LATENESS, || async {
        (ready("Deployment.apps").await == Some(1.0)).then_some(())
    })
    .await;
    assert_eq!(ready("Rollout.argoproj.io").await, Some(0.0));
    assert_eq!(ready("Cluster.postgresql.cnpg.io").await, Some(0.0));
    // A kind outside the catalogue, not served: its row cannot be made yet.
    assert_eq!(ready("Gizmo.later.cronscaler.dev").await, Some(0.0));
    assert!(
        controller.log().contains(
            "not served yet (the API server does not serve the group later.cronscaler.dev"
        ),
        "the kind not served is named:\n{}",
        controller.log()
    );
    // The gauge is 0 from the start: the log says when the kind was tried.
    eventually("the forbidden kind named in the log", LATENESS, || async {
        let log = controller.log();
        (log.contains("watch of clusters failed") && log.contains("forbidden")).then_some(())
    })
    .await;
    // Granted reading but not patching: listed, still not ready, and named once.
    apply_all(
        &scenario.client,
        grant("clusters", "postgresql.cnpg.io", READ),
    )
    .await;
    let may_not_patch = "may not patch clusters in postgresql.cnpg.io";
    eventually("Clusters named as not patchable", LATENESS * 2, || async {
        controller.log().contains(may_not_patch).then_some(())
    })
    .await;
    assert_eq!(ready("Cluster.postgresql.cnpg.io").await, Some(0.0));

    // The others still sleep.
    let (down, up) = night(8, 60);
    deploy(
        &scenario.deployments(),
        "web",
        2,
        nightly(down, up),
        "a Deployment",
    )
    .await;
    replicas_become(
        &scenario.deployments(),
        "web",
        0,
        "web asleep",
        LATENESS * 2,
    )
    .await;

    // Argo Rollouts installed later, and granted: taken in without a restart.
    let rollout_kind = gvk("argoproj.io", "v1alpha1", "Rollout");
    install_crd(&scenario.client, &rollouts_crd, &rollout_kind).await;
    grant_optional(&scenario.client, "argo-rollouts.yaml").await;
    let (down, up) = night(12, 60);
    create(
        &api(&scenario, &rollout_kind, "rollouts"),
        rollout("shop", 2, nightly(down, up)),
    )
    .await;
    eventually("Rollouts watched", LATENESS * 2, || async {
        (ready("Rollout.argoproj.io").await == Some(1.0)).then_some(())
    })
    .await;
    let rollouts = api(&scenario, &rollout_kind, "rollouts");
    eventually("the Rollout asleep", LATENESS * 2, || async {
        (replicas(&rollouts.get("shop").await.ok()?) == Some(0)).then_some(())
    })
    .await;

    // A kind of its own with a scale subresource, installed later: its row is made then, from
    // discovery, without a restart.
    let gizmo_kind = install_own_crd(
        &scenario.client,
        ("later.cronscaler.dev", "Gizmo", "gizmos"),
        "replicas",
    )
    .await;
    let gizmos = api(&scenario, &gizmo_kind, "gizmos");
    // The night starts after the controller's next look for the kind.
    let looks_every = i64::try_from(DISCOVERY_INTERVAL.as_secs()).unwrap_or(i64::MAX);
    let (down, up) = night(looks_every + 12, 60);
    create(
        &gizmos,
        scalable(&gizmo_kind, "sprocket", 3, nightly(down, up)),
    )
    .await;
    eventually("Gizmos watched", LATENESS * 3, || async {
        (ready("Gizmo.later.cronscaler.dev").await == Some(1.0)).then_some(())
    })
    .await;
    asleep_remembering(&gizmos, "sprocket", 3).await;
    assert!(
        controller
            .log()
            .contains("now served: put to sleep from now on"),
        "{}",
        controller.log()
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
