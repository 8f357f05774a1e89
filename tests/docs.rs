//! What README.md and docs/ show is true: every link leads to a page or heading that exists, and
//! every command in a shell block is run here as a user would type it (the offline ones always,
//! the rest against a real control plane), or is listed in [`NOT_RUN_HERE`] with the reason.
//! A command added to the documentation without a way to run it fails this test.

mod support;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace, events::v1::Event};
use kube::Api;
use support::{Scenario, envtest, eventually, say};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Shown, but not run by this test, and why. The build and test commands are what CI runs
/// around this very test; the benchmarks take minutes each and are run by hand for their figures.
const NOT_RUN_HERE: &[(&str, &str)] = &[
    (
        "cargo fmt --check && cargo clippy --all-targets --locked -- -D warnings && cargo test --locked",
        "CI's own command, which runs this test",
    ),
    (
        "cargo install --path . --locked",
        "a release build of minutes; the tests run the binary cargo built for them",
    ),
    (
        "kubectl -n kube-downscaler scale deployment kube-downscaler --replicas=0",
        "needs kube-downscaler installed",
    ),
    (
        "helm install cronscaler ./charts/cronscaler -n cronscaler --create-namespace",
        "no helm binary here: tests/helm/cluster.rs installs the chart with Helm's own SDK",
    ),
    (
        "helm upgrade cronscaler ./charts/cronscaler -n cronscaler -f my-values.yaml",
        "no helm binary here: tests/helm/cluster.rs upgrades the chart with Helm's own SDK",
    ),
    (
        "kubectl create token dev -n team-a --duration 8h",
        "a ServiceAccount of the reader's own; tests/e2e/console.rs signs in with such tokens",
    ),
    (
        "kubectl apply -k console/",
        "tests/helm/kustomize.rs renders it; tests/e2e/console.rs runs the console with its grants",
    ),
    (
        "kubectl -n cronscaler port-forward svc/cronscaler-console 8090:80",
        "no kubelet here to forward to a Pod",
    ),
    (
        "docker build -t ghcr.io/cronscaler/cronscaler:0.1.0 .",
        "needs a Docker engine",
    ),
    (
        "cargo run --release -p cronscaler-bench --bin timer_bench",
        "a benchmark, run by hand",
    ),
    (
        "MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 cargo run --release -p cronscaler-bench --bin load -- memory",
        "a benchmark, run by hand",
    ),
    (
        "cargo run --release -p cronscaler-bench --bin load -- qps --deployments 200 --qps 50",
        "a benchmark, run by hand",
    ),
    (
        "MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 cargo test --release --test e2e memory:: -- --ignored --nocapture",
        "a benchmark of minutes on a real API server, run by hand",
    ),
    (
        "cargo run --release -p cronscaler-bench --bin wake -- --requests 10000 --connections 100",
        "a benchmark, run by hand",
    ),
];

/// The pages in the order a reader meets them, which is the order their commands run in: the
/// install and uninstall of `operations.md` come last, as they delete the Foo CRD.
const PAGES: &[&str] = &[
    "README.md",
    "docs/commands.md",
    "docs/scheduling.md",
    "docs/migrating-from-kube-downscaler.md",
    "docs/wake-on-request.md",
    "docs/gitops.md",
    "docs/policies.md",
    "docs/reference.md",
    "docs/foo.md",
    "docs/design.md",
    "docs/operations.md",
];

#[derive(Debug, Clone)]
struct Shown {
    page: String,
    command: String,
}

/// The commands of every `sh` block, without their comments, in page order.
fn shown_commands() -> Vec<Shown> {
    let mut shown = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(Path::new(REPO).join(&page)).unwrap();
        let mut in_shell = false;
        for line in text.lines() {
            // Fences inside a list item are indented.
            if let Some(fence) = line.trim_start().strip_prefix("```") {
                in_shell = !in_shell && matches!(fence.trim(), "sh" | "bash" | "shell");
                continue;
            }
            if !in_shell {
                continue;
            }
            let command = match line.find("  #") {
                Some(comment) => &line[..comment],
                None => line,
            }
            .trim();
            if !command.is_empty() {
                shown.push(Shown {
                    page: page.clone(),
                    command: command.to_string(),
                });
            }
        }
    }
    shown
}

/// README.md and every page under docs/, those of [`PAGES`] first.
fn pages() -> Vec<String> {
    let mut pages: Vec<String> = PAGES.iter().map(|page| page.to_string()).collect();
    let mut others: Vec<String> = std::fs::read_dir(Path::new(REPO).join("docs"))
        .unwrap()
        .map(|entry| format!("docs/{}", entry.unwrap().file_name().to_string_lossy()))
        .filter(|page| page.ends_with(".md") && !pages.contains(page))
        .collect();
    others.sort();
    pages.extend(others);
    pages
}

fn is_offline(command: &str) -> bool {
    command.starts_with("cargo run -- plan -f ")
        || (command.starts_with("cronscaler plan -f examples/"))
        || command == "cronscaler crd"
}

