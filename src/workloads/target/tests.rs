use super::*;
use serde_json::json;

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

#[test]
fn each_kind_reads_its_own_sleep_value() {
    let cron_job = |suspend: serde_json::Value| {
        object(json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": { "name": "report", "namespace": "shop" },
            "spec": { "schedule": "*/5 * * * *", "suspend": suspend },
        }))
    };
    let read = |kind, object: &DynamicObject| TargetState::of_object(kind, object).replicas;
    assert_eq!(read(TargetKind::CronJob, &cron_job(json!(null))), 1);
    assert_eq!(read(TargetKind::CronJob, &cron_job(json!(false))), 1);
    assert_eq!(read(TargetKind::CronJob, &cron_job(json!(true))), 0);

    let deployment = |spec| {
        object(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web", "namespace": "shop", "resourceVersion": "7" },
            "spec": spec,
        }))
    };
    assert_eq!(
        read(TargetKind::Deployment, &deployment(json!({}))),
        1,
        "the default"
    );
    let three = TargetState::of_object(
        TargetKind::Deployment,
        &deployment(json!({ "replicas": 3 })),
    );
    assert_eq!(three.replicas, 3);
    assert_eq!(three.resource_version.as_deref(), Some("7"));
    assert_eq!(three.reference.kind.as_deref(), Some("Deployment"));
    assert_eq!(three.reference.api_version.as_deref(), Some("apps/v1"));

    let cluster = |hibernation: Option<&str>| {
        object(json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {
                "name": "db", "namespace": "shop",
                "annotations": hibernation.map(|value| json!({ "cnpg.io/hibernation": value })),
            },
            "spec": { "instances": 3 },
        }))
    };
    assert_eq!(read(TargetKind::Cluster, &cluster(None)), 1);
    assert_eq!(read(TargetKind::Cluster, &cluster(Some("off"))), 1);
    assert_eq!(read(TargetKind::Cluster, &cluster(Some("on"))), 0);
}

#[test]
fn a_deployment_a_foo_controls_names_it() {
    let owned = object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "web", "namespace": "shop", "ownerReferences": [{
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "name": "my-foo",
            "uid": "1", "controller": true,
        }] },
    }));
    let observed = TargetState::of_object(TargetKind::Deployment, &owned);
    assert_eq!(observed.controlling_foo.as_deref(), Some("my-foo"));
}

#[test]
fn a_scaled_object_names_the_workload_it_scales_with_kedas_defaults() {
    let levers = |reference: serde_json::Value| {
        let scaled_object = object(json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": { "name": "orders", "namespace": "shop" },
            "spec": { "scaleTargetRef": reference },
        }));
        TargetState::of_object(TargetKind::ScaledObject, &scaled_object).levers
    };
    assert_eq!(
        levers(json!({ "name": "orders" })),
        Some((TargetKind::Deployment, "orders".into()))
    );
    assert_eq!(
        levers(json!({ "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web" })),
        Some((TargetKind::Rollout, "web".into()))
    );
    assert_eq!(
        levers(
            json!({ "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web" })
        ),
        None,
        "a kind the catalogue does not know is none of plan's or status's objects"
    );
    assert_eq!(levers(json!({ "kind": "Deployment" })), None, "no name");
    let web = TargetState::of_object(
        TargetKind::Deployment,
        &object(
            json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web" } }),
        ),
    );
    assert_eq!(web.levers, None);
}

#[test]
fn kinds_are_named_as_kind_dot_group() {
    let parse = |text: &str| text.parse::<KindName>();
    assert_eq!(
        parse("Rollout.argoproj.io"),
        Ok(KindName::Known(TargetKind::Rollout))
    );
    assert_eq!(parse("deploy"), Ok(KindName::Known(TargetKind::Deployment)));
    assert_eq!(
        parse("CloneSet.apps.kruise.io"),
        Ok(KindName::Other {
            name: "CloneSet".into(),
            group: "apps.kruise.io".into()
        })
    );
    for wrong in [
        "",
        "CloneSet",
        "cloneset.apps.kruise.io",
        "Clone Set.x.io",
        "CloneSet.",
        "A.b..c",
    ] {
        let error = parse(wrong).unwrap_err();
        assert!(error.contains("write it as Kind.group"), "{wrong}: {error}");
    }
    let defaults: Vec<KindName> = DEFAULT_KINDS
        .split(',')
        .map(|text| text.parse().unwrap())
        .collect();
    let expected: Vec<KindName> = TargetKind::defaults().map(KindName::Known).collect();
    assert_eq!(
        defaults, expected,
        "the flag's default is the catalogue's, in its order"
    );
}

#[test]
fn kinds_sort_in_the_catalogue_order_and_compare_by_name() {
    let mut kinds = vec![TargetKind::Foo, TargetKind::CronJob, TargetKind::Deployment];
    kinds.sort();
    assert_eq!(
        kinds,
        [TargetKind::Deployment, TargetKind::CronJob, TargetKind::Foo]
    );
    let made = crate::workloads::test_support::clone_set_kind();
    assert!(made > TargetKind::Cluster, "after the catalogue");
    assert_eq!(made, crate::workloads::test_support::clone_set_kind());
    assert_eq!(TargetKind::named("Job"), Some(TargetKind::Job));
    assert_eq!(TargetKind::named("cronjob"), None, "API names are exact");
    assert_eq!(
        TargetKind::of_api("argoproj.io/v1alpha1", "Rollout"),
        Some(TargetKind::Rollout)
    );
    assert_eq!(TargetKind::of_api("example.com/v1", "Rollout"), None);
}

#[test]
fn a_lever_frees_the_pods_of_what_it_scales_and_nothing_known_where_that_is_not_read() {
    let target = |kind, name: &str| ScaleTarget {
        kind,
        key: ObjectKey::new("shop", name),
    };
    let lever = |scales: &str| TargetState {
        levers: Some((TargetKind::Deployment, scales.into())),
        ..TargetState::default()
    };
    let web = PodRequests {
        cpu_cores: Some(0.5),
        ..PodRequests::default()
    };
    let nothing = PodRequests::default();
    let (web_target, scaler, gone) = (
        target(TargetKind::Deployment, "web"),
        target(TargetKind::ScaledObject, "web-scaler"),
        target(TargetKind::ScaledObject, "gone-scaler"),
    );
    let (plain, scales_web, scales_gone) = (TargetState::default(), lever("web"), lever("gone"));
    let requests = lever_requests(&[
        (&web_target, &plain, &web),
        (&scaler, &scales_web, &nothing),
        (&gone, &scales_gone, &nothing),
    ]);
    assert_eq!(requests, [None, Some(web.clone()), Some(nothing)]);
}
