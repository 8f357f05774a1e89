//! OpenCost's own `/metrics` (`--opencost-url`), which no other target can write to: what it
//! prices each node at now, and what it priced each node at that went since this process began
//! reading it. A long-running reader (the controller, the console) reads it now and then, so that
//! a node an autoscaler took away at night is still priced as OpenCost priced it.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use crate::{
    activity::exposition::{ScrapeError, Target},
    cost::opencost::{
        CPU_COST, GPU_COST, MEMORY_COST, NODE_LABEL, PerNode, TOTAL_COST, one_a_node,
    },
};

/// How long a read is used: a look, a `status` or a page asks for it once, and a long-running
/// reader's last read ([`READ_EVERY`]) serves every look and page until the next.
const FRESH: Duration = Duration::from_secs(330);
/// How long the prices last read stand in for a read that failed (OpenCost restarting): the
/// prices of a node change by the hour at most.
const STAND_IN: Duration = Duration::from_secs(3600);
/// How often a long-running reader reads it, whoever asks: a node emptied at night goes some ten
/// minutes after, and is priced by the last read before.
pub const READ_EVERY: Duration = Duration::from_secs(300);
/// The most nodes remembered: beyond, those OpenCost no longer shows are forgotten.
const MOST_NODES: usize = 20_000;

/// OpenCost at its own address, and what was read of it.
#[derive(Clone)]
pub struct Own {
    target: Target,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// When a read last succeeded, and when one was last tried.
    read: Option<Instant>,
    tried: Option<Instant>,
    prices: OwnPrices,
}

/// What OpenCost priced each node at, as it last showed it: those it shows now at their prices of
/// now, and the nodes gone since at what they cost before they went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnPrices {
    pub per_node: PerNode,
    /// What each node costs an hour in all.
    pub total: BTreeMap<String, f64>,
}

impl Own {
    /// OpenCost at `url` (`http://opencost.opencost:9003`).
    pub fn new(url: &str) -> Self {
        Self {
            target: Target::new(url),
            state: Arc::default(),
        }
    }

