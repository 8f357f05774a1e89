//! Command line: every flag can also come from a `CRONSCALER_*` environment variable, so the
//! same binary is configured by flags on a laptop and by env in a Pod spec.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};

use ipnet::IpNet;

mod console;
mod prices;

pub use console::ConsoleArgs;
pub use prices::{ControllerNamespace, OpenCost, OpenCostSeries, Prices};

use crate::{
    activity::query::ActivityQuery,
    names::is_dns_label,
    ops::logs::LogFormat,
    schedule::GitOpsMode,
    wake::route::parse_trusted_proxy,
    workloads::target::{DEFAULT_KINDS, KindName},
};

#[derive(Debug, Parser)]
#[command(
    name = "cronscaler",
    version,
    about = "Scheduled scaling for Kubernetes, and the Foo controller"
)]
pub struct Cli {
    #[command(flatten)]
    pub kube: KubeArgs,

    /// Namespace of the objects; as with kubectl, before the subcommand as well as after it.
    // Each subcommand that takes a namespace has its own, which clap fills from this one.
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

/// The name kubectl runs a plugin by: `kubectl cronscaler ...` runs `kubectl-cronscaler ...`.
pub const KUBECTL_PLUGIN: &str = "kubectl-cronscaler";

impl Cli {
    /// Parses `args` as the command line of the program named by its first one: installed as
    /// [`KUBECTL_PLUGIN`], help and errors speak of `kubectl cronscaler`.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let invoked_as = args
            .first()
            .and_then(|program| Path::new(program).file_name())
            .and_then(|name| name.to_str());
        let command = match invoked_as {
            Some(KUBECTL_PLUGIN) => Cli::command()
                .name(KUBECTL_PLUGIN)
                .bin_name("kubectl cronscaler"),
            _ => Cli::command(),
        };
        let mut command = command;
        let cli = Cli::from_arg_matches(&command.try_get_matches_from_mut(args)?)?;
        if let Command::Restore(RestoreArgs {
            name: Some(name),
            namespace: None,
            ..
        }) = &cli.command
        {
            return Err(command.error(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!("restore {name}: which namespace? Give it with -n"),
            ));
        }
        if let Command::Wake(OverrideArgs {
            namespace: None, ..
        })
        | Command::Sleep(OverrideArgs {
            namespace: None, ..
        }) = &cli.command
        {
            return Err(command.error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "which namespace? Give it with -n",
            ));
        }
        if let Some(missing) = prices::missing_prometheus(&cli.command) {
            return Err(command.error(clap::error::ErrorKind::MissingRequiredArgument, missing));
        }
        Ok(cli)
    }
}

/// Which cluster, as kubectl's flags of the same names say; anywhere on the command line.
#[derive(Debug, Clone, Default, Args)]
pub struct KubeArgs {
    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context (default: its current-context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers against the cluster of the current kubeconfig (or in-cluster config).
    Run(Box<RunArgs>),
    /// Run the wake-up backend alone, the process that faces the internet: it answers on
    /// --wake-addr and may only ask the controller for a wake (a WakeRequest). Takes `run`'s
    /// flags and environment, and uses those of the backend and those that say what a Namespace
    /// follows.
    WakeBackend(Box<RunArgs>),
    /// Print the Foo CustomResourceDefinition as YAML.
    Crd,
    /// List every scheduled transition in a time window, from manifests or the live cluster.
    Plan(PlanArgs),
    /// What every scheduled object of the live cluster is doing now, and what sleeping saves.
    Status(StatusArgs),
    /// For each node, what keeps it running: Pods that cannot move (marked not to be evicted,
    /// local storage, a PodDisruptionBudget allowing no disruption, bare Pods) and Pods of
    /// workloads that do not sleep; DaemonSets keep none.
    Nodes(NodesArgs),
    /// Give scaled-down objects back what they had before the night (replicas, suspend, pause
    /// or hibernation) and remove the controller's annotations (run it before uninstalling).
    Restore(RestoreArgs),
    /// Wake a scheduled Namespace, or one object in it, now: writes `cronscaler.dev/awake-until`
    /// and the controller scales up; at that time it applies the schedule again.
    Wake(OverrideArgs),
    /// Put a scheduled Namespace, or one object in it, to sleep now: writes
    /// `cronscaler.dev/asleep-until`; the mirror of `wake`.
    Sleep(OverrideArgs),
    /// Serve the web console on --console-addr: each person signed in sees the environments
    /// they may see, and wakes or snoozes those they may, by the cluster's own RBAC.
    Console(Box<ConsoleArgs>),
}

#[derive(Debug, Clone, Args)]
#[command(group = clap::ArgGroup::new("how_long").args(["for_", "until"]))]
pub struct OverrideArgs {
    /// The Namespace, or the namespace of KIND/NAME.
    // Required, but it may come before the subcommand: `Cli::parse_args` checks that it is there.
    #[arg(short = 'n', long, env = "CRONSCALER_NAMESPACE")]
    pub namespace: Option<String>,

