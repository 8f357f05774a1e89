//! Where money and the controller's records come from: the price table a person gives,
//! OpenCost's prices in Prometheus, and where the controller runs.

use clap::Args;

use super::{Command, parse_prometheus_url};
use crate::{
    activity::{
        opencost::{Own, Source},
        prometheus::Prometheus,
    },
    cost::{
        Currency, PriceTable, PricesError,
        opencost::{Selector, SelectorError},
    },
};

/// What an hour of each resource requested costs: `plan`, `status` and the console show
/// savings in money by it.
#[derive(Debug, Clone, Args)]
pub struct Prices {
    /// What an hour of each resource requested costs, and the currency:
    /// `cpu=0.031,memory=0.0042,gpu=2.48,currency=USD` (per core, per GiB, per GPU;
    /// `gpu` is `nvidia.com/gpu`, and any other extended resource is named as Pods request it,
    /// e.g. `amd.com/gpu=1.9`). Without it, savings stay in resource-hours.
    #[arg(long = "prices", env = "CRONSCALER_PRICES", value_parser = price_table)]
    pub table: Option<PriceTable>,
}

fn price_table(text: &str) -> Result<PriceTable, String> {
    text.parse().map_err(|error: PricesError| error.to_string())
}

/// OpenCost's prices, read from the Prometheus that scrapes its metrics; first found wins, then
/// `--prices`.
#[derive(Debug, Clone, Args)]
pub struct OpenCost {
    /// Prometheus's address (`http://prometheus.monitoring:9090`) that scrapes OpenCost's
    /// `node_cpu_hourly_cost`, `node_ram_hourly_cost` and `node_gpu_hourly_cost`: they price
    /// what sleeping withholds, before `--prices`, each workload at the nodes its Pods ran on
    /// (as the controller recorded them as it put it to sleep), else at their means over the
    /// cluster's nodes.
    #[arg(
        id = "opencost_prometheus_url",
        long = "prometheus-url",
        env = "CRONSCALER_PROMETHEUS_URL",
        value_parser = parse_prometheus_url
    )]
    pub prometheus_url: Option<String>,

    #[command(flatten)]
    pub series: OpenCostSeries,
}

impl OpenCost {
    /// Where OpenCost's prices are read, where a Prometheus is given.
    pub fn source(&self) -> Option<Source> {
        (self.prometheus_url.as_deref()).map(|url| self.series.source(url))
    }
}

/// Which of the series of the Prometheus of `--prometheus-url` are OpenCost's, and the currency
/// of its prices.
#[derive(Debug, Clone, Args)]
pub struct OpenCostSeries {
    /// The label matchers of OpenCost's own series in Prometheus, as its scrape configuration
    /// labels them: series of OpenCost's names from anywhere else (any Pod Prometheus scrapes
    /// can export a `node_cpu_hourly_cost`) do not price. `{}` takes them from anywhere.
    #[arg(
        long,
        env = "CRONSCALER_OPENCOST_SELECTOR",
        default_value = r#"{job="opencost"}"#,
        value_parser = selector
    )]
    pub opencost_selector: Selector,

    /// OpenCost's own address (`http://opencost.opencost:9003`), whose `/metrics` the
    /// controller reads itself: the prices of now it gives price every node it names, whatever
    /// other series in Prometheus say (a tenant's Pod may export OpenCost's names and labels);
    /// Prometheus is asked only for the nodes it no longer names and where Pods ran. Needs
    /// `--prometheus-url`.
    #[arg(long, env = "CRONSCALER_OPENCOST_URL", value_parser = parse_opencost_url)]
    pub opencost_url: Option<String>,

    /// The currency OpenCost's prices are in (OpenCost's own setting; its metrics do not say).
    #[arg(long, env = "CRONSCALER_OPENCOST_CURRENCY", default_value = "USD", value_parser = currency)]
    pub opencost_currency: Currency,
}

impl OpenCostSeries {
    /// OpenCost's series in the Prometheus at `url`.
    pub fn source(&self, url: &str) -> Source {
        Source {
            prometheus: Prometheus::new(url),
            selector: self.opencost_selector.clone(),
            currency: self.opencost_currency.clone(),
            own: self.opencost_url.as_deref().map(Own::new),
        }
    }
}

/// Why `command` cannot be run as given: OpenCost's own address gives its prices of now, and
/// the nodes that went at night and where the Pods ran are read from the Prometheus that
/// scrapes it.
pub fn missing_prometheus(command: &Command) -> Option<&'static str> {
    let (series, prometheus_url) = match command {
        Command::Run(args) | Command::WakeBackend(args) => (&args.opencost, &args.prometheus_url),
        Command::Status(args) => (&args.opencost.series, &args.opencost.prometheus_url),
        Command::Nodes(args) => (&args.opencost.series, &args.opencost.prometheus_url),
        Command::Console(args) => (&args.opencost.series, &args.opencost.prometheus_url),
        _ => return None,
    };
    (series.opencost_url.is_some() && prometheus_url.is_none()).then_some(
        "--opencost-url gives OpenCost's prices of now; the nodes that went at night and where \
         the Pods ran are read from the Prometheus that scrapes it: give --prometheus-url too",
    )
}

fn parse_opencost_url(text: &str) -> Result<String, String> {
    parse_prometheus_url(text).map_err(|_| {
        format!("{text:?} is not an http:// address such as http://opencost.opencost:9003")
    })
}

fn selector(text: &str) -> Result<Selector, String> {
    text.parse()
        .map_err(|error: SelectorError| error.to_string())
}

fn currency(text: &str) -> Result<Currency, String> {
    Currency::of(text)
        .ok_or_else(|| format!("{text:?} is not a currency: give its ISO 4217 code, e.g. USD"))
}

/// Where the controller records the nodes around each night.
#[derive(Debug, Clone, Args)]
pub struct ControllerNamespace {
    /// The namespace the controller runs in, where it records the nodes around each night
    /// (ConfigMap cronscaler-nights; default: `cronscaler`, then the kubeconfig's namespace).
    #[arg(
        id = "controller_namespace",
        long = "controller-namespace",
        env = "CRONSCALER_CONTROLLER_NAMESPACE"
    )]
    pub namespace: Option<String>,
}
