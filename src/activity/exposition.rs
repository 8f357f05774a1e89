//! A target's own metrics, read as Prometheus scrapes them (`GET /metrics`, the text exposition
//! format), for the series of a few names only: OpenCost's `/metrics` names every container of
//! the cluster too, tens of MiB on a large one, so it is read a chunk at a time and only the
//! lines of the names asked for are kept.

use std::{collections::BTreeMap, time::Duration};

use http::{Request, Uri};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};

use crate::{duration::spoken, escape::unquoted};

/// The longest a read of a target's metrics takes.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a target's metrics read: OpenCost's of a cluster of 30,000 Pods is some 50 MiB.
const MAX_METRICS: usize = 512 << 20;
/// The longest line kept: a series of a node is a few hundred bytes.
const MAX_LINE: usize = 64 << 10;

#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("{url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered {status}")]
    Refused { url: String, status: u16 },
    #[error("{url} did not answer within {}", spoken(READ_TIMEOUT))]
    TimedOut { url: String },
    #[error("{url} answered more than {} MiB", MAX_METRICS >> 20)]
    TooLarge { url: String },
}

/// One series: its labels and its value.
pub type Sample = (BTreeMap<String, String>, f64);

/// A target whose `/metrics` is read.
#[derive(Clone)]
pub struct Target {
    url: String,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl Target {
    /// The target at `url` (`http://opencost.opencost:9003`); its metrics at `url/metrics`.
    pub fn new(url: &str) -> Self {
        Self {
            url: format!("{}/metrics", url.trim_end_matches('/')),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The series of each of `names` the target shows now, by name.
    pub async fn samples(
        &self,
        names: &[&str],
    ) -> Result<BTreeMap<String, Vec<Sample>>, ScrapeError> {
        let timed_out = || ScrapeError::TimedOut {
            url: self.url.clone(),
        };
        tokio::time::timeout(READ_TIMEOUT, self.read(names))
            .await
            .map_err(|_| timed_out())?
    }

    async fn read(&self, names: &[&str]) -> Result<BTreeMap<String, Vec<Sample>>, ScrapeError> {
        let unreachable = |reason: String| ScrapeError::Unreachable {
            url: self.url.clone(),
            reason,
        };
        let uri: Uri = (self.url.parse())
            .map_err(|error: http::uri::InvalidUri| unreachable(error.to_string()))?;
        let request = Request::get(uri)
            .header(http::header::ACCEPT, "text/plain")
            .body(Empty::new())
            .map_err(|error| unreachable(error.to_string()))?;
        let response = (self.client.request(request).await)
            .map_err(|error| unreachable(with_causes(&error)))?;
        if !response.status().is_success() {
            return Err(ScrapeError::Refused {
                url: self.url.clone(),
                status: response.status().as_u16(),
            });
        }
        let mut body = response.into_body();
        let mut kept = Lines::new(names);
        let mut read = 0;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| unreachable(with_causes(&error)))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            read += data.len();
            if read > MAX_METRICS {
                return Err(ScrapeError::TooLarge {
                    url: self.url.clone(),
                });
            }
            kept.feed(&data);
        }
        Ok(kept.finish())
    }
}

/// The series of each of `names` in `text`, as [`Target::samples`] reads them.
#[cfg(test)]
pub fn read_text(text: &str, names: &[&str]) -> BTreeMap<String, Vec<Sample>> {
    let mut lines = Lines::new(names);
    lines.feed(text.as_bytes());
    lines.finish()
}

/// `error` with what caused it: a client's error says "client error (Connect)", its cause
/// "Connection refused".
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(&format!(": {next}"));
        cause = next.source();
    }
    text
}

/// The lines of some names, taken in a chunk at a time.
struct Lines<'a> {
    names: &'a [&'a str],
    partial: Vec<u8>,
    /// Whether the line under way is over [`MAX_LINE`], and left out.
    overlong: bool,
    samples: BTreeMap<String, Vec<Sample>>,
}

impl<'a> Lines<'a> {
    fn new(names: &'a [&'a str]) -> Self {
        Self {
            names,
            partial: Vec::new(),
            overlong: false,
            samples: BTreeMap::new(),
        }
    }

    fn feed(&mut self, mut data: &[u8]) {
        while let Some(end) = data.iter().position(|byte| *byte == b'\n') {
            self.take(&data[..end]);
            if !self.overlong {
                let line = std::mem::take(&mut self.partial);
                self.line(&line);
            }
            self.partial.clear();
            self.overlong = false;
            data = &data[end + 1..];
        }
        self.take(data);
    }

    fn take(&mut self, data: &[u8]) {
        if self.partial.len() + data.len() > MAX_LINE {
            self.overlong = true;
            self.partial.clear();
        } else if !self.overlong {
            self.partial.extend_from_slice(data);
        }
    }

    fn line(&mut self, line: &[u8]) {
        let Ok(line) = std::str::from_utf8(line) else {
            return;
        };
        let Some(name) = (self.names.iter()).find(|name| {
            line.strip_prefix(**name)
                .is_some_and(|rest| rest.starts_with(['{', ' ', '\t']))
        }) else {
            return;
        };
        if let Some(sample) = sample(&line[name.len()..]) {
            self.samples
                .entry(name.to_string())
                .or_default()
                .push(sample);
        }
    }

    fn finish(mut self) -> BTreeMap<String, Vec<Sample>> {
        if !self.overlong {
            let line = std::mem::take(&mut self.partial);
            self.line(&line);
        }
        self.samples
    }
}