    /// One object instead of the whole Namespace: KIND/NAME, KIND one cronscaler knows as
    /// kubectl names it (deployment/web, sts/db, job/import, scaledobject/orders,
    /// rollout/checkout, cluster/db, or Kind.group).
    pub object: Option<String>,

    /// How long, from now (e.g. `2h`, `90m`; at most 366d). Without --for or --until: until the
    /// schedule's next transition the other way.
    #[arg(long = "for", id = "for_", value_parser = up_to_366d)]
    pub for_: Option<Duration>,

    /// Until this instant (RFC 3339, e.g. `2026-11-24T07:00:00+01:00`).
    #[arg(long)]
    pub until: Option<DateTime<Utc>>,

    /// The longest override the controller accepts (its own --max-override; at most 366d).
    #[arg(long, env = "CRONSCALER_MAX_OVERRIDE", default_value = "24h", value_parser = up_to_366d)]
    pub max_override: Duration,

    #[command(flatten)]
    pub default_timezone: DefaultTimezone,
}

#[derive(Debug, Clone, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["all", "name"]))]
pub struct RestoreArgs {
    /// Every scaled-down object of the cluster (or of `-n`), of the kinds cronscaler knows:
    /// Deployments, StatefulSets, CronJobs, Jobs, Foos, KEDA ScaledObjects and ScaledJobs, Argo
    /// Rollouts, CloudNativePG Clusters; the Namespaces' overrides; and the Argo CD
    /// Applications and Flux Kustomizations and HelmReleases paused for those Namespaces.
    #[arg(long)]
    pub all: bool,

    /// Namespace of NAME, or the only namespace for `--all`.
    #[arg(short = 'n', long, env = "CRONSCALER_NAMESPACE")]
    pub namespace: Option<String>,

    /// The objects of this name in `-n`, of those kinds.
    // Its namespace may come before the subcommand, which clap tells only after parsing it:
    // `Cli::parse_args` checks that it has one.
    pub name: Option<String>,

    /// Restore even while a controller holds the leader-election Lease (it will apply its
    /// schedules again, undoing what restore gives back).
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub kinds: MoreKinds,

    #[command(flatten)]
    pub lease: LeaseArgs,

    #[command(flatten)]
    pub kube_downscaler: KubeDownscaler,
}

/// Kinds outside the catalogue that `run --kinds` puts to sleep, for the commands that read
/// what it did: the catalogue's are always read.
#[derive(Debug, Clone, Default, Args)]
pub struct MoreKinds {
    /// Kinds outside the catalogue to read as well, as `run --kinds` names them
    /// (`CloneSet.apps.kruise.io`), comma-separated; the catalogue's are always read.
    #[arg(long, env = "CRONSCALER_KINDS", value_delimiter = ',')]
    pub kinds: Vec<KindName>,
}

/// The leader-election Lease: `run --leader-elect` holds it; `restore` reads it to tell whether
/// a controller is running.
#[derive(Debug, Clone, Args)]
pub struct LeaseArgs {
    /// Namespace of the Lease (default: the namespace the controller runs in, or the kubeconfig's;
    /// `restore` also looks in `cronscaler`, where manifests/ install the controller).
    #[arg(
        id = "leader_elect_namespace",
        long = "leader-elect-namespace",
        env = "CRONSCALER_LEADER_ELECT_NAMESPACE"
    )]
    pub namespace: Option<String>,

    /// Name of the Lease.
    #[arg(
        id = "leader_elect_lease_name",
        long = "leader-elect-lease-name",
        env = "CRONSCALER_LEADER_ELECT_LEASE_NAME",
        default_value = "cronscaler"
    )]
    pub name: String,
}

