use k8s_openapi::api::core::v1::ObjectReference;

use super::*;
use crate::scaling::gitops::Tool;
use crate::schedule::{ASLEEP_UNTIL, AWAKE_UNTIL, GITOPS};
use crate::schedule::{
    DOWN_REPLICAS, DOWNTIME, EXCLUDE, LAST_TRANSITION, ORIGINAL_REPLICAS, ORIGINAL_SUSPEND,
    ORIGINAL_VALUE, PAUSED, UP_REPLICAS,
    test_support::{annotations as annotations_of, at},
};

/// Namespaces' schedules, from their annotations.
fn schedules(namespaces: &[(&str, &[(&str, &str)])]) -> NamespaceSchedules {
    let schedules = NamespaceSchedules::watched([]);
    for (name, pairs) in namespaces {
        schedules.update(name, None, &annotations_of(pairs));
    }
    schedules
}

/// The status of `objects` at `now`, with `namespaces` known and no GitOps owner read.
fn status_at(
    objects: &[StatusObject],
    namespaces: &[(&str, &[(&str, &str)])],
    now: DateTime<Utc>,
) -> Status {
    status(
        objects,
        Some(&schedules(namespaces)),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        Tz::UTC,
        now,
    )
}

fn at_night(objects: &[StatusObject], namespaces: &[(&str, &[(&str, &str)])]) -> Status {
    status_at(objects, namespaces, night())
}

/// Monday 2026-11-23, 02:00 UTC: the night of a "20:00 down, 07:00 up" schedule.
fn night() -> DateTime<Utc> {
    at("2026-11-23T02:00:00Z")
}

const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];
const LAST_NIGHT: &str = "2026-11-22T20:00:00Z down";
const THIS_MORNING: &str = "2026-11-22T07:00:00Z up";

fn object(
    kind: TargetKind,
    namespace: &str,
    name: &str,
    replicas: i32,
    pairs: &[(&str, &str)],
) -> StatusObject {
    StatusObject {
        kind,
        observed: TargetState {
            reference: ObjectReference {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                ..ObjectReference::default()
            },
            replicas,
            annotations: annotations_of(pairs),
            ..TargetState::default()
        },
    }
}

fn deployment(name: &str, replicas: i32, pairs: &[(&str, &str)]) -> StatusObject {
    object(TargetKind::Deployment, "staging", name, replicas, pairs)
}

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    NIGHTLY.iter().chain(extra).copied().collect()
}

/// The one row of `objects`' status, with `namespaces` known.
fn only_row(
    objects: &[StatusObject],
    namespaces: &[(&str, &[(&str, &str)])],
    now: DateTime<Utc>,
) -> Row {
    let mut status = status_at(objects, namespaces, now);
    assert_eq!(status.objects.len(), 1, "{status:?}");
    status.objects.remove(0)
}

fn rows(objects: &[StatusObject], namespaces: &[(&str, &[(&str, &str)])]) -> Vec<Row> {
    at_night(objects, namespaces).objects
}

#[test]
fn a_deployment_put_to_sleep_is_asleep_since_then_until_the_morning() {
    let row = only_row(
        &[deployment(
            "web",
            0,
            &with(&[
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, LAST_NIGHT),
                (TIMEZONE, "Europe/Berlin"),
            ]),
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.since, Some(at("2026-11-22T20:00:00Z")));
    // 20:00 and 07:00 in Berlin, 19:00 and 06:00 UTC.
    assert_eq!(
        row.since_local_time.as_deref(),
        Some("2026-11-22 21:00:00 CET")
    );
    assert_eq!(
        row.next,
        Some(Next {
            action: NextAction::Up,
            at: at("2026-11-23T06:00:00Z"),
            local_time: "2026-11-23 07:00:00 CET".into(),
        })
    );
    assert_eq!((row.replicas, row.awake_replicas), (0, 3));
    assert!(row.reasons.is_empty());
}

#[test]
fn an_awake_deployment_waits_for_its_scale_down_with_its_up_replicas() {
    let noon = at("2026-11-23T12:00:00Z");
    let row = only_row(
        &[deployment(
            "web",
            2,
            &with(&[(LAST_TRANSITION, THIS_MORNING), (UP_REPLICAS, "4")]),
        )],
        &[],
        noon,
    );
    assert_eq!(row.state, State::Awake);
    assert_eq!(row.since, Some(at("2026-11-22T07:00:00Z")));
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Down, at("2026-11-23T20:00:00Z")))
    );
    assert_eq!(
        (row.replicas, row.awake_replicas),
        (2, 4),
        "the morning gives up-replicas"
    );
    let never_scaled = only_row(&[deployment("new", 2, &NIGHTLY)], &[], noon);
    assert_eq!(never_scaled.state, State::Awake);
    assert_eq!(never_scaled.since, None);
    assert_eq!(never_scaled.awake_replicas, 2, "what it has now");
}