    /// Where its metrics are read.
    pub fn url(&self) -> &str {
        self.target.url()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What OpenCost priced each node at, read again where the last read is over [`FRESH`] old.
    /// A read that fails leaves the last one standing for an hour.
    pub async fn prices(&self) -> Result<OwnPrices, ScrapeError> {
        let fresh = |at: Option<Instant>| at.is_some_and(|at| at.elapsed() < FRESH);
        {
            let state = self.state();
            if fresh(state.read) || (fresh(state.tried) && state.read.is_some()) {
                return Ok(state.prices.clone());
            }
        }
        self.state().tried = Some(Instant::now());
        match self
            .target
            .samples(&[CPU_COST, MEMORY_COST, GPU_COST, TOTAL_COST])
            .await
        {
            Ok(samples) => {
                let mut state = self.state();
                state.prices.take(&samples);
                state.read = Some(Instant::now());
                Ok(state.prices.clone())
            }
            Err(error) => {
                let state = self.state();
                match state.read {
                    Some(read) if read.elapsed() < STAND_IN => {
                        tracing::warn!(%error, "OpenCost's own metrics not read: its prices of the last read stand in");
                        Ok(state.prices.clone())
                    }
                    _ => Err(error),
                }
            }
        }
    }

    /// Reads OpenCost every [`READ_EVERY`], for as long as it runs.
    pub async fn keep_reading(self) {
        loop {
            if let Err(error) = self.prices().await {
                tracing::warn!(%error, "OpenCost's own metrics not read");
            }
            tokio::time::sleep(READ_EVERY).await;
        }
    }
}

impl OwnPrices {
    /// Takes in one read of OpenCost's metrics, by name: each node it shows at its prices now
    /// (a node given two values of one has none of it), the others as they were.
    fn take(&mut self, samples: &BTreeMap<String, Vec<crate::activity::exposition::Sample>>) {
        let series = |metric: &str| {
            (samples.get(metric).into_iter().flatten())
                .filter_map(|(labels, value)| Some((labels.get(NODE_LABEL)?.as_str(), *value)))
                .collect::<Vec<_>>()
        };
        let shown: BTreeSet<String> = [CPU_COST, MEMORY_COST, GPU_COST, TOTAL_COST]
            .iter()
            .flat_map(|metric| series(metric))
            .map(|(node, _)| node.to_string())
            .collect();
        let mut gpu = one_a_node(series(GPU_COST));
        // OpenCost gives a node without GPUs a GPU price of 0.
        gpu.retain(|_, price| *price > 0.0);
        let maps = [
            (&mut self.per_node.cpu, one_a_node(series(CPU_COST))),
            (&mut self.per_node.memory, one_a_node(series(MEMORY_COST))),
            (&mut self.per_node.gpu, gpu),
            (&mut self.total, one_a_node(series(TOTAL_COST))),
        ];
        for (kept, now) in maps {
            kept.retain(|node, _| !shown.contains(node));
            if kept.len() + now.len() > MOST_NODES {
                kept.clear();
            }
            kept.extend(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::fake;

    /// OpenCost showing `nodes`, each at `price` per core and per GiB, `price` × 10 in all.
    fn shows(nodes: &[(&str, f64)]) -> String {
        let mut text = String::from("# TYPE node_cpu_hourly_cost gauge\n");
        for (node, price) in nodes {
            text.push_str(&format!(
                "node_cpu_hourly_cost{{node=\"{node}\"}} {price}\nnode_ram_hourly_cost{{node=\"{node}\"}} {price}\nnode_gpu_hourly_cost{{node=\"{node}\"}} 0\nnode_total_hourly_cost{{node=\"{node}\"}} {}\n",
                price * 10.0
            ));
        }
        text
    }

    #[test]
    fn a_node_gone_keeps_its_last_prices_and_one_shown_again_takes_its_new_ones() {
        let mut prices = OwnPrices::default();
        let names = [CPU_COST, MEMORY_COST, GPU_COST, TOTAL_COST];
        let read = |text: String| crate::activity::exposition::read_text(&text, &names);
        prices.take(&read(shows(&[("a", 0.04), ("b", 0.05)])));
        prices.take(&read(shows(&[("a", 0.06)])));
        assert_eq!(prices.per_node.cpu["a"], 0.06);
        assert_eq!(prices.per_node.cpu["b"], 0.05, "gone: as it last cost");
        assert_eq!(prices.total["b"], 0.5);
        assert!(prices.per_node.gpu.is_empty(), "no GPU: no GPU price");
        // Shown again with two values of one: none of it, not the old one.
        let twice = shows(&[("b", 0.05), ("b", 0.07)]);
        prices.take(&read(twice));
        assert!(!prices.per_node.cpu.contains_key("b"));
    }

    /// One read whoever asks, and the last read stands in for an hour when OpenCost does
    /// not answer.
    #[tokio::test]
    async fn read_once_whoever_asks_and_the_last_read_stands_in() {
        let (url, asked) = fake::metrics_counted(shows(&[("a", 0.04)])).await;
        let mut own = Own::new(&url);
        let first = own.prices().await.unwrap();
        let clone = own.clone();
        assert_eq!(clone.prices().await.unwrap(), first);
        assert_eq!(asked(), 1, "one read for both");
        assert_eq!(first.per_node.cpu["a"], 0.04);
        // OpenCost away: the last read stands in (where the clock goes back far enough to say
        // the read is old).
        own.target = Target::new("http://127.0.0.1:9");
        if let Some(old) = Instant::now().checked_sub(FRESH * 2) {
            own.state().read = Some(old);
            assert_eq!(own.prices().await.unwrap(), first);
        }
        // None read within the hour: no prices of OpenCost's.
        own.state().read = None;
        own.state().tried = None;
        let error = own.prices().await.unwrap_err().to_string();
        assert!(
            error.contains("http://127.0.0.1:9/metrics") && error.contains("refused"),
            "{error}"
        );
    }
}
