use anyhow::Context as _;
use std::process::ExitCode;

use chrono::Utc;
use cronscaler::{
    commands::{
        cli::{
            Cli, Command, KubeArgs, NodesArgs, OutputFormat, OverrideArgs, PlanArgs, RestoreArgs,
            RunArgs, StatusArgs, StatusFormat,
        },
        cluster, console, kubeconfig, nodes,
        on_demand::{OverrideTarget, set_override},
        plan, run as controller, status,
    },
    foo::Foo,
    ops::logs,
    scaling::hpa,
    simulation,
    workloads::objects,
};
use kube::CustomResourceExt as _;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> ExitCode {
    // Said as one line of causes, never as a backtrace (which RUST_BACKTRACE would add): a
    // refusal tells a person what to do, and a backtrace tells them nothing.
    match command().await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("Error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn command() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse_args(std::env::args_os()).unwrap_or_else(|error| error.exit());
    let kube = &cli.kube;
    match cli.command {
        Command::Crd => {
            say(serde_norway::to_string(&Foo::crd()).context("serializing the Foo CRD")?)?;
        }
        Command::Plan(args) => return plan(kube, args).await,
        Command::Restore(args) => return restore(kube, args).await,
        Command::Status(args) => show_status(kube, args).await?,
        Command::Nodes(args) => show_nodes(kube, args).await?,
        Command::Wake(args) => on_demand(kube, args, cronscaler::schedule::Direction::Up).await?,
        Command::Sleep(args) => {
            on_demand(kube, args, cronscaler::schedule::Direction::Down).await?
        }
        Command::Run(args) => {
            let (clients, shutdown) = start(kube, &args).await?;
            controller::run(clients, &args, shutdown).await?;
            tracing::info!("stopped");
        }
        Command::Console(args) => {
            logs::init(args.log_format);
            let shutdown = shutdown_signal().context("installing signal handlers")?;
            let client = kubeconfig::client(kube)
                .await
                .context("connecting to the Kubernetes API server")?;
            let acceptor = console::listen(&args).await?;
            let console = std::sync::Arc::new(console::Console::new(client, &args).await?);
            tokio::select! {
                () = console::serve(acceptor, console) => {}
                () = shutdown => {}
            }
            tracing::info!("stopped");
        }
        Command::WakeBackend(args) => {
            let (clients, shutdown) = start(kube, &args).await?;
            controller::wake_backend(clients, &args, shutdown).await?;
            tracing::info!("stopped");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What a long-running process starts with: its logs, its signal handlers, and its clients.
async fn start(
    kube: &KubeArgs,
    args: &RunArgs,
) -> anyhow::Result<(controller::Clients, impl std::future::Future<Output = ()>)> {
    logs::init(args.log_format);
    let shutdown = shutdown_signal().context("installing signal handlers")?;
    let config = kubeconfig::config(kube)
        .await
        .context("connecting to the Kubernetes API server")?;
    let clients =
        controller::clients_for(config, args).context("connecting to the Kubernetes API server")?;
    Ok((clients, shutdown))
}

/// Writes `text` to standard output. A reader that stops early (`| head`) has what it wanted:
/// the rest is dropped quietly, where `print!` would panic.
fn say(text: impl std::fmt::Display) -> anyhow::Result<()> {
    use std::io::Write as _;
    match write!(std::io::stdout().lock(), "{text}") {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("writing to standard output"),
    }
}

/// Writes an override on demand and says what the controller will do with it.
async fn on_demand(
    kube: &KubeArgs,
    args: OverrideArgs,
    direction: cronscaler::schedule::Direction,
) -> anyhow::Result<()> {
    let namespace = args.namespace.context("which namespace? Give it with -n")?;
    let target = OverrideTarget::parse(&namespace, args.object.as_deref())?;
    let now = Utc::now();
    let requested = match (args.for_, args.until) {
        (Some(span), _) => Some(
            chrono::Duration::from_std(span)
                .ok()
                .and_then(|span| now.checked_add_signed(span))
                .context("--for is too long")?,
        ),
        (None, until) => until,
    };
    let max =
        chrono::Duration::from_std(args.max_override).context("--max-override is too long")?;
    let client = kubeconfig::client(kube)
        .await
        .context("connecting to the Kubernetes API server")?;
    let said = set_override(
        &client,
        &target,
        direction,
        requested,
        now,
        max,
        args.default_timezone.zone,
    )
    .await?;
    say(format!("{said}\n"))?;
    Ok(())
}

/// Restores the objects named; exit code 1 when any could not be restored.
async fn restore(kube: &KubeArgs, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let client = kubeconfig::client(kube)
        .await
        .context("connecting to the Kubernetes API server")?;
    if !args.force {
        let unchecked = cronscaler::commands::restore::refuse_while_a_controller_leads(
            &client,
            &args.lease,
            k8s_openapi::jiff::Timestamp::now(),
        )
        .await?;
        for line in unchecked {
            eprintln!("{line}");
        }
    }
    let reading = plan::Reading {
        kube_downscaler: args.kube_downscaler.read,
        ..plan::Reading::default()
    };
    // A kind named that is not served yet has no objects to restore.
    let (kinds, _) = objects::resolve(&client, &args.kinds.kinds).await;
    let plan::ClusterRead {
        objects,
        owners,
        namespaces,
    } = plan::read_cluster(&client, args.namespace.as_deref(), &kinds, reading)
        .await
        .context("reading the cluster")?;
    let chosen: Vec<_> = match &args.name {
        Some(name) => objects
            .into_iter()
            .filter(|object| &object.target.key.name == name)
            .collect(),
        None => objects,
    };
    if let (Some(name), true) = (&args.name, chosen.is_empty()) {
        anyhow::bail!(
            "no Deployment, StatefulSet, CronJob, Job, Foo, ScaledObject, ScaledJob, Rollout or Cluster named {name:?} in namespace {:?}",
            args.namespace.unwrap_or_default()
        );
    }
    let hpas = hpa::list_hpas(&client, args.namespace.as_deref())
        .await
        .context("listing HorizontalPodAutoscalers")?;
    let (mut lines, mut all_ok) = cronscaler::commands::restore::restore(
        &client,
        &chosen,
        &hpa::HpaIndex::listed(hpas),
        &namespaces,
        Utc::now(),
    )
    .await;
    // A whole Namespace restored serves its own traffic again, not the wake-up backend.
    if args.name.is_none() {
        let (slice_lines, slices_ok) =
            cronscaler::commands::restore::remove_wake_slices(&client, args.namespace.as_deref())
                .await;
        lines.extend(slice_lines);
        all_ok &= slices_ok;
    }
    if args.all {
        let (namespace_lines, namespaces_ok) =
            cronscaler::commands::restore::remove_namespace_overrides(
                &client,
                args.namespace.as_deref(),
            )
            .await;
        lines.extend(namespace_lines);
        all_ok &= namespaces_ok;
    }
    // After the workloads: an owner given back its repair finds them as Git has them. One
    // object restored gives back, from its Namespace, the owner that deploys it: nothing else
    // would, should no controller run again.
    let deployers: Vec<_> = (chosen.iter())
        .filter_map(|object| object.gitops.as_ref())
        .filter(|gitops| gitops.confirmed)
        .map(|gitops| gitops.owner.clone())
        .collect();
    let (owner_lines, owners_ok) = cronscaler::commands::restore::give_back_owners(
        &client,
        args.namespace.as_deref(),
        owners,
        |owner| args.name.is_none() || deployers.contains(owner),
    )
    .await;
    lines.extend(owner_lines);
    all_ok &= owners_ok;
    for line in &lines {
        say(format!("{line}\n"))?;
    }
    if lines.is_empty() {
        say("nothing to restore\n")?;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints what every scheduled object is doing now; on standard error, what could not be known.
async fn show_nodes(kube: &KubeArgs, args: NodesArgs) -> anyhow::Result<()> {
    let client = kubeconfig::client(kube)
        .await
        .context("connecting to the Kubernetes API server")?;
    let read = nodes::read(&client)
        .await
        .context("reading Nodes, Pods and PodDisruptionBudgets")?;
    let nodes = nodes::nodes(&read);
    let controller = args.controller.namespace.as_deref();
    let recorded = status::nights::recorded(&client, controller).await;
    let night = status::nights::last(&recorded);
    let now = Utc::now();
    let source = args.opencost.source();
    // The Nodes already listed, and the record already read.
    let names = (read.nodes.iter()).filter_map(|node| node.metadata.name.clone());
    let known = status::priced::known_nodes(names.collect(), &recorded);
    let priced = status::priced::prices(
        async { Ok(known) },
        source.as_ref(),
        args.prices.table.as_ref(),
        now,
    )
    .await;
    let from = priced.from.as_deref();
    match args.output {
        StatusFormat::Table => {
            let (nights, note) = status::nights::render(&night, &priced, now);
            // Said only where asked: most who read status never look for the record.
            if let Some(note) = note.filter(|_| args.controller.namespace.is_some()) {
                eprintln!("{note}");
            }
            say(nodes::render_table(&nodes) + &nights + &status::nights::prices_line(from))?
        }
        StatusFormat::Json => {
            let shown = status::nights::WithLastNight::new(&nodes, &night, from);
            say(format!("{}\n", serde_json::to_string_pretty(&shown)?))?
        }
    }
    Ok(())
}

async fn show_status(kube: &KubeArgs, args: StatusArgs) -> anyhow::Result<()> {
    let client = kubeconfig::client(kube)
        .await
        .context("connecting to the Kubernetes API server")?;
    // A kind named that is not served yet has no objects to show.
    let reading = &args.reading;
    let (kinds, _) = objects::resolve(&client, &reading.kinds.kinds).await;
    let cluster = cluster::read(
        &client,
        args.namespace.as_deref(),
        &kinds,
        reading.kube_downscaler.read,
    )
    .await?;
    let mut listed = status::listed(cluster);
    if reading.kube_downscaler.read {
        listed.read_kube_downscaler_as_ours();
    }
    if listed.namespaces.is_none() {
        eprintln!(
            "Namespaces may not be listed (403): objects scheduled by their Namespace alone are \
             missing, and exclusions unknown"
        );
    }
    for kind in &listed.unreadable {
        eprintln!(
            "{} may not be listed (403): left out",
            kind.spec().qualified()
        );
    }
    for (tool, deployed) in listed.unread_owners() {
        let spec = tool.spec();
        eprintln!(
            "{}.{} may not be listed (403): who deploys {deployed} of these workloads, and what \
             it does to their nights, is not shown",
            spec.kind, spec.group
        );
    }
    let now = Utc::now();
    let controller = args.controller.namespace.as_deref();
    let source = args.opencost.source();
    let recorded = status::nights::recorded(&client, controller).await;
    let known = status::priced::read_known_nodes(&client, &recorded);
    let mut priced =
        status::priced::prices(known, source.as_ref(), reading.prices.table.as_ref(), now).await;
    let mut status = listed.status(reading, &priced, now);
    let ran_on = status.ran_on();
    if priced.from_opencost && !ran_on.is_empty() {
        // What is asleep now, at the nodes its Pods ran on.
        priced.read_where_ran(source.as_ref(), &ran_on).await;
        status.reprice(&priced);
    }
    let night = status::nights::last(&recorded);
    let from = priced.from.as_deref();
    match args.output {
        StatusFormat::Table => {
            let (nights, note) = status::nights::render(&night, &priced, now);
            // Said only where asked: most who read status never look for the record.
            if let Some(note) = note.filter(|_| args.controller.namespace.is_some()) {
                eprintln!("{note}");
            }
            say(status::render_table(&status, now) + &nights + &status::nights::prices_line(from))?
        }
        StatusFormat::Json => {
            let shown = status::nights::WithLastNight::new(&status, &night, from);
            say(format!("{}\n", serde_json::to_string_pretty(&shown)?))?
        }
    }
    Ok(())
}

/// Prints the plan, and on standard error what of the manifests it skipped; exit code 1 when
/// some object's annotations are invalid (skipped objects are not an error).
async fn plan(kube: &KubeArgs, args: PlanArgs) -> anyhow::Result<ExitCode> {
    let reading = plan::Reading {
        kube_downscaler: args.kube_downscaler.read,
        gitops: args.gitops.mode,
    };
    let objects = if args.files.is_empty() {
        let client = kubeconfig::client(kube)
            .await
            .context("connecting to the Kubernetes API server (or pass -f)")?;
        let (kinds, _) = objects::resolve(&client, &args.kinds.kinds).await;
        plan::read_cluster(&client, args.namespace.as_deref(), &kinds, reading)
            .await
            .context("reading the cluster")?
            .objects
    } else {
        let manifests = plan::read_manifests(&args.files, reading)?;
        // Standard error, so that standard output stays the plan alone (`-o json` included).
        for skipped in &manifests.skipped {
            eprintln!("skipped {skipped}");
        }
        manifests.objects
    };
    let from = args.from.unwrap_or_else(Utc::now);
    let window = chrono::Duration::from_std(args.window).context("--for is too long")?;
    let until = from
        .checked_add_signed(window)
        .context("--for is too long")?;
    let plan = simulation::simulate(&objects, from, until, args.default_timezone.zone);
    let savings = simulation::savings(&plan.timelines, args.prices.table.as_ref());
    match args.output {
        OutputFormat::Table => say(plan::render_table(&plan, &savings))?,
        OutputFormat::Json => say(format!(
            "{}\n",
            serde_json::to_string_pretty(&simulation::WithSavings {
                plan: &plan,
                savings: &savings
            })?
        ))?,
        OutputFormat::Svg => {
            say(simulation::render_svg(&plan, &savings, from, until))?;
            // The chart draws what is planned; what cannot be is said where a person looks.
            for object in &plan.invalid {
                eprintln!(
                    "invalid {}/{}/{}, not drawn: {}",
                    object.namespace,
                    object.kind,
                    object.name,
                    object.problems.join("; ")
                );
            }
        }
    }
    Ok(if plan.invalid.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Resolves on the first SIGTERM or SIGINT, so in-flight work can finish; a second one exits
/// with status 1 at once, for an operator who will not wait.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            eprintln!("second signal: exiting without waiting for in-flight work");
            std::process::exit(1);
        });
    })
}