#[test]
fn invalid_annotations_are_told_with_key_value_and_reason() {
    let row = only_row(
        &[deployment(
            "typo",
            2,
            &[(SCALE_DOWN, "0 25 * * *"), (DOWN_REPLICAS, "-1")],
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Invalid);
    assert_eq!(row.next, None);
    assert_eq!(row.reasons.len(), 2, "{:?}", row.reasons);
    assert!(
        row.reasons[0].starts_with("cronscaler.dev/down-replicas: \"-1\" must be 0 or more"),
        "{:?}",
        row.reasons
    );
    assert!(
        row.reasons[1].starts_with("cronscaler.dev/scale-down: \"0 25 * * *\""),
        "{:?}",
        row.reasons
    );
}

#[test]
fn an_override_in_the_future_wins_over_the_schedule_and_over_its_unknown_key() {
    let until = "2026-11-23T09:30:00Z";
    let row = only_row(
        &[deployment(
            "demo",
            3,
            &with(&[
                (AWAKE_UNTIL, until),
                (
                    LAST_TRANSITION,
                    "2026-11-23T01:00:00Z up until 2026-11-23T09:30:00Z",
                ),
            ]),
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Overridden);
    assert_eq!(row.since, Some(at("2026-11-23T01:00:00Z")));
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::OverrideEnds, at(until)))
    );
    assert_eq!(row.reasons, vec!["awake until 2026-11-23T09:30:00Z"]);

    let after = only_row(
        &[deployment("demo", 3, &with(&[(AWAKE_UNTIL, until)]))],
        &[],
        at("2026-11-23T10:00:00Z"),
    );
    assert_ne!(
        after.state,
        State::Overridden,
        "an override that has ended holds nothing"
    );
}

#[test]
fn a_namespaces_override_holds_every_scheduled_object_in_it_but_the_excluded() {
    let namespace: &[(&str, &str)] = &[
        (SCALE_DOWN, "0 20 * * *"),
        (ASLEEP_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let objects = [
        deployment(
            "follows",
            0,
            &[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_REPLICAS, "2")],
        ),
        deployment("own", 2, &with(&[(LAST_TRANSITION, THIS_MORNING)])),
        deployment("left-out", 2, &[(EXCLUDE, "true")]),
    ];
    let rows = rows(&objects, &[("staging", namespace)]);
    let states: Vec<(&str, State)> = rows
        .iter()
        .map(|row| (row.name.as_str(), row.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("follows", State::Overridden),
            ("left-out", State::Excluded),
            ("own", State::Overridden)
        ]
    );
    assert_eq!(rows[0].reasons, vec!["asleep until 2026-11-24T00:00:00Z"]);
    let summary = at_night(&objects, &[("staging", namespace)]).summary;
    assert_eq!(
        (summary.objects_asleep, summary.replicas_asleep),
        (1, 2),
        "held asleep and already scaled down counts; not yet scaled down does not"
    );
}

#[test]
fn paused_excluded_and_unscheduled_objects() {
    let namespace: &[(&str, &str)] = &[(SCALE_DOWN, "0 20 * * *")];
    let objects = [
        deployment(
            "paused",
            0,
            &with(&[(PAUSED, "true"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment("left-out", 2, &[(EXCLUDE, "true")]),
        deployment("follows", 2, &[]),
    ];
    let states: Vec<(String, State)> = rows(&objects, &[("staging", namespace)])
        .into_iter()
        .map(|row| (row.name, row.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("follows".to_string(), State::Awake),
            ("left-out".to_string(), State::Excluded),
            ("paused".to_string(), State::Paused),
        ]
    );
    let paused = &rows(&objects, &[])[0];
    assert_eq!(
        (paused.name.as_str(), paused.next.clone()),
        ("paused", None),
        "nothing happens while paused"
    );
    assert_eq!(
        rows(&objects, &[]).len(),
        1,
        "without the Namespace's schedule, neither the excluded nor the plain one is scheduled"
    );
}

#[test]
fn a_cron_job_sleeps_suspended_and_counts_as_an_object_not_replicas() {
    let objects = [
        object(
            TargetKind::CronJob,
            "staging",
            "report",
            0,
            &with(&[(ORIGINAL_SUSPEND, "false"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment(
            "web",
            1,
            &with(&[
                (ORIGINAL_REPLICAS, "5"),
                (DOWN_REPLICAS, "1"),
                (LAST_TRANSITION, LAST_NIGHT),
            ]),
        ),
    ];
    let status = at_night(&objects, &[]);
    let report = &status.objects[0];
    assert_eq!(
        (
            report.kind.as_str(),
            report.state,
            report.replicas,
            report.awake_replicas
        ),
        ("CronJob", State::Asleep, 0, 1)
    );
    assert_eq!(
        status.summary,
        Summary {
            objects_asleep: 2,
            on_off_asleep: [("CronJob".to_string(), 1)].into(),
            cron_jobs_asleep: 1,
            replicas_asleep: 4,
        }
    );
    let table = render_table(&status, night());
    assert!(
        table.contains("suspended/running"),
        "a CronJob's replicas read as it runs:\n{table}"
    );
    assert!(
        table.ends_with("asleep now: 2 objects (1 CronJob suspended), 4 replicas\n"),
        "{table}"
    );
}

#[test]
fn every_kind_that_sleeps_on_or_off_counts_as_itself_and_withholds_no_replicas() {
    let asleep = |kind, name, original: (&'static str, &'static str)| {
        object(
            kind,
            "staging",
            name,
            0,
            &with(&[original, (LAST_TRANSITION, LAST_NIGHT)]),
        )
    };
    let objects = [
        asleep(TargetKind::CronJob, "report", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::Job, "import", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::Job, "export", (ORIGINAL_SUSPEND, "false")),
        asleep(TargetKind::ScaledJob, "queue", (ORIGINAL_VALUE, "")),
        asleep(TargetKind::Cluster, "db", (ORIGINAL_VALUE, "off")),
        deployment(
            "web",
            0,
            &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
    ];
    let status = at_night(&objects, &[]);
    assert_eq!(
        status.summary,
        Summary {
            objects_asleep: 6,
            on_off_asleep: [
                ("CronJob".to_string(), 1),
                ("Job".to_string(), 2),
                ("ScaledJob".to_string(), 1),
                ("Cluster".to_string(), 1),
            ]
            .into(),
            cron_jobs_asleep: 1,
            replicas_asleep: 3,
        },
        "only the Deployment's replicas; no Job or Cluster counted as a CronJob"
    );
    let table = render_table(&status, night());
    assert!(
        table.ends_with(
            "asleep now: 6 objects (1 CronJob suspended, 2 Jobs suspended, 1 ScaledJob paused, \
             1 Cluster hibernated), 3 replicas\n"
        ),
        "{table}"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(
        json["summary"],
        serde_json::json!({
            "objectsAsleep": 6,
            "onOffAsleep": { "CronJob": 1, "Job": 2, "ScaledJob": 1, "Cluster": 1 },
            "cronJobsAsleep": 1,
            "replicasAsleep": 3,
        })
    );
}

#[test]
fn the_table_lines_up_one_row_an_object_and_the_summary() {
    let objects = [
        deployment(
            "web",
            0,
            &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
        ),
        deployment("typo", 2, &[(SCALE_DOWN, "never")]),
    ];
    let status = at_night(&objects, &[]);
    let table = render_table(&status, night());
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "NAMESPACE  KIND        NAME  STATE    FROM         SINCE   NEXT      AT                       REPLICAS  REASON"
    );
    assert!(
        lines[1].starts_with(
            "staging    Deployment  typo  invalid  annotations  -       -         -                        \
             2/2       cronscaler.dev/scale-down: \"never\" "
        ),
        "{table}"
    );
    assert_eq!(
        lines[2],
        "staging    Deployment  web   asleep   annotations  6h ago  up in 5h  2026-11-23 07:00:00 UTC  0/3"
    );
    assert_eq!(lines[3], "asleep now: 1 object, 3 replicas");
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["summary"]["replicasAsleep"], 3);
    assert_eq!(json["objects"][1]["state"], "asleep");
    assert_eq!(json["objects"][1]["next"]["action"], "up");
    assert_eq!(json["objects"][1]["awakeReplicas"], 3);
    assert_eq!(json["objects"][1]["scheduleFrom"], "annotations");
    assert_eq!(json["namespaceSchedulesKnown"], true);
}

#[test]
fn a_foos_deployment_is_scaled_through_its_foo() {
    let mut scheduled = deployment("foo-web", 1, &NIGHTLY);
    scheduled.observed.controlling_foo = Some("example-foo".into());
    let mut plain = deployment("foo-plain", 1, &[]);
    plain.observed.controlling_foo = Some("example-foo".into());
    let rows = rows(
        &[scheduled, plain],
        &[("staging", &[(SCALE_DOWN, "0 20 * * *")])],
    );
    assert_eq!(
        rows.len(),
        1,
        "its Namespace's schedule does not apply: {rows:?}"
    );
    assert_eq!(rows[0].state, State::Invalid);
    assert_eq!(
        rows[0].reasons,
        vec!["controlled by Foo \"example-foo\": annotate the Foo instead"]
    );
}

/// The ScaledObject `orders` in `namespace`, asleep since last night, that scales the
/// Deployment `orders`.
fn scaled_object(namespace: &str) -> StatusObject {
    let mut lever = object(
        TargetKind::ScaledObject,
        namespace,
        "orders",
        0,
        // Paused by the controller, which found no pause of its own on it.
        &with(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_VALUE, "")]),
    );
    lever.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    lever
}

#[test]
fn a_workload_a_scaled_object_scales_sleeps_only_through_it() {
    let objects = [
        scaled_object("staging"),
        // KEDA has scaled it to 0: not the controller, which never writes it.
        deployment("orders", 0, &[]),
        deployment(
            "web",
            0,
            &[(ORIGINAL_REPLICAS, "2"), (LAST_TRANSITION, LAST_NIGHT)],
        ),
    ];
    let status = at_night(&objects, &[("staging", &NIGHTLY)]);
    let rows: Vec<_> = status
        .objects
        .iter()
        .map(|row| (row.kind.as_str(), row.name.as_str(), row.state))
        .collect();
    assert_eq!(
        rows,
        [
            ("Deployment", "web", State::Asleep),
            ("ScaledObject", "orders", State::Asleep)
        ],
        "the Deployment orders follows its ScaledObject, not the Namespace"
    );
    let table = render_table(&status, night());
    assert!(table.contains("paused at 0/scaling"), "{table}");
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_is_refused_naming_it() {
    let objects = [
        scaled_object("staging"),
        deployment("orders", 1, &NIGHTLY),
        // The same name in another namespace is another workload.
        object(TargetKind::Deployment, "prod", "orders", 1, &NIGHTLY),
    ];
    let rows = rows(&objects, &[]);
    let states: Vec<_> = rows
        .iter()
        .map(|row| (row.namespace.as_str(), row.kind.as_str(), row.state))
        .collect();
    assert_eq!(
        states,
        [
            ("prod", "Deployment", State::Awake),
            ("staging", "Deployment", State::Invalid),
            ("staging", "ScaledObject", State::Asleep),
        ]
    );
    assert_eq!(
        rows[1].reasons,
        ["controlled by ScaledObject \"orders\": annotate the ScaledObject instead"]
    );
}

#[test]
fn a_schedule_on_the_workload_of_a_scaled_object_without_one_shows_on_the_scaled_object() {
    // Paused by the controller for the workload's own schedule, whose records the workload
    // carries.
    let mut lever = object(TargetKind::ScaledObject, "staging", "orders", 0, &[]);
    lever.observed.levers = Some((TargetKind::Deployment, "orders".into()));
    let objects = [
        lever,
        deployment(
            "orders",
            0,
            &with(&[(LAST_TRANSITION, LAST_NIGHT), (ORIGINAL_VALUE, "")]),
        ),
    ];
    let rows = rows(&objects, &[]);
    let states: Vec<_> = rows
        .iter()
        .map(|row| (row.kind.as_str(), row.name.as_str(), row.state))
        .collect();
    assert_eq!(states, [("ScaledObject", "orders", State::Asleep)]);
}

#[test]
fn unknown_namespaces_leave_out_what_only_they_schedule() {
    let objects = [
        deployment("follows", 2, &[]),
        deployment("own", 2, &NIGHTLY),
    ];
    let status = status(
        &objects,
        None,
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        Tz::UTC,
        night(),
    );
    assert!(!status.namespace_schedules_known);
    let names: Vec<&str> = status.objects.iter().map(|row| row.name.as_str()).collect();
    assert_eq!(names, vec!["own"]);
}

#[test]
fn since_and_next_read_in_whole_units_as_people_write_them() {
    let now = at("2026-11-23T06:47:05.700Z");
    let objects = [deployment(
        "web",
        0,
        &with(&[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)]),
    )];
    let status = status(
        &objects,
        Some(&schedules(&[])),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        Tz::UTC,
        now,
    );
    let table = render_table(&status, now);
    assert!(table.contains("  10h47m ago  up in 12m54s  "), "{table}");
}

#[test]
fn a_schedule_in_a_namespace_the_controller_never_touches_is_excluded() {
    let objects = [
        object(TargetKind::Deployment, "kube-system", "dns", 2, &NIGHTLY),
        deployment("web", 2, &NIGHTLY),
    ];
    let status = status(
        &objects,
        Some(&schedules(&[])),
        &["kube-system".to_string()],
        (&Owners::default(), GitOpsMode::Ignore),
        Tz::UTC,
        night(),
    );
    let dns = &status.objects[0];
    assert_eq!(
        (dns.name.as_str(), dns.state, dns.next.clone()),
        ("dns", State::Excluded, None)
    );
    assert_eq!(
        dns.reasons,
        vec!["namespace kube-system is never touched (--exclude-namespaces)"]
    );
    assert_eq!(status.objects[1].state, State::Awake);
}

#[test]
fn downtime_all_week_is_asleep_with_no_next_transition_and_says_what_holds_it() {
    let row = only_row(
        &[deployment(
            "idle",
            0,
            &[
                (DOWNTIME, "Mon-Sun 00:00-24:00"),
                (ORIGINAL_REPLICAS, "3"),
                (LAST_TRANSITION, "1970-01-01T00:00:00Z down"),
            ],
        )],
        &[],
        night(),
    );
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.since, None);
    assert_eq!(row.next, None);
    assert_eq!(
        row.reasons,
        vec![r#"asleep all the time by cronscaler.dev/downtime "Mon-Sun 00:00-24:00""#]
    );
    assert_eq!((row.replicas, row.awake_replicas), (0, 3));
}

#[test]
fn what_kube_downscaler_put_to_sleep_is_asleep_with_its_count_to_wake_to() {
    let left = [
        ("downscaler/downtime", "Mon-Sun 20:00-07:00"),
        ("downscaler/original-replicas", "4"),
    ];
    let mut listed = Listed {
        objects: vec![deployment("web", 0, &left)],
        namespaces: Some(schedules(&[])),
        unreadable: Vec::new(),
        owners: Owners::default(),
        unreadable_owners: Vec::new(),
    };
    assert!(
        status(
            &listed.objects,
            listed.namespaces.as_ref(),
            &[],
            (&Owners::default(), GitOpsMode::Ignore),
            Tz::UTC,
            night()
        )
        .objects
        .is_empty(),
        "without the flag kube-downscaler's annotations schedule nothing"
    );
    listed.read_kube_downscaler_as_ours();
    let row = only_row(&listed.objects, &[], night());
    assert_eq!(row.state, State::Asleep);
    assert_eq!((row.replicas, row.awake_replicas), (0, 4));
    assert_eq!(row.since, None, "no transition of ours put it to sleep");
}

#[test]
fn a_row_says_which_policy_schedules_it_and_what_a_policy_does_not_cover_has_none() {
    use crate::namespaces::policies::{crd::ScheduleFields, resolve::Candidate};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    let schedules = schedules(&[]);
    schedules.set_labels("staging", &annotations_of(&[("env", "staging")]));
    let fields = ScheduleFields {
        downtime: Some("Mon-Sun 00:00-24:00".into()),
        kinds: Some(vec!["Deployment.apps".into()]),
        ..ScheduleFields::default()
    };
    let meta = ObjectMeta {
        name: Some("nights".into()),
        ..ObjectMeta::default()
    };
    schedules.set_policy(LabelSelector::default(), Candidate::of(&meta, &fields));
    let objects = [
        deployment("web", 2, &[]),
        object(TargetKind::StatefulSet, "staging", "db", 1, &[]),
    ];
    let status = status(
        &objects,
        Some(&schedules),
        &[],
        (&Owners::default(), GitOpsMode::Ignore),
        Tz::UTC,
        night(),
    );
    assert_eq!(status.objects.len(), 1, "the StatefulSet is not covered");
    assert_eq!(status.objects[0].name, "web");
    assert_eq!(status.objects[0].schedule_from, "SleepPolicy/nights");
}

#[test]
fn a_ready_by_schedule_wakes_its_warm_up_early_and_says_when_it_is_ready() {
    let namespace: &[(&str, &str)] = &[
        (SCALE_DOWN, "0 20 * * *"),
        (SCALE_UP, "0 7 * * *"),
        (crate::schedule::READY_BY, "true"),
        (crate::schedule::LAST_WARM_UP, "42s"),
    ];
    let asleep = deployment(
        "web",
        0,
        &[(ORIGINAL_REPLICAS, "3"), (LAST_TRANSITION, LAST_NIGHT)],
    );
    let row = only_row(&[asleep], &[("staging", namespace)], night());
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Up, at("2026-11-23T06:59:18Z")))
    );
    assert_eq!(
        row.reasons,
        vec!["wakes early to be ready by 2026-11-23T07:00:00Z".to_string()]
    );
    let woken_early = deployment("web", 3, &[(LAST_TRANSITION, "2026-11-23T07:00:00Z up")]);
    let row = only_row(
        &[woken_early],
        &[("staging", namespace)],
        at("2026-11-23T06:59:30Z"),
    );
    assert_eq!(row.state, State::Awake);
    assert_eq!(
        row.next.map(|next| (next.action, next.at)),
        Some((NextAction::Down, at("2026-11-23T20:00:00Z")))
    );
}

#[test]
fn a_workload_a_gitops_tool_deploys_shows_its_owner_the_mode_and_what_was_paused() {
    let owners = Owners::default();
    let application = |record: Option<&str>| {
        let mut application = serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": { "name": "shop", "namespace": "argocd" },
            "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
            "status": { "resources": [
                { "group": "apps", "kind": "Deployment", "namespace": "staging", "name": "web" }
            ] },
        });
        if let Some(record) = record {
            application["metadata"]["annotations"] =
                serde_json::json!({ "cronscaler.dev/gitops-paused": record });
        }
        serde_json::from_value(application).unwrap()
    };
    owners.apply(
        Tool::ArgoCd,
        &application(Some(r#"{"previous":true,"namespaces":["staging"]}"#)),
    );
    let tracked = [
        (
            "argocd.argoproj.io/tracking-id",
            "shop:apps/Deployment:staging/web",
        ),
        (LAST_TRANSITION, LAST_NIGHT),
        (ORIGINAL_REPLICAS, "3"),
    ];
    let objects = [deployment("web", 0, &with(&tracked))];
    let namespaces = schedules(&[("staging", &[(GITOPS, "pause")])]);
    let beside = |owners: &Owners| {
        let gitops = (owners, GitOpsMode::Ignore);
        status(&objects, Some(&namespaces), &[], gitops, Tz::UTC, night())
    };
    let status = beside(&owners);
    let row = &status.objects[0];
    assert_eq!(
        row.gitops.as_ref().map(ToString::to_string).as_deref(),
        Some("Argo CD Application argocd/shop (pause): self-heal paused for the night")
    );
    assert!(
        render_table(&status, night())
            .contains("Argo CD Application argocd/shop (pause): self-heal paused for the night"),
        "in the table's REASON"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["objects"][0]["gitops"]["mode"], "pause");

    // Given back in the morning: `pause` pauses it again at the next sleep.
    owners.apply(Tool::ArgoCd, &application(None));
    assert_eq!(
        beside(&owners).objects[0]
            .gitops
            .as_ref()
            .map(|shown| shown.standing.as_str()),
        Some("self-heal paused at each sleep")
    );

    // An Application whose status does not list it: its marks are only a claim.
    let mut unlisting = application(None);
    unlisting.status = Some(serde_json::json!({ "resources": [] }));
    owners.apply(Tool::ArgoCd, &unlisting);
    assert_eq!(
        beside(&owners).objects[0]
            .gitops
            .as_ref()
            .map(|shown| shown.standing.as_str()),
        Some("not confirmed: its status.resources does not list it, so nothing is paused for it")
    );
}

#[test]
fn an_owning_kind_that_may_not_be_listed_is_said_only_where_a_workload_names_one() {
    let tracked = [(
        "argocd.argoproj.io/tracking-id",
        "shop:apps/Deployment:staging/web",
    )];
    // A Helm chart's instance label names an Application only where one exists.
    let helm = [("app.kubernetes.io/instance", "shop")];
    let mut helm_installed = deployment("api", 2, &with(&[]));
    helm_installed.observed.labels = annotations_of(&helm);
    let listed = Listed {
        objects: vec![deployment("web", 0, &with(&tracked)), helm_installed],
        namespaces: Some(schedules(&[])),
        unreadable: Vec::new(),
        owners: Owners::default(),
        unreadable_owners: vec![Tool::ArgoCd, Tool::Kustomization],
    };
    assert_eq!(listed.unread_owners(), vec![(Tool::ArgoCd, 1)]);
}

#[test]
fn a_namespace_asleep_for_idleness_is_asleep_idle_since_and_counted() {
    let namespace: &[(&str, &str)] = &[
        (crate::schedule::UPTIME, "Mon-Sun 00:00-24:00"),
        (crate::schedule::IDLE_AFTER, "30m"),
        (ASLEEP_UNTIL, "2026-11-24T14:32:00Z"),
        (crate::schedule::IDLE_SINCE, "2026-11-23T14:02:00Z"),
    ];
    let objects = [deployment(
        "web",
        0,
        &[
            (
                LAST_TRANSITION,
                "2026-11-23T14:32:00Z down until 2026-11-24T14:32:00Z",
            ),
            (ORIGINAL_REPLICAS, "3"),
        ],
    )];
    let now = at("2026-11-23T15:00:00Z");
    let status = status_at(&objects, &[("staging", namespace)], now);
    let row = &status.objects[0];
    assert_eq!(row.state, State::Asleep);
    assert_eq!(row.reasons, vec!["idle since 14:02"]);
    assert_eq!(
        row.next.as_ref().map(|next| (next.action, next.at)),
        Some((NextAction::OverrideEnds, at("2026-11-24T14:32:00Z")))
    );
    assert_eq!(
        (
            status.summary.objects_asleep,
            status.summary.replicas_asleep
        ),
        (1, 3)
    );
    let tomorrow = status_at(
        &objects,
        &[("staging", namespace)],
        at("2026-11-24T09:00:00Z"),
    );
    assert_eq!(tomorrow.objects[0].reasons, vec!["idle since Mon 14:02"]);
}