fn not_run_here(command: &str) -> bool {
    NOT_RUN_HERE.iter().any(|(shown, _)| *shown == command)
}

/// A working directory like a clone of the repository (its manifests, examples and
/// kustomization), where files a command writes land in a temporary directory.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in ["examples", "manifests", "rbac", "kustomization.yaml"] {
        copy(&Path::new(REPO).join(entry), &dir.path().join(entry));
    }
    dir
}

/// A copy, not a link: kustomize refuses files reached through links.
fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

/// A directory on PATH where `cronscaler` is the binary under test, as `cargo install` puts it.
fn bin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_cronscaler"),
        dir.path().join("cronscaler"),
    )
    .unwrap();
    dir
}

/// `bash -c command`, with `cargo run --` standing for the binary cargo built for the tests.
fn shell(command: &str, dir: &Path, path: &str, env: &[(&str, &Path)]) -> Command {
    let command = command.replace("cargo run -- ", "cronscaler ");
    let mut shell = Command::new("bash");
    shell
        .args(["-euo", "pipefail", "-c", &command])
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CRONSCALER_") {
            shell.env_remove(key);
        }
    }
    for (key, value) in env {
        shell.env(key, value);
    }
    shell
}

fn path_with(dirs: &[&Path]) -> String {
    let mut all: Vec<PathBuf> = dirs.iter().map(|dir| dir.to_path_buf()).collect();
    all.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(all)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn succeeded(shown: &Shown, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}: `{}` failed ({}):\n{stdout}\n{}",
        shown.page,
        shown.command,
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn every_command_shown_is_run_by_this_test_or_says_why_not() {
    let shown = shown_commands();
    let commands: BTreeSet<&str> = shown.iter().map(|s| s.command.as_str()).collect();
    for (command, _) in NOT_RUN_HERE {
        assert!(
            commands.contains(command),
            "NOT_RUN_HERE lists `{command}`, which no page shows any more"
        );
    }
    assert!(
        shown
            .iter()
            .any(|s| s.page == "README.md" && is_offline(&s.command)),
        "README's first command runs offline"
    );
}

#[test]
fn the_offline_commands_run_as_shown() {
    let bin = bin_dir();
    let path = path_with(&[bin.path()]);
    let mut ran = 0;
    for shown in shown_commands().iter().filter(|s| is_offline(&s.command)) {
        let dir = workdir();
        let output = shell(&shown.command, dir.path(), &path, &[])
            .output()
            .unwrap();
        let stdout = succeeded(shown, &output);
        if shown.command.contains("> week.svg") {
            let svg = std::fs::read_to_string(dir.path().join("week.svg")).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        } else {
            assert!(
                stdout.contains("LOCAL TIME"),
                "{}:\n{stdout}",
                shown.command
            );
        }
        ran += 1;
    }
    assert!(ran >= 3, "README's and commands.md's plans of examples/");
}

/// Every link to a page of the repository leads to a file, and every `#anchor` to a heading of
/// that page.
#[test]
fn every_link_leads_somewhere() {
    let link = |text: &str| -> Vec<String> {
        let mut links = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            if let Some(end) = rest.find(')') {
                links.push(rest[..end].to_string());
            }
        }
        links
    };
    for page in pages() {
        let text = std::fs::read_to_string(Path::new(REPO).join(&page)).unwrap();
        let base = Path::new(&page).parent().unwrap_or(Path::new(""));
        for target in link(&text) {
            if target.starts_with("http") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if file.is_empty() {
                Path::new(REPO).join(&page)
            } else {
                Path::new(REPO).join(base).join(file)
            };
            assert!(file.exists(), "{page}: link to {target}: no such file");
            if !anchor.is_empty() {
                let linked = std::fs::read_to_string(&file).unwrap();
                let anchors: Vec<String> = linked
                    .lines()
                    .filter_map(|line| line.strip_prefix('#'))
                    .map(|heading| github_anchor(heading.trim_start_matches('#').trim()))
                    .collect();
                assert!(
                    anchors.contains(&anchor.to_string()),
                    "{page}: link to {target}: no such heading in {anchors:?}"
                );
            }
        }
    }
}

