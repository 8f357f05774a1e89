//! The watches the EndpointSlice wake follows: the slices of ours (a person or a tool that
//! deletes one has it back while the Namespace sleeps), the slices of the backend's own Service
//! (its Pods come and go: every slice of ours follows), Services' metadata (a Service added
//! to a sleeping Namespace gets a slice), and the metadata of the slices the cluster writes for
//! Services (a Service with a slice of ours whose own Pods become ready, at night too, loses
//! ours). Each only queues the Namespaces concerned; the reconcile reads what it needs.

use std::future::Future;

use chrono::TimeDelta;
use k8s_openapi::api::{core::v1::Service, discovery::v1::EndpointSlice};
use kube::{
    Api, Client, ResourceExt as _,
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, store::Writer},
        watcher,
    },
};

use super::feeds::Feeds;
use crate::{
    commands::cli::RunArgs,
    namespaces::NamespaceSchedules,
    runtime::{
        access::{self, Action},
        events::Events,
        key::ObjectKey,
        outage::Outage,
        watch::{WatchBackoff, drive, touched},
        workqueue::WorkQueue,
        writes::Writes,
    },
    scaling::hpa::HpaIndex,
    wake::slices::{MANAGED_BY, MANAGER, SERVICE_NAME, WakeSlices, Written},
    work::WorkKey,
};

/// What the EndpointSlice wake reads besides its settings: the Namespaces' schedules, the
/// Events, the levers, and the queue and outage its watches feed.
pub struct SliceInputs<'a> {
    pub namespaces: &'a NamespaceSchedules,
    pub events: &'a Events,
    pub levers: &'a HpaIndex,
    pub queue: &'a WorkQueue<WorkKey>,
    pub outage: &'a Outage,
    /// How long a step of a wake waits for the one before (`--wake-step-timeout`).
    pub step_timeout: TimeDelta,
}

/// The EndpointSlice wake, where the controller wakes on a request over the whole cluster
/// (`--wake-on-request` without `--namespace`), its watches started on `feeds`; `None`
/// otherwise.
pub fn start(
    args: &RunArgs,
    client: &Client,
    inputs: SliceInputs<'_>,
    feeds: &mut Feeds,
) -> Option<WakeSlices> {
    if !args.wakes_on_request() || args.namespace.is_some() {
        return None;
    }
    let ((ours, ours_writer), (backend, backend_writer)) = (reflector::store(), reflector::store());
    let slices = WakeSlices {
        client: client.clone(),
        namespaces: inputs.namespaces.clone(),
        ours,
        backend,
        backend_service: ObjectKey::new(
            (args.wake_service.namespace.as_deref()).unwrap_or(client.default_namespace()),
            args.wake_service.name.clone(),
        ),
        default_timezone: args.default_timezone.zone,
        writes: Writes::new(inputs.events.clone(), args.dry_run),
        step_timeout: inputs.step_timeout,
        owner: Some(args.wake_slices_owner.clone()).filter(|name| !name.is_empty()),
        written: Written::default(),
        levers: inputs.levers.clone(),
    };
    let (queue, outage) = (inputs.queue, inputs.outage);
    feeds.start(
        "wake-up EndpointSlices",
        ours_feed(client, ours_writer, queue, outage),
    );
    feeds.start(
        "the wake-up backend's EndpointSlices",
        backend_feed(&slices, backend_writer, queue, outage),
    );
    feeds.start("Services", service_feed(&slices, queue, outage));
    feeds.start(
        "Services' own EndpointSlices",
        served_feed(&slices, queue, outage),
    );
    tokio::spawn(say_what_is_lacking(client.clone(), slices.owner.clone()));
    Some(slices)
}

/// What the EndpointSlice wake does in every Namespace: its own grants (`rbac/wake-slices.yaml`,
/// installed with the wake-up backend), apart from the controller's.
const GRANTS: [Action<'static>; 7] = [
    Action::anywhere("list", SLICES, "endpointslices"),
    Action::anywhere("watch", SLICES, "endpointslices"),
    Action::anywhere("create", SLICES, "endpointslices"),
    Action::anywhere("patch", SLICES, "endpointslices"),
    Action::anywhere("delete", SLICES, "endpointslices"),
    Action::anywhere("list", "", "services"),
    Action::anywhere("watch", "", "services"),
];
const SLICES: &str = "discovery.k8s.io";

/// Says at start, once, what of [`GRANTS`] (and reading its `owner`, the install's ClusterRole,
/// where it has one) this process may not do: without them no sleeping Service is woken by a
/// request, and the first refused write would come only at night.
async fn say_what_is_lacking(client: Client, owner: Option<String>) {
    let mut wanted = GRANTS.to_vec();
    if let Some(owner) = owner.as_deref() {
        wanted.push(Action {
            name: Some(owner),
            ..Action::anywhere("get", "rbac.authorization.k8s.io", "clusterroles")
        });
    }
    let refused = access::refused(&client, &wanted).await;
    if refused.is_empty() {
        tracing::info!("the EndpointSlice wake (--wake-on-request) has every grant it needs");
        return;
    }
    let refused: Vec<String> = refused.iter().map(ToString::to_string).collect();
    tracing::error!(
        refused = refused.join(", "),
        "the EndpointSlice wake (--wake-on-request) lacks grants: no sleeping Service is \
         woken by a request; apply rbac/wake-slices.yaml (Helm: wake.enabled) or run without \
         --wake-on-request"
    );
}