impl LeaseArgs {
    /// The controller's own namespace, where it keeps its Lease and its records: the one given,
    /// else the one it runs in (or the kubeconfig's).
    pub fn controller_namespace(&self, client: &kube::Client) -> String {
        (self.namespace.clone()).unwrap_or_else(|| client.default_namespace().to_string())
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Reconciles running at once, shared by every controller in the binary.
    #[arg(long, env = "CRONSCALER_WORKERS", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,

    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "CRONSCALER_NAMESPACE")]
    pub namespace: Option<String>,

    /// Sustained requests per second to the API server, shared by everything the process sends.
    #[arg(long, env = "CRONSCALER_KUBE_QPS", default_value_t = 50.0, value_parser = positive_f64)]
    pub kube_qps: f64,

    /// Requests that may go out at once above the sustained rate.
    #[arg(long, env = "CRONSCALER_KUBE_BURST", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_burst: u32,

    #[command(flatten)]
    pub default_timezone: DefaultTimezone,

    #[command(flatten)]
    pub grace: GracePeriod,

    /// How far ahead an override on demand (`awake-until`, `asleep-until`) may reach when it is
    /// first applied; a longer one is an InvalidSchedule. At most 366d.
    #[arg(long, env = "CRONSCALER_MAX_OVERRIDE", default_value = "24h", value_parser = up_to_366d)]
    pub max_override: std::time::Duration,

    /// How early a `ready-by` schedule starts its wakes until the Namespace's warm-up was
    /// measured (`last-warm-up`); at most 1h.
    #[arg(long, env = "CRONSCALER_WARM_UP", default_value = "5m", value_parser = up_to_1h)]
    pub warm_up: std::time::Duration,

    #[command(flatten)]
    pub wake_step: WakeStepTimeout,

    /// The kinds put to sleep, as `Kind.group` (`Rollout.argoproj.io`), comma-separated: the
    /// catalogue's (Deployment, StatefulSet, CronJob, Job, Foo, KEDA's ScaledObject and
    /// ScaledJob, Argo Rollout, CloudNativePG Cluster), or any other kind with a scale
    /// subresource. One not installed is taken in when its CRD appears.
    #[arg(long, env = "CRONSCALER_KINDS", value_delimiter = ',', default_value = DEFAULT_KINDS)]
    pub kinds: Vec<KindName>,

    /// At most this many Namespaces wake at once (0: any number); the others wait their turn,
    /// the one to be ready earliest first. Overrides (`cronscaler wake`, requests) never wait.
    #[arg(long, env = "CRONSCALER_MAX_WAKING_NAMESPACES", default_value_t = 0)]
    pub max_waking_namespaces: usize,

    #[command(flatten)]
    pub kube_downscaler: KubeDownscaler,

    #[command(flatten)]
    pub excluded: Excluded,

    /// Log and emit Events for what the scheduled scaler would do; change nothing.
    #[arg(long, env = "CRONSCALER_DRY_RUN")]
    pub dry_run: bool,

    #[command(flatten)]
    pub gitops: GitOpsDefault,

    /// `run`: what the ledger of savings counts money by (`cronscaler_saved_cost_total`).
    #[command(flatten)]
    pub prices: Prices,

    /// Elect a leader among replicas on a Lease; only the leader acts, standbys stay warm.
    #[arg(long, env = "CRONSCALER_LEADER_ELECT")]
    pub leader_elect: bool,

    #[command(flatten)]
    pub lease: LeaseArgs,

    /// Address of the listener for /healthz, /readyz and /metrics.
    #[arg(long, env = "CRONSCALER_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,

    /// Log format: `text` for people, `json` for log pipelines. The level comes from RUST_LOG.
    #[arg(long, env = "CRONSCALER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// `wake-backend`: the address it listens on, for the first request to an opted-in
    /// Namespace (every replica answers). `run` listens for nobody: given to it, this means
    /// --wake-on-request.
    #[arg(long, env = "CRONSCALER_WAKE_ADDR")]
    pub wake_addr: Option<SocketAddr>,

    /// `run`: wake opted-in Namespaces on a request. While one sleeps, its Services' traffic
    /// goes to the wake-up backend (--wake-service, which `cronscaler wake-backend` serves
    /// apart), and the controller carries out the backend's WakeRequests.
    #[arg(long, env = "CRONSCALER_WAKE_ON_REQUEST")]
    pub wake_on_request: bool,

    /// At most one wake of a Namespace by requests in this long, per replica; at most 1d.
    #[arg(long, env = "CRONSCALER_WAKE_COOLDOWN", default_value = "1m", value_parser = up_to_1d)]
    pub wake_cooldown: std::time::Duration,

    /// Source addresses (CIDRs or addresses, comma-separated) of the proxies whose routing
    /// headers the wake-up backend believes: `X-Namespace`, `X-Forwarded-Host`,
    /// `X-Original-URI`. From anyone else a request's Namespace comes from its `Host` alone.
    #[arg(long, env = "CRONSCALER_WAKE_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_trusted_proxy)]
    pub wake_trusted_proxies: Vec<IpNet>,

    /// Sustained requests per second the wake-up backend may send the API server, and the
    /// controller carrying out its WakeRequests, apart from --kube-qps (default: a fifth of it),
    /// so requests reaching it never delay the controller's other work.
    #[arg(long, env = "CRONSCALER_WAKE_KUBE_QPS", value_parser = positive_f64)]
    pub wake_kube_qps: Option<f64>,

    /// The wake-up backend's own Service, `[NAMESPACE/]NAME` (the namespace: the controller's):
    /// while an opted-in Namespace sleeps, each of its Services gets an EndpointSlice of this
    /// Service's ready addresses, so any proxy, and calls inside the cluster, reach the backend.
    #[arg(long, env = "CRONSCALER_WAKE_SERVICE", default_value = "cronscaler-wake", value_parser = parse_wake_service)]
    pub wake_service: WakeService,

    /// The install's ClusterRole of the EndpointSlice wake (`rbac/wake-slices.yaml`), which
    /// owns every wake-up EndpointSlice of ours so that uninstalling, or turning waking on a
    /// request off, deletes them; `""`: each is owned by its Service, and outlives the install.
    #[arg(
        long,
        env = "CRONSCALER_WAKE_SLICES_OWNER",
        default_value = "cronscaler-wake-slices"
    )]
    pub wake_slices_owner: String,

    /// Prometheus's address (`http://prometheus.monitoring:9090`), which counts Namespaces'
    /// requests for `idle-after` (without it nothing sleeps for idleness) and, where it scrapes
    /// OpenCost, prices the ledger of savings before `--prices`.
    #[arg(long, env = "CRONSCALER_PROMETHEUS_URL", value_parser = parse_prometheus_url)]
    pub prometheus_url: Option<String>,

    #[command(flatten)]
    pub opencost: OpenCostSeries,

    /// What counts a Namespace's requests: a ready-made query by proxy (ingress-nginx,
    /// envoy-gateway, istio, traefik, nginx-gateway-fabric) or PromQL with `$namespace` and
    /// `$window` in it, which reads some series by more than `$namespace` (the proof that its
    /// source was counting is made from them).
    #[arg(
        long,
        env = "CRONSCALER_ACTIVITY_QUERY",
        default_value = "ingress-nginx"
    )]
    pub activity_query: ActivityQuery,
}

