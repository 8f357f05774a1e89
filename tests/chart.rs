//! The Helm chart's files, without Helm: its version is Cargo's, every value is explained and
//! listed in docs/operations.md, the kustomize install's CRDs and rules it carries are current
//! copies (both regenerated with `CRONSCALER_BLESS=1`), and its alerts are valid rules, each
//! explained in the docs.

mod support;

use std::{fs, path::Path, process::Command};

use support::say;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const CHART: &str = "charts/cronscaler";
const TABLE_START: &str =
    "<!-- values: generated from charts/cronscaler/values.yaml by tests/chart.rs -->";
const TABLE_END: &str = "<!-- end of values -->";

fn read(path: &str) -> String {
    fs::read_to_string(Path::new(REPO).join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// One key of values.yaml: its dotted path, its value as written (`None` for a section whose
/// keys follow on their own lines), and the comment above it.
#[derive(Debug)]
struct Key {
    path: String,
    value: Option<String>,
    comment: String,
}

/// The keys of values.yaml in order. A comment belongs to the key right under it; a blank line
/// ends it (the file's own header is not a key's).
fn keys(text: &str) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut comment: Vec<String> = Vec::new();
    let mut parents: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() {
            comment.clear();
        } else if let Some(text) = trimmed.strip_prefix('#') {
            comment.push(text.trim().to_string());
        } else if let Some((name, value)) = trimmed.split_once(':') {
            parents.retain(|(depth, _)| *depth < indent);
            let path = parents
                .iter()
                .map(|(_, name)| name.as_str())
                .chain([name])
                .collect::<Vec<_>>()
                .join(".");
            let value = value.trim();
            if value.is_empty() {
                parents.push((indent, name.to_string()));
            }
            keys.push(Key {
                path,
                value: (!value.is_empty()).then(|| value.to_string()),
                comment: comment.join(" "),
            });
            comment.clear();
        } else {
            panic!("values.yaml: a line this reader does not know: {line:?}");
        }
    }
    keys
}

/// The table of docs/operations.md: every value, its default and what it does.
fn table(keys: &[Key]) -> String {
    let mut table = String::from("| value | default | what it does |\n|---|---|---|\n");
    for key in keys {
        if let Some(value) = &key.value {
            table.push_str(&format!(
                "| `{}` | `{}` | {} |\n",
                key.path,
                value,
                key.comment.replace('|', "\\|")
            ));
        }
    }
    table
}

#[test]
fn the_chart_is_the_version_cargo_builds() {
    let chart = read(&format!("{CHART}/Chart.yaml"));
    let app_version = chart
        .lines()
        .find_map(|line| line.strip_prefix("appVersion:"))
        .map(|version| version.trim().trim_matches('"'))
        .expect("Chart.yaml has an appVersion");
    assert_eq!(app_version, env!("CARGO_PKG_VERSION"));
}

#[test]
fn every_value_is_explained_and_listed_in_the_operations_guide() {
    let keys = keys(&read(&format!("{CHART}/values.yaml")));
    let unexplained: Vec<&str> = keys
        .iter()
        .filter(|key| key.comment.is_empty())
        .map(|key| key.path.as_str())
        .collect();
    assert_eq!(unexplained, Vec::<&str>::new(), "values without a comment");
    assert!(keys.len() > 40, "values.yaml read as {} keys", keys.len());

    let page = "docs/operations.md";
    let text = read(page);
    let start = text.find(TABLE_START).expect("the table's start marker") + TABLE_START.len();
    let end = text.find(TABLE_END).expect("the table's end marker");
    let current = format!("\n{}", table(&keys));
    if std::env::var_os("CRONSCALER_BLESS").is_some() {
        let blessed = format!("{}{current}{}", &text[..start], &text[end..]);
        fs::write(Path::new(REPO).join(page), blessed).expect("writing docs/operations.md");
        return;
    }
    assert_eq!(
        &text[start..end],
        current,
        "{page}'s table of values is stale: regenerate it with \
         `CRONSCALER_BLESS=1 cargo test --test chart`"
    );
}

