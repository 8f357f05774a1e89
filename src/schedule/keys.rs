//! Every `cronscaler.dev/` key, in one place: the annotations users write, those the controller
//! records, and its one label. The rules that read each live in the module named beside it.

// The annotations of a schedule, and the controller's records.
pub const PREFIX: &str = "cronscaler.dev/";
pub const SCALE_DOWN: &str = "cronscaler.dev/scale-down";
pub const SCALE_UP: &str = "cronscaler.dev/scale-up";
pub const DOWN_REPLICAS: &str = "cronscaler.dev/down-replicas";
pub const UP_REPLICAS: &str = "cronscaler.dev/up-replicas";
pub const TIMEZONE: &str = "cronscaler.dev/timezone";
pub const PAUSED: &str = "cronscaler.dev/paused";
/// Awake inside these windows, asleep outside: `Mon-Fri 07:00-20:00`.
pub const UPTIME: &str = "cronscaler.dev/uptime";
/// Asleep inside these windows, awake outside.
pub const DOWNTIME: &str = "cronscaler.dev/downtime";
/// Local dates on which nothing wakes.
pub const HOLIDAYS: &str = "cronscaler.dev/holidays";
/// Awake now, whatever the schedule says, until this instant.
pub const AWAKE_UNTIL: &str = "cronscaler.dev/awake-until";
/// Asleep now, whatever the schedule says, until this instant.
pub const ASLEEP_UNTIL: &str = "cronscaler.dev/asleep-until";
/// The overrides on demand, one each way.
pub const OVERRIDE_KEYS: [&str; 2] = [AWAKE_UNTIL, ASLEEP_UNTIL];
/// The keys that make an object scheduled.
pub const SCHEDULE_KEYS: [&str; 4] = [SCALE_DOWN, SCALE_UP, UPTIME, DOWNTIME];
/// A workload's place in its Namespace's wake: lower wakes first and sleeps last.
pub const WAKE_ORDER: &str = "cronscaler.dev/wake-order";
/// `"true"` on an object leaves it out of its namespace's schedule.
pub const EXCLUDE: &str = "cronscaler.dev/exclude";
pub const ORIGINAL_REPLICAS: &str = "cronscaler.dev/original-replicas";
pub const LAST_TRANSITION: &str = "cronscaler.dev/last-transition";
/// Written by a wake: the sleep it ended, for the ledger of savings (`slept`).
pub const SLEPT: &str = "cronscaler.dev/slept";
/// Written by a sleep, where OpenCost's prices are read: the nodes the Pods it stopped ran on,
/// as the API server had them, which price what the sleep saves (`cost::where_ran::Ran`).
pub const RAN_ON: &str = "cronscaler.dev/ran-on";
/// What a CronJob remembers instead of `original-replicas`: the `spec.suspend` it had (the
/// scaling controller translates it for the rules).
pub const ORIGINAL_SUSPEND: &str = "cronscaler.dev/original-suspend";
/// What the annotation a kind sleeps by (KEDA's `paused-replicas`, CloudNativePG's
/// `hibernation`) held before the night, empty when it had none.
pub const ORIGINAL_VALUE: &str = "cronscaler.dev/original-value";
/// The count a workload had when it fell asleep while its lever's controller held it at
/// whatever count it has (KEDA's `paused`): the wake sets the lever to it, and once the workload
/// is back at it the lever's own hold takes over again and this goes.
pub const PAUSED_AT: &str = "cronscaler.dev/paused-at";

// Sleep when idle.
/// How long nothing may use the Namespace before it sleeps (`30m`).
pub const IDLE_AFTER: &str = "cronscaler.dev/idle-after";
/// Written by the controller with an idle sleep's `asleep-until`: since when nothing used it.
pub const IDLE_SINCE: &str = "cronscaler.dev/idle-since";

// Wake on request.
/// How long a request wakes the Namespace for (`2h`); only a Namespace with it is ever woken.
pub const WAKE_ON_REQUEST: &str = "cronscaler.dev/wake-on-request";
/// Host names whose requests are for the Namespace, comma-separated; `*.example.com` matches
/// one label.
pub const WAKE_HOSTS: &str = "cronscaler.dev/wake-hosts";
/// Written by the controller: the seconds from the last wake to all workloads ready (`42s`).
pub const LAST_WARM_UP: &str = "cronscaler.dev/last-warm-up";

// Ready by the hour.
/// `"true"`: wake early by the warm-up, so the workloads are ready at the scale-up's instant.
pub const READY_BY: &str = "cronscaler.dev/ready-by";

// Beside a GitOps tool.
/// `ignore` or `pause`.
pub const GITOPS: &str = "cronscaler.dev/gitops";

// A label, not an annotation: the cause of the last warning (see `warnings`).
/// The label holding the cause of the last warning said about the object.
pub const WARNED: &str = "cronscaler.dev/warned";

// What the controller records on objects other than workloads.
/// The `minReplicas` an HPA had before the night, written by the controller on the HPA.
pub const ORIGINAL_MIN_REPLICAS: &str = "cronscaler.dev/original-min-replicas";
/// The `maxReplicas` an HPA had before the night, written by the controller on the HPA.
pub const ORIGINAL_MAX_REPLICAS: &str = "cronscaler.dev/original-max-replicas";
/// The annotation on an owner whose repair the controller paused: what it had, and the
/// Namespaces asleep that paused it.
pub const GITOPS_PAUSED: &str = "cronscaler.dev/gitops-paused";