/// `--prometheus-url`: an `http://` address (the count speaks plain HTTP, as Prometheus does
/// inside a cluster).
pub(crate) fn parse_prometheus_url(text: &str) -> Result<String, String> {
    let uri: http::Uri = text
        .parse()
        .map_err(|error| format!("{text:?} is not an address: {error}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http"), Some(_)) => Ok(text.trim_end_matches('/').to_string()),
        _ => Err(format!(
            "{text:?} is not an http:// address such as http://prometheus.monitoring:9090"
        )),
    }
}

/// `--wake-service`: the backend's Service, in the controller's namespace unless it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeService {
    pub namespace: Option<String>,
    pub name: String,
}

fn parse_wake_service(text: &str) -> Result<WakeService, String> {
    let (namespace, name) = match text.split_once('/') {
        Some((namespace, name)) => (Some(namespace.to_string()), name),
        None => (None, text),
    };
    if !is_dns_label(name) || !namespace.as_deref().is_none_or(is_dns_label) {
        return Err(format!(
            "{text:?} is no Service: give NAME or NAMESPACE/NAME, each a DNS label (`cronscaler/cronscaler-wake`)"
        ));
    }
    Ok(WakeService {
        namespace,
        name: name.to_string(),
    })
}

impl RunArgs {
    /// Whether `run` wakes on a request: `--wake-on-request`, or `--wake-addr` as `run` once
    /// took it (it served the backend in its own process).
    pub fn wakes_on_request(&self) -> bool {
        self.wake_on_request || self.wake_addr.is_some()
    }