/// The files the chart carries from the kustomize install, and their sources: the CRDs, and
/// the manifests whose rules its templates read. Copies, not links: Flux and Rancher skip links
/// in a Git source, so a chart installed straight from this repository would lack them.
fn carried() -> Vec<(String, String)> {
    let mut carried: Vec<(String, String)> = [
        ("crds/foos.yaml", "manifests/01-crd.yaml"),
        ("crds/policies.yaml", "manifests/04-policy-crds.yaml"),
        (
            "crds/wake-requests.yaml",
            "manifests/06-wake-request-crd.yaml",
        ),
        (
            "crds/override-requests.yaml",
            "manifests/09-override-request-crd.yaml",
        ),
        ("files/rbac/cluster-role.yaml", "rbac/cluster-role.yaml"),
        ("files/rbac/lease-role.yaml", "rbac/lease-role.yaml"),
        ("files/rbac/wake-backend.yaml", "rbac/wake-backend.yaml"),
        ("files/rbac/wake-slices.yaml", "rbac/wake-slices.yaml"),
        ("files/rbac/console.yaml", "console/rbac.yaml"),
        (
            "files/rbac/aggregated-roles.yaml",
            "rbac/aggregated-roles.yaml",
        ),
        (
            "files/namespaced-role.yaml",
            "manifests/namespaced/role.yaml",
        ),
    ]
    .iter()
    .map(|(copy, source)| (copy.to_string(), source.to_string()))
    .collect();
    let optional = Path::new(REPO).join("rbac/optional");
    let mut names: Vec<String> = fs::read_dir(&optional)
        .expect("rbac/optional/")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    names.sort();
    carried.extend(names.into_iter().map(|name| {
        (
            format!("files/rbac/optional/{name}"),
            format!("rbac/optional/{name}"),
        )
    }));
    carried
}

/// Every file below `dir` of the chart, relative to the chart.
fn chart_files(dir: &str) -> Vec<String> {
    let root = Path::new(REPO).join(CHART);
    let mut files = Vec::new();
    let mut pending = vec![root.join(dir)];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(&root) {
                files.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_chart_carries_current_copies_of_the_kustomize_crds_and_rules() {
    let carried = carried();
    let bless = std::env::var_os("CRONSCALER_BLESS").is_some();
    let mut stale = Vec::new();
    for (copy, source) in &carried {
        let path = Path::new(REPO).join(CHART).join(copy);
        let is_link = fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink());
        if !is_link && fs::read(&path).ok() == fs::read(Path::new(REPO).join(source)).ok() {
            continue;
        }
        if bless {
            let _ = fs::remove_file(&path);
            fs::create_dir_all(path.parent().expect("a directory")).expect("the chart's directory");
            fs::copy(Path::new(REPO).join(source), &path).expect("copying into the chart");
        } else {
            stale.push(format!("{CHART}/{copy} (of {source})"));
        }
    }
    assert_eq!(
        stale,
        Vec::<String>::new(),
        "edit the sources, then refresh the chart's copies with \
         `CRONSCALER_BLESS=1 cargo test --test chart`"
    );
    let expected: Vec<&str> = carried.iter().map(|(copy, _)| copy.as_str()).collect();
    let present: Vec<String> = chart_files("crds")
        .into_iter()
        .chain(chart_files("files"))
        .filter(|file| file != "files/alerts.yaml")
        .collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(
        present, expected_sorted,
        "a copy in the chart without its source"
    );
}

#[test]
fn the_alerts_are_valid_rules_and_each_is_explained_in_the_operations_guide() {
    let rules = format!("{CHART}/files/alerts.yaml");
    let alerts: Vec<String> = read(&rules)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- alert:"))
        .map(|name| name.trim().to_string())
        .collect();
    assert!(alerts.len() >= 8, "{rules}: {alerts:?}");
    let guide = read("docs/operations.md");
    let section = guide
        .split("## Alerts worth having")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/operations.md has its alerts");
    for alert in &alerts {
        assert!(
            section.contains(&format!("`{alert}`")),
            "{alert} is not explained"
        );
    }
    match Command::new("promtool")
        .args(["check", "rules"])
        .arg(Path::new(REPO).join(&rules))
        .output()
    {
        Ok(output) => assert!(
            output.status.success(),
            "promtool check rules {rules}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => say(&format!(
            "the alerts' syntax: skipped: needs promtool (Debian's `prometheus` package, which \
             .ci/run installs): {error}"
        )),
    }
}
