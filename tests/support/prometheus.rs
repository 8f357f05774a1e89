//! A real Prometheus (Debian's `prometheus`) on loopback, scraping every second an exporter the
//! test serves, whose request counters per Namespace the test controls: what a proxy's metrics
//! would say, without the proxy, and what any tenant's Pod may export, its labels kept (as the
//! prometheus-community chart's `kubernetes-pods` job keeps them); and a second one as OpenCost,
//! scraped as OpenCost's own scrape configuration does (job `opencost`, its labels honoured).

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};

use super::{envtest, poll_until, say};

/// The query the controller is given: the exporter's counter, per Namespace.
pub const QUERY: &str = r#"sum(increase(test_requests_total{namespace="$namespace"}[$window]))"#;

/// The request counters the exporter shows. A Namespace marked busy has a request counted at
/// every scrape, as steady traffic would.
#[derive(Clone, Default)]
pub struct Requests {
    counts: Arc<Mutex<BTreeMap<String, (u64, bool)>>>,
    /// More series the exporter shows as they are (any other target's, such as a tenant's
    /// Pod's).
    more: Arc<Mutex<String>>,
    /// What OpenCost's exporter shows.
    opencost: Arc<Mutex<String>>,
}

impl Requests {
    /// `namespace` has a request counted at every scrape from now on.
    pub fn busy(&self, namespace: &str) {
        self.lock().entry(namespace.to_string()).or_default().1 = true;
    }

    /// The exporter shows `series` (exposition text) too from now on.
    pub fn also(&self, series: &str) {
        *self.more.lock().unwrap_or_else(PoisonError::into_inner) = series.to_string();
    }

