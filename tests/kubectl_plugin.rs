//! The binary installed as a kubectl plugin: a link named `kubectl-cronscaler` on PATH, run as
//! `kubectl cronscaler ...`, behaves as `cronscaler ...` and speaks of `kubectl cronscaler`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

/// A directory holding `kubectl-cronscaler`, a link to the binary as docs/commands.md installs it.
fn plugin_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("kubectl-cronscaler");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cronscaler"), &link).unwrap();
    (dir, link)
}

fn run(program: &Path, path: Option<&Path>, args: &[&str]) -> Output {
    let mut command = Command::new(program);
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CRONSCALER_") {
            command.env_remove(key);
        }
    }
    if let Some(dir) = path {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    command.output().unwrap()
}

const PLAN: [&str; 6] = [
    "plan",
    "-f",
    "examples/",
    "--from",
    "2026-11-20T00:00:00Z",
    "--for=1d",
];

#[test]
fn through_a_link_named_kubectl_cronscaler_it_plans_and_its_help_says_kubectl_cronscaler() {
    let (_dir, link) = plugin_dir();
    let help = run(&link, None, &["status", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(text.contains("Usage: kubectl cronscaler status"), "{text}");
    for flag in ["--namespace", "--context", "--kubeconfig"] {
        assert!(text.contains(flag), "{flag} in:\n{text}");
    }

    let direct = run(Path::new(env!("CARGO_BIN_EXE_cronscaler")), None, &PLAN);
    let linked = run(&link, None, &PLAN);
    let plan = String::from_utf8_lossy(&linked.stdout);
    assert!(linked.status.success(), "{plan}");
    assert!(plan.starts_with("LOCAL TIME"), "{plan}");
    assert_eq!(plan, String::from_utf8_lossy(&direct.stdout));
}

#[test]
fn kubectl_finds_and_runs_it_as_kubectl_cronscaler() {
    let Some(kubectl) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("kubectl"))
        .find(|path| path.is_file())
    else {
        eprintln!("kubectl_finds_and_runs_it_as_kubectl_cronscaler: skipped: no kubectl on PATH");
        return;
    };
    let (dir, _link) = plugin_dir();
    let listed = run(&kubectl, Some(dir.path()), &["plugin", "list"]);
    let list = String::from_utf8_lossy(&listed.stdout);
    assert!(list.contains("kubectl-cronscaler"), "{list}");

    let plugin_plan: Vec<&str> = ["cronscaler"].into_iter().chain(PLAN).collect();
    let output = run(&kubectl, Some(dir.path()), &plugin_plan);
    let plan = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{plan}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(plan.starts_with("LOCAL TIME"), "{plan}");
}