    /// `--wake-kube-qps`, or a fifth of `--kube-qps`.
    pub fn wake_kube_qps(&self) -> f64 {
        self.wake_kube_qps.unwrap_or(self.kube_qps / 5.0)
    }
}

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Manifest file or directory of them (multi-document YAML; Deployments, StatefulSets, CronJobs, Jobs, Foos, ScaledObjects, ScaledJobs, Rollouts, Clusters, their Namespaces and HPAs). Repeatable.
    /// Without it, the objects of the live cluster.
    #[arg(
        short = 'f',
        long = "filename",
        env = "CRONSCALER_PLAN_FILES",
        value_delimiter = ','
    )]
    pub files: Vec<PathBuf>,

    /// Start of the window (RFC 3339); default now.
    #[arg(long, env = "CRONSCALER_PLAN_FROM")]
    pub from: Option<DateTime<Utc>>,

    /// Length of the window, e.g. `7d`, `36h`, `2w`; at most 366d.
    #[arg(long = "for", env = "CRONSCALER_PLAN_FOR", default_value = "7d", value_parser = up_to_366d)]
    pub window: Duration,

    /// Output format.
    #[arg(short = 'o', long, env = "CRONSCALER_PLAN_OUTPUT", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,

    #[command(flatten)]
    pub kube_downscaler: KubeDownscaler,

    #[command(flatten)]
    pub default_timezone: DefaultTimezone,

    #[command(flatten)]
    pub gitops: GitOpsDefault,

    /// Only this namespace of the live cluster (default: all).
    #[arg(short = 'n', long, env = "CRONSCALER_NAMESPACE")]
    pub namespace: Option<String>,

    /// Of the live cluster, kinds outside the catalogue to read as well.
    #[command(flatten)]
    pub kinds: MoreKinds,

    #[command(flatten)]
    pub prices: Prices,
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Only this namespace (default: all).
    #[arg(short = 'n', long, env = "CRONSCALER_NAMESPACE")]
    pub namespace: Option<String>,

    /// Output format.
    #[arg(short = 'o', long, env = "CRONSCALER_STATUS_OUTPUT", value_enum, default_value_t = StatusFormat::Table)]
    pub output: StatusFormat,

    #[command(flatten)]
    pub reading: StatusReading,

    #[command(flatten)]
    pub opencost: OpenCost,

    #[command(flatten)]
    pub controller: ControllerNamespace,
}

#[derive(Debug, Clone, Args)]
pub struct NodesArgs {
    /// Output format.
    #[arg(short = 'o', long, env = "CRONSCALER_NODES_OUTPUT", value_enum, default_value_t = StatusFormat::Table)]
    pub output: StatusFormat,

    #[command(flatten)]
    pub prices: Prices,

    #[command(flatten)]
    pub opencost: OpenCost,

    #[command(flatten)]
    pub controller: ControllerNamespace,
}

/// What `status` and the console read what every object is doing by: the controller's flags
/// that say what a Namespace follows and what it holds.
#[derive(Debug, Clone, Args)]
pub struct StatusReading {
    #[command(flatten)]
    pub kinds: MoreKinds,

    #[command(flatten)]
    pub default_timezone: DefaultTimezone,

    #[command(flatten)]
    pub grace: GracePeriod,

    #[command(flatten)]
    pub wake_step: WakeStepTimeout,

    #[command(flatten)]
    pub kube_downscaler: KubeDownscaler,

    #[command(flatten)]
    pub excluded: Excluded,

    #[command(flatten)]
    pub gitops: GitOpsDefault,

    #[command(flatten)]
    pub prices: Prices,
}

/// How a workload a GitOps tool deploys sleeps where nothing says: `run` acts on it, `plan`
/// and `status` show it, from the one flag and default.
#[derive(Debug, Clone, Copy, Args)]
pub struct GitOpsDefault {
    /// How a workload that Argo CD or Flux deploys sleeps where neither it nor its Namespace
    /// says (`cronscaler.dev/gitops`): `ignore` (the tool is told to leave cronscaler's fields
    /// alone) or `pause` (the tool's repair stops for the night).
    #[arg(long = "gitops", env = "CRONSCALER_GITOPS", default_value = "ignore")]
    pub mode: GitOpsMode,
}