/// Every slice of ours, into `ctx.ours`: a change looks at its Namespace again.
pub fn ours_feed(
    client: &Client,
    writer: Writer<EndpointSlice>,
    queue: &WorkQueue<WorkKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        Api::<EndpointSlice>::all(client.clone()),
        watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGER}")),
    )
    .backoff(WatchBackoff::default())
    .reflect(writer);
    let queue = queue.clone();
    drive(
        watch,
        "wake-up EndpointSlices",
        outage.clone(),
        move |event| {
            if let Some(namespace) = touched(event).and_then(|slice| slice.namespace()) {
                queue.add(WorkKey::WakeSlices(namespace));
            }
        },
    )
}

/// The slices of the backend's own Service, into `ctx.backend`: when they change, every
/// Namespace with slices of ours, or that may want them, is looked at again.
pub fn backend_feed(
    ctx: &WakeSlices,
    writer: Writer<EndpointSlice>,
    queue: &WorkQueue<WorkKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let service = &ctx.backend_service;
    let watch = watcher(
        Api::<EndpointSlice>::namespaced(ctx.client.clone(), &service.namespace),
        watcher::Config::default().labels(&format!("{SERVICE_NAME}={}", service.name)),
    )
    .backoff(WatchBackoff::default())
    .reflect(writer);
    let (ctx, queue) = (ctx.clone(), queue.clone());
    drive(
        watch,
        "the wake-up backend's EndpointSlices",
        outage.clone(),
        move |event| {
            if matches!(
                event,
                watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone
            ) {
                look_at_all(&ctx, &queue);
            }
        },
    )
}

/// Every Service's metadata, kept nowhere: a Service added, changed or deleted in a Namespace
/// that opted in, or has slices of ours, has it looked at again.
pub fn service_feed(
    ctx: &WakeSlices,
    queue: &WorkQueue<WorkKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let api = Api::<PartialObjectMeta<Service>>::all(ctx.client.clone());
    let concerned =
        |ctx: &WakeSlices, namespace: &str| ctx.opted_in(namespace) || ctx.has_placed(namespace);
    metadata_feed(
        api,
        watcher::Config::default(),
        "Services",
        (ctx, queue, outage),
        concerned,
    )
}

/// The metadata of every EndpointSlice not ours, kept nowhere: a change of one (its endpoints or
/// their readiness changed) in a Namespace with slices of ours has it looked at again, so a
/// slice of ours goes within a look of its Service having a ready endpoint of its own, whoever
/// woke the Pods and whatever kind runs them.
pub fn served_feed(
    ctx: &WakeSlices,
    queue: &WorkQueue<WorkKey>,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let api = Api::<PartialObjectMeta<EndpointSlice>>::all(ctx.client.clone());
    let not_ours = watcher::Config::default().labels(&format!("{MANAGED_BY}!={MANAGER}"));
    let concerned = |ctx: &WakeSlices, namespace: &str| ctx.has_placed(namespace);
    let what = "Services' own EndpointSlices";
    metadata_feed(api, not_ours, what, (ctx, queue, outage), concerned)
}

/// A watch of objects' metadata, kept nowhere: a change of one in a Namespace `concerned`
/// has that Namespace looked at again. A relist tells no change of the gap one by one, so its
/// end looks again at every Namespace that may want slices or has some.
fn metadata_feed<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
    what: &'static str,
    (ctx, queue, outage): (&WakeSlices, &WorkQueue<WorkKey>, &Outage),
    concerned: fn(&WakeSlices, &str) -> bool,
) -> impl Future<Output = ()> + use<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    PartialObjectMeta<K>: serde::de::DeserializeOwned,
{
    let watch = watcher(api, config).backoff(WatchBackoff::default());
    let (ctx, queue) = (ctx.clone(), queue.clone());
    drive(watch, what, outage.clone(), move |event| {
        let object = match event {
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => object,
            watcher::Event::InitDone => return look_at_all(&ctx, &queue),
            watcher::Event::Init | watcher::Event::InitApply(_) => return,
        };
        if let Some(namespace) = object.namespace().filter(|ns| concerned(&ctx, ns)) {
            queue.add(WorkKey::WakeSlices(namespace));
        }
    })
}

/// Queues every Namespace that opted in, or has slices of ours.
pub fn look_at_all(ctx: &WakeSlices, queue: &WorkQueue<WorkKey>) {
    let mut namespaces = ctx.placed_in();
    namespaces.extend(
        (ctx.namespaces.scheduled().into_iter()).filter(|namespace| ctx.opted_in(namespace)),
    );
    for namespace in namespaces {
        queue.add(WorkKey::WakeSlices(namespace));
    }
}