/// The anchor GitHub gives a heading: lower case, spaces to dashes, punctuation dropped.
fn github_anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The documented commands that need a cluster, in page order, on a control plane of their own
/// (they create `staging` and install the controller's manifests), as a cluster admin with
/// kubectl. The controller the README starts in the background is stopped before the pages that
/// follow, as `operations.md` says to before `restore`.
#[tokio::test]
async fn the_cluster_commands_run_as_shown() {
    if which("kubectl").is_none() {
        say("the_cluster_commands_run_as_shown: skipped: no kubectl on PATH");
        return;
    }
    let Some(scenario) = Scenario::own("docs", envtest::Options::default()).await else {
        return;
    };
    let dir = workdir();
    let home = tempfile::tempdir().unwrap();
    let local_bin = home.path().join(".local/bin");
    std::fs::create_dir_all(&local_bin).unwrap();
    let bin = bin_dir();
    let path = path_with(&[bin.path(), &local_bin]);
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::write(&kubeconfig, with_prod_context(&scenario)).unwrap();
    let env = [("KUBECONFIG", kubeconfig.as_path()), ("HOME", home.path())];

    let mut controller = None;
    let mut page_of_controller = None;
    for shown in shown_commands()
        .iter()
        .filter(|s| !is_offline(&s.command) && !not_run_here(&s.command))
    {
        if page_of_controller
            .as_ref()
            .is_some_and(|page| *page != shown.page)
            && let Some(mut child) = controller.take()
        {
            stop(&mut child);
        }
        if let Some(background) = shown.command.strip_suffix('&') {
            let port = envtest::free_port().to_string();
            let command = format!("exec {}", background.replace("8080", &port));
            let mut shell = shell(&command, dir.path(), &path, &env);
            shell.stdout(Stdio::null()).stderr(Stdio::null());
            let mut child = envtest::spawn(shell).unwrap();
            wait_ready(&port, &mut child).await;
            controller = Some(child);
            page_of_controller = Some(shown.page.clone());
            continue;
        }
        let output = shell(&shown.command, dir.path(), &path, &env)
            .output()
            .unwrap();
        let stdout = succeeded(shown, &output);
        check_what_readme_promises(&scenario, shown, &stdout).await;
    }
    if let Some(mut child) = controller.take() {
        stop(&mut child);
    }
    scenario.finish().await;
}

/// Beyond exit codes: what the README's walk says a user sees.
async fn check_what_readme_promises(scenario: &Scenario, shown: &Shown, stdout: &str) {
    if shown.page != "README.md" {
        return;
    }
    let command = shown.command.as_str();
    if command.starts_with("cronscaler plan -n staging") {
        assert!(stdout.contains("staging"), "{command}:\n{stdout}");
    }
    if command.starts_with("cronscaler status -n staging") {
        assert!(stdout.contains("web"), "{command}:\n{stdout}");
    }
    if command.starts_with("cronscaler wake -n staging") {
        let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
        let staging = namespaces.get("staging").await.unwrap();
        assert!(
            staging
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key("cronscaler.dev/awake-until"),
            "{command} writes the override on the Namespace"
        );
        let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), "staging");
        eventually("web awake at 2 replicas", Duration::from_secs(20), || {
            let deployments = deployments.clone();
            async move {
                let web = deployments.get("web").await.ok()?;
                (web.spec?.replicas == Some(2)).then_some(())
            }
        })
        .await;
    }
    if command.starts_with("kubectl events --for namespace/staging") {
        let events: Api<Event> = Api::namespaced(scenario.client.clone(), "default");
        let about_staging = events.list(&Default::default()).await.unwrap();
        for event in about_staging.items.iter().filter(|event| {
            event.regarding.as_ref().is_some_and(|regarding| {
                regarding.kind.as_deref() == Some("Namespace")
                    && regarding.name.as_deref() == Some("staging")
            })
        }) {
            let reason = event.reason.as_deref().unwrap_or_default();
            assert!(
                stdout.contains(reason),
                "{command} shows {reason}:\n{stdout}"
            );
        }
    }
    if command.starts_with("kubectl events -n staging") && stdout.contains("OnDemand") {
        assert!(stdout.contains("Deployment/web"), "{command}:\n{stdout}");
    }
}

/// The scenario's admin kubeconfig with a second context `prod`, which commands.md's example
/// of `--context` names.
fn with_prod_context(scenario: &Scenario) -> String {
    let admin = std::fs::read_to_string(scenario.plane().admin_kubeconfig()).unwrap();
    let mut config: serde_norway::Value = serde_norway::from_str(&admin).unwrap();
    let contexts = config["contexts"].as_sequence_mut().unwrap();
    let mut prod = contexts[0].clone();
    prod["name"] = "prod".into();
    contexts.push(prod);
    serde_norway::to_string(&config).unwrap()
}

async fn wait_ready(port: &str, child: &mut std::process::Child) {
    eventually(
        "the README's controller ready",
        Duration::from_secs(30),
        || {
            let exited = child.try_wait().ok().flatten();
            let address = format!("127.0.0.1:{port}");
            async move {
                assert!(exited.is_none(), "cronscaler run exited: {exited:?}");
                let mut stream = tokio::net::TcpStream::connect(&address).await.ok()?;
                let request = format!("GET /readyz HTTP/1.0\r\nHost: {address}\r\n\r\n");
                stream.write_all(request.as_bytes()).await.ok()?;
                let mut response = String::new();
                stream.read_to_string(&mut response).await.ok()?;
                response
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|code| code == "200")
                    .then_some(())
            }
        },
    )
    .await;
}

fn stop(child: &mut std::process::Child) {
    envtest::terminate(child, Duration::from_secs(5));
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}
