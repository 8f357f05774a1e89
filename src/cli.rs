//! Command line: every flag can also come from a `CRONSCALER_*` environment variable, so the
//! same binary is configured by flags on a laptop and by env in a Pod spec.

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cronscaler",
    version,
    about = "Scheduled scaling for Kubernetes, and the Foo controller"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers against the cluster of the current kubeconfig (or in-cluster config).
    Run(RunArgs),
    /// Print the Foo CustomResourceDefinition as YAML.
    Crd,
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
}

fn positive_f64(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(number) if number.is_finite() && number > 0.0 => Ok(number),
        _ => Err(format!("{value:?} is not a positive number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(args: &[&str]) -> Result<RunArgs, clap::Error> {
        let cli = Cli::try_parse_from(["cronscaler", "run"].iter().chain(args))?;
        match cli.command {
            Command::Run(run) => Ok(run),
            Command::Crd => panic!("parsed as crd"),
        }
    }

    #[test]
    fn run_defaults_match_the_documented_ones() {
        let run = run_args(&[]).unwrap();
        assert_eq!(run.workers, 2);
        assert_eq!(run.namespace, None);
        assert_eq!(run.kube_qps, 50.0);
        assert_eq!(run.kube_burst, 100);
    }

    #[test]
    fn flags_override_defaults() {
        let run = run_args(&[
            "--workers",
            "8",
            "--namespace",
            "staging",
            "--kube-qps",
            "5.5",
            "--kube-burst",
            "10",
        ])
        .unwrap();
        assert_eq!(run.workers, 8);
        assert_eq!(run.namespace.as_deref(), Some("staging"));
        assert_eq!(run.kube_qps, 5.5);
        assert_eq!(run.kube_burst, 10);
    }

    #[test]
    fn nonsense_budgets_are_refused_with_the_value() {
        let error = run_args(&["--kube-qps=-3"]).unwrap_err().to_string();
        assert!(error.contains("\"-3\" is not a positive number"), "{error}");
        assert!(run_args(&["--workers", "0"]).is_err());
        assert!(run_args(&["--kube-burst", "0"]).is_err());
    }
}