/// A series' labels and value, from what follows its name on its line: `{a="b",c="d"} 1.5`
/// (a timestamp after it ignored); `None` where it does not read.
fn sample(rest: &str) -> Option<Sample> {
    let mut labels = BTreeMap::new();
    let mut rest = rest.trim_start();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner.trim_start();
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            let name = &rest[..name_end];
            rest = rest[name_end..]
                .trim_start()
                .strip_prefix('=')?
                .trim_start();
            let (value, after) = quoted(rest)?;
            labels.insert(name.to_string(), value);
            rest = after.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        value => value.parse().ok()?,
    };
    Some((labels, value))
}

/// A label's value in double quotes at the start of `text` (`\\`, `\"` and `\n` escaped), and
/// what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    unquoted(text, |escaped| {
        Some(if escaped == 'n' { '\n' } else { escaped })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "# HELP node_cpu_hourly_cost node_cpu_hourly_cost hourly cost for each cpu on this node
# TYPE node_cpu_hourly_cost gauge
node_cpu_hourly_cost{arch=\"amd64\",instance=\"ip-10-0-1-7\",node=\"ip-10-0-1-7\",provider_id=\"aws:///eu-west-1a/i-0\"} 0.031611
node_cpu_hourly_cost{node=\"spot-1\",label=\"a \\\"quoted\\\" \\\\ one\\nline, café\"} 1e-2 1700000000000
node_cpu_hourly_costs{node=\"x\"} 9
node_ram_hourly_cost{node=\"spot-1\"} NaN
container_cpu_allocation{container=\"nginx\",namespace=\"shop\",node=\"spot-1\",pod=\"web-0\"} 0.5
node_gpu_hourly_cost{node=\"broken\" 3
node_gpu_hourly_cost{node=\"g\"} +Inf
node_total_hourly_cost 1";

    fn read(chunks: &[&[u8]], names: &[&str]) -> BTreeMap<String, Vec<Sample>> {
        let mut lines = Lines::new(names);
        for chunk in chunks {
            lines.feed(chunk);
        }
        lines.finish()
    }

    #[test]
    fn only_the_names_asked_for_are_read_whatever_the_chunks() {
        let names = [
            "node_cpu_hourly_cost",
            "node_ram_hourly_cost",
            "node_gpu_hourly_cost",
            "node_total_hourly_cost",
        ];
        let whole = read(&[METRICS.as_bytes()], &names);
        for size in [1, 7, 64] {
            let chunks: Vec<&[u8]> = METRICS.as_bytes().chunks(size).collect();
            let read = read(&chunks, &names);
            assert_eq!(
                format!("{read:?}"),
                format!("{whole:?}"),
                "chunks of {size}"
            );
        }
        let cpu = &whole["node_cpu_hourly_cost"];
        assert_eq!(cpu.len(), 2, "not node_cpu_hourly_costs: {cpu:?}");
        assert_eq!(
            (cpu[0].0["node"].as_str(), cpu[0].1),
            ("ip-10-0-1-7", 0.031611)
        );
        assert_eq!(
            cpu[1].0["label"], "a \"quoted\" \\ one\nline, café",
            "é split across chunks too"
        );
        assert_eq!(cpu[1].1, 0.01, "the timestamp after it ignored");
        assert!(whole["node_ram_hourly_cost"][0].1.is_nan());
        assert_eq!(
            whole["node_gpu_hourly_cost"].len(),
            1,
            "the broken line left out"
        );
        assert_eq!(whole["node_total_hourly_cost"][0], (BTreeMap::new(), 1.0));
        assert!(!whole.contains_key("container_cpu_allocation"));
    }

    #[test]
    fn a_line_too_long_is_left_out_and_the_next_read() {
        let long = format!(
            "node_cpu_hourly_cost{{node=\"a\",x=\"{}\"}} 1\nnode_cpu_hourly_cost{{node=\"b\"}} 2\n",
            "x".repeat(MAX_LINE)
        );
        let chunks: Vec<&[u8]> = long.as_bytes().chunks(1000).collect();
        let read = read(&chunks, &["node_cpu_hourly_cost"]);
        assert_eq!(read["node_cpu_hourly_cost"].len(), 1);
        assert_eq!(read["node_cpu_hourly_cost"][0].0["node"], "b");
    }

    #[test]
    fn no_input_panics() {
        for text in [
            "",
            "node_cpu_hourly_cost{",
            "node_cpu_hourly_cost{a=\"",
            "node_cpu_hourly_cost{a=\"\\",
            "node_cpu_hourly_cost {} x",
            "node_cpu_hourly_cost{é=\"1\"} 1",
            "node_cpu_hourly_cost{a=\"é\"} 1",
        ] {
            read(&[text.as_bytes()], &["node_cpu_hourly_cost"]);
        }
    }
}
