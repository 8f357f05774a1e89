use anyhow::Context as _;
use clap::Parser as _;
use cronscaler::{
    cli::{Cli, Command},
    controller,
    foo::Foo,
};
use kube::CustomResourceExt as _;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => {
            print!(
                "{}",
                serde_norway::to_string(&Foo::crd()).context("serializing the Foo CRD")?
            );
        }
        Command::Run(args) => {
            init_logging();
            let shutdown = shutdown_signal().context("installing signal handlers")?;
            let client = controller::connect(&args)
                .await
                .context("connecting to the Kubernetes API server")?;
            controller::run(client, &args, shutdown).await;
            tracing::info!("stopped");
        }
    }
    Ok(())
}

fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
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