/// How long a new object is held awake: `run` holds it, `status` says so, from the one flag and
/// default.
#[derive(Debug, Clone, Copy, Args)]
pub struct GracePeriod {
    /// A new object is not put to sleep by a catch-up until it is this old (e.g. `15m`; at most
    /// 1d), so a deploy at night is not killed as it starts.
    #[arg(
        long = "grace-period",
        env = "CRONSCALER_GRACE_PERIOD",
        default_value = "15m",
        value_parser = up_to_1d
    )]
    pub period: Duration,
}

/// How long a step of an ordered wake waits: `run` holds it, `status` says until when, from the
/// one flag and default.
#[derive(Debug, Clone, Copy, Args)]
pub struct WakeStepTimeout {
    /// How long each step of a Namespace's ordered wake (StatefulSets and CloudNativePG
    /// Clusters, then Deployments and the like, then CronJobs, Jobs and ScaledJobs; the reverse
    /// at night) waits for the steps before it to be available; at most 1d.
    #[arg(
        long = "wake-step-timeout",
        env = "CRONSCALER_WAKE_STEP_TIMEOUT",
        default_value = "5m",
        value_parser = up_to_1d
    )]
    pub timeout: Duration,
}

/// The zone of schedules without one of their own: `run`, `plan`, `status`, `wake` and `sleep`
/// read schedules alike, from the one flag and default.
#[derive(Debug, Clone, Copy, Args)]
pub struct DefaultTimezone {
    /// Time zone of schedules without a `cronscaler.dev/timezone` annotation (IANA name).
    #[arg(
        long = "default-timezone",
        env = "CRONSCALER_DEFAULT_TIMEZONE",
        default_value = "UTC",
        value_parser = time_zone
    )]
    pub zone: Tz,
}

/// The namespaces never touched: `run` leaves them alone and `status` shows their objects as
/// excluded, from the one flag and default.
#[derive(Debug, Clone, Args)]
pub struct Excluded {
    /// Namespaces never touched, annotated or not (comma-separated); the controller's own
    /// namespace is always added.
    #[arg(
        long,
        env = "CRONSCALER_EXCLUDE_NAMESPACES",
        value_delimiter = ',',
        default_value = "kube-system,kube-public,kube-node-lease"
    )]
    pub exclude_namespaces: Vec<String>,
}

/// Reading kube-downscaler's annotations as ours, so `run` takes over from it and `plan`,
/// `status` and `restore` see what it left as `run` does.
#[derive(Debug, Clone, Copy, Args)]
pub struct KubeDownscaler {
    /// Also read kube-downscaler's `downscaler/` annotations on workloads and Namespaces as
    /// their `cronscaler.dev/` counterparts (ours win where both are set), including its
    /// `original-replicas`: what it put to sleep wakes to its own count.
    #[arg(
        long = "kube-downscaler-annotations",
        env = "CRONSCALER_KUBE_DOWNSCALER_ANNOTATIONS"
    )]
    pub read: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    /// The window as a chart, an SVG image for a browser: `-o svg > week.svg`.
    Svg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFormat {
    Table,
    Json,
}

fn time_zone(value: &str) -> Result<Tz, String> {
    value
        .parse()
        .map_err(|_| format!("{value:?} is not an IANA time zone name, e.g. Europe/Berlin"))
}

/// A duration flag's value within its documented maximum: a larger one would reach past what a
/// date can hold (`1000000000d`), so it is refused at start, with the flag's name.
fn duration_at_most(text: &str, most: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text).map_err(|error| error.to_string())?;
    let limit = humantime::parse_duration(most).map_err(|error| error.to_string())?;
    if duration > limit {
        return Err(format!("at most {most}"));
    }
    Ok(duration)
}

fn up_to_1h(text: &str) -> Result<Duration, String> {
    duration_at_most(text, "1h")
}

fn up_to_1d(text: &str) -> Result<Duration, String> {
    duration_at_most(text, "1d")
}

pub(super) fn up_to_366d(text: &str) -> Result<Duration, String> {
    duration_at_most(text, "366d")
}

fn positive_f64(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(number) if number.is_finite() && number > 0.0 => Ok(number),
        _ => Err(format!("{value:?} is not a positive number")),
    }
}

#[cfg(test)]
mod tests;