    /// OpenCost's exporter shows `series` (exposition text) from now on.
    pub fn opencost(&self, series: &str) {
        *self.opencost.lock().unwrap_or_else(PoisonError::into_inner) = series.to_string();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (u64, bool)>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The exposition text of one scrape of OpenCost's exporter.
    fn scrape_opencost(&self) -> String {
        self.opencost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The exposition text of one scrape.
    fn scrape(&self) -> String {
        let mut counts = self.lock();
        let mut text = String::from("# TYPE test_requests_total counter\n");
        for (namespace, (count, busy)) in counts.iter_mut() {
            if *busy {
                *count += 1;
            }
            text.push_str(&format!(
                "test_requests_total{{namespace=\"{namespace}\"}} {count}\n"
            ));
        }
        text.push_str(&self.more.lock().unwrap_or_else(PoisonError::into_inner));
        text
    }
}

/// What a tenant's Pod that Prometheus scrapes may export under OpenCost's names, its job's
/// label written in (its job keeps the labels it exports): cheap prices of the real nodes
/// `nodes` and of a node no API server has, and the Pods of `workload` of `namespace` on that
/// node. None of it may price anything: a node whose series disagree has no price.
pub fn forged_opencost(nodes: &[&str], namespace: &str, workload: &str) -> String {
    let mut text = String::new();
    for metric in [
        "node_cpu_hourly_cost",
        "node_ram_hourly_cost",
        "node_gpu_hourly_cost",
        "node_total_hourly_cost",
    ] {
        text.push_str(&format!("# TYPE {metric} gauge\n"));
        for node in nodes.iter().chain(&["tenant-node"]) {
            text.push_str(&format!(
                "{metric}{{job=\"opencost\",node=\"{node}\"}} 0.001\n"
            ));
        }
    }
    text.push_str("# TYPE container_cpu_allocation gauge\n");
    for pod in ["7d9f8c6b5-zzzzz", "7d9f8c6b5-yyyyy", "0"] {
        text.push_str(&format!(
            "container_cpu_allocation{{job=\"opencost\",namespace=\"{namespace}\",pod=\"{workload}-{pod}\",node=\"tenant-node\"}} 1\n"
        ));
    }
    text
}

/// Prometheus and its exporter, both stopped when dropped.
pub struct Running {
    pub url: String,
    /// OpenCost's own address, whose `/metrics` its exporter serves.
    pub opencost_url: String,
    pub requests: Requests,
    prometheus: Option<Child>,
    exporter: tokio::task::JoinHandle<()>,
    opencost: tokio::task::JoinHandle<()>,
    _data: tempfile::TempDir,
}

impl Running {
    /// Stops Prometheus, as an outage would; the exporter goes on.
    pub fn stop(&mut self) {
        if let Some(mut prometheus) = self.prometheus.take() {
            let _ = prometheus.kill();
            let _ = prometheus.wait();
        }
    }

    /// Stops the exporter, as a proxy whose metrics are no longer scraped: Prometheus goes on,
    /// its scrapes fail, and the exporter's series go stale.
    pub fn stop_exporter(&self) {
        self.exporter.abort();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
        self.exporter.abort();
        self.opencost.abort();
    }
}

/// Starts the exporter and Prometheus scraping it; `None`, after saying so, where Debian's
/// `prometheus` is not installed.
pub async fn start(test: &str) -> Option<Running> {
    let Some(binary) = find() else {
        say(&format!(
            "{test}: skipped: needs Prometheus (Debian's `prometheus` package, which .ci/run installs)"
        ));
        return None;
    };
    let requests = Requests::default();
    let exporter = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port for the exporter");
    let exporter_addr = exporter.local_addr().expect("the exporter's address");
    let exporter = tokio::spawn(serve(exporter, requests.clone(), Requests::scrape));
    let opencost = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port for OpenCost's exporter");
    let opencost_addr = opencost
        .local_addr()
        .expect("OpenCost's exporter's address");
    let opencost = tokio::spawn(serve(opencost, requests.clone(), Requests::scrape_opencost));

    let data = envtest::temp_dir("cronscaler-prometheus-").expect("a directory for Prometheus");
    let config = data.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: proxy\n    honor_labels: true\n    static_configs:\n      - targets: ['{exporter_addr}']\n  - job_name: opencost\n    honor_labels: true\n    static_configs:\n      - targets: ['{opencost_addr}']\n"
        ),
    )
    .expect("Prometheus's configuration");
    let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let log = std::fs::File::create(data.path().join("prometheus.log")).expect("a log file");
    let prometheus = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            data.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting prometheus");
    let url = format!("http://{addr}");
    let ready = poll_until(Duration::from_secs(30), || async {
        get(addr, "/-/ready")
            .await?
            .starts_with("HTTP/1.1 200")
            .then_some(())
    })
    .await;
    assert!(
        ready.is_some(),
        "Prometheus at {url} not ready within 30 s: {}",
        std::fs::read_to_string(data.path().join("prometheus.log")).unwrap_or_default()
    );
    // Ready is not scraping yet, and on a busy machine the first scrape can come seconds later:
    // a test's look that Prometheus has been counting since its start needs that scrape in.
    let scraped = poll_until(Duration::from_secs(30), || async {
        get(addr, "/api/v1/query?query=up%7Bjob%3D%22proxy%22%7D%3D%3D1")
            .await?
            .contains("\"value\"")
            .then_some(())
    })
    .await;
    assert!(
        scraped.is_some(),
        "Prometheus at {url} did not scrape the exporter within 30 s"
    );
    Some(Running {
        url,
        opencost_url: format!("http://{opencost_addr}"),
        requests,
        prometheus: Some(prometheus),
        exporter,
        opencost,
        _data: data,
    })
}

/// The whole answer to a GET of `path`, head included; `None` where Prometheus did not answer.
async fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    Some(answer)
}

fn find() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("prometheus"))
        .find(|candidate| candidate.is_file())
}

/// Answers every request with one scrape's text.
async fn serve(listener: TcpListener, requests: Requests, scrape: fn(&Requests) -> String) {
    while let Ok((mut stream, _)) = listener.accept().await {
        let requests = requests.clone();
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut buffer = [0u8; 1024];
            while !head.windows(4).any(|window| window == b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let body = scrape(&requests);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        });
    }
}
