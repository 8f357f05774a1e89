//! `cronscaler plan` as a user runs it: the binary, on manifests, compared with golden output.
//! Regenerate a golden file after an intended change with `CRONSCALER_BLESS=1 cargo test --test plan`.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

fn plan(args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_cronscaler"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("plan")
        .args(args)
        .output()
        .expect("the binary runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// `plan -f <file> --from 2026-11-20T00:00:00Z --for <span>` and `more`: the window the golden
/// files are of.
fn plan_window(file: &str, span: &str, more: &[&str]) -> (String, String, i32) {
    plan(
        &[
            &["-f", file, "--from", "2026-11-20T00:00:00Z", "--for", span],
            more,
        ]
        .concat(),
    )
}

/// What a `plan` said, which must have succeeded and printed what the golden file `golden`
/// holds: what it printed.
fn plan_as_golden((stdout, stderr, code): (String, String, i32), golden: &str) -> String {
    assert_eq!(code, 0, "{stderr}");
    assert_golden(&stdout, golden);
    stdout
}

fn assert_golden(actual: &str, golden: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(golden);
    if std::env::var("CRONSCALER_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "output differs from {}:\n{actual}",
        path.display()
    );
}

#[test]
fn the_examples_plan_a_week_of_transitions() {
    plan_as_golden(plan_window("examples", "7d", &[]), "plan-examples.txt");
}

#[test]
fn the_plan_is_available_as_json() {
    let stdout = plan_as_golden(
        plan_window("examples", "1d", &["-o", "json"]),
        "plan-examples-1d.json",
    );
    let parsed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(parsed["invalid"].as_array().is_some_and(Vec::is_empty));
}

#[test]
fn invalid_annotations_are_listed_with_reasons_and_fail_the_exit_code() {
    let (stdout, stderr, code) = plan_window("tests/fixtures/plan/invalid.yaml", "1d", &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_golden(&stdout, "plan-invalid.txt");
}

#[test]
fn go_kube_downscalers_forms_plan_under_its_flag() {
    let args = [
        "-f",
        "tests/fixtures/plan/go-kube-downscaler.yaml",
        "--kube-downscaler-annotations",
        "--from",
        "2026-11-24T00:00:00Z",
    ];
    let (stdout, stderr, code) = plan(&[&args[..], &["--for", "7d"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_golden(&stdout, "plan-go-kube-downscaler.txt");
    // `downscaler/downtime: "from 2026-11-26T08:00:00Z"`: awake (a catch-up that changes
    // nothing), one scale-down at that instant, and nothing in the year after.
    let (json, stderr, code) = plan(&[&args[..], &["--for", "366d", "-o", "json"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let retired: Vec<_> = parsed["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|transition| transition["name"] == "retired")
        .map(|transition| {
            (
                transition["at"].as_str().unwrap(),
                transition["action"].as_str().unwrap(),
                transition["from"].as_i64().unwrap(),
                transition["to"].as_i64().unwrap(),
                transition["catchUp"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        retired,
        [
            ("2026-11-24T00:00:00Z", "up", 3, 3, true),
            ("2026-11-26T08:00:00Z", "down", 3, 0, false),
        ]
    );
    // Without the flag, kube-downscaler's annotations are not a schedule.
    let (stdout, _, code) = plan(&args[..2]);
    assert_eq!(code, 0);
    assert!(!stdout.contains("retired"), "{stdout}");
}

#[test]
fn a_missing_manifest_is_named() {
    let (_, stderr, code) = plan(&["-f", "no/such/file.yaml"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no/such/file.yaml"), "{stderr}");
}

#[test]
fn a_list_from_kubectl_get_is_planned_item_by_item() {
    let (stdout, stderr, code) =
        plan_window("tests/fixtures/plan/kubectl-get-deploy.yaml", "7d", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "", "both items are Deployments");
    assert_golden(&stdout, "plan-kubectl-list.txt");
    let (json_stdout, stderr, code) =
        plan_window("tests/fixtures/plan/kubectl-get-deploy.json", "7d", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        json_stdout, stdout,
        "`-o json` of the same List plans the same"
    );
}

#[test]
fn what_is_skipped_is_said_on_stderr_and_stdout_stays_the_plan() {
    let expected = [
        "skipped tests/fixtures/plan/skipped.yaml: document 1: Service staging/web: not of a kind cronscaler puts to sleep",
        "skipped tests/fixtures/plan/skipped.yaml: document 2: ConfigMap settings: not of a kind cronscaler puts to sleep",
        "skipped tests/fixtures/plan/skipped.yaml: document 3: orphan: no kind",
        "skipped tests/fixtures/plan/skipped.yaml: document 4, items[0]: Deployment: no metadata.name",
        "skipped tests/fixtures/plan/skipped.yaml: document 4, items[1]: List: a List inside a List is not expanded",
        "skipped tests/fixtures/plan/skipped.yaml: document 4, items[2]: kindless: no kind",
        "skipped tests/fixtures/plan/skipped.yaml: document 5: not an object (a mapping with apiVersion and kind)",
    ];
    let skipped = "tests/fixtures/plan/skipped.yaml";
    let (stdout, stderr, code) = plan_window(skipped, "1d", &[]);
    assert_eq!(code, 0, "skipping is not an error: {stderr}");
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected);
    assert_golden(&stdout, "plan-skipped.txt");

    let (stdout, stderr, code) = plan_window(skipped, "1d", &["-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected);
    let parsed: serde_json::Value =
        serde_json::from_str(&stdout).expect("standard output is the JSON plan alone");
    assert_eq!(parsed["transitions"][0]["name"], "batch");
}

#[test]
fn a_file_that_is_not_yaml_is_an_error_naming_it() {
    let (stdout, stderr, code) = plan(&["-f", "tests/fixtures/plan/not-yaml.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("tests/fixtures/plan/not-yaml.yaml: document 1: "),
        "{stderr}"
    );
}

#[test]
fn a_cron_firing_every_second_is_summarised_and_prints_at_once() {
    let started = Instant::now();
    let (stdout, stderr, code) = plan(&[
        "-f",
        "tests/fixtures/plan/every-second.yaml",
        "-f",
        "examples/staging-web.yaml",
        "--from",
        "2026-11-20T00:00:00Z",
        "--for",
        "7d",
    ]);
    let took = started.elapsed();
    assert_eq!(code, 0, "{stderr}");
    assert_golden(&stdout, "plan-every-second.txt");
    // About 40 ms unoptimised, process start included; stepping through the 604,801 firings
    // took minutes. The bound leaves room for a busy machine.
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn summaries_are_a_list_of_their_own_in_json() {
    plan_as_golden(
        plan_window(
            "tests/fixtures/plan/every-second.yaml",
            "1d",
            &["-o", "json"],
        ),
        "plan-every-second-1d.json",
    );
}

/// The savings table's TOTAL line, as its cells.
fn total_of(table: &str) -> Vec<&str> {
    let total = table.lines().find(|line| line.starts_with("TOTAL"));
    total
        .unwrap_or_else(|| panic!("no TOTAL in {table}"))
        .split_whitespace()
        .collect()
}

#[test]
fn savings_end_the_table_and_prices_add_money_only_when_given() {
    let (table, stderr, code) = plan_window("examples", "7d", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        total_of(&table),
        [
            "TOTAL", "1,450.50", "2,371.00", "1,025.25", "3,511.25", "113.00", "226"
        ]
    );
    assert!(!table.contains("COST"));
    assert!(
        table.trim_end().ends_with(
            "no prices: give them to see the savings in money, e.g. --prices \
             cpu=0.031,memory=0.0042,gpu=2.48,currency=USD (per core-, GiB- and GPU-hour)"
        ),
        "{table}"
    );
    let prices = ["--prices", "cpu=0.04,memory=0.005,currency=USD"];
    let (table, _, _) = plan_window("examples", "7d", &prices);
    assert_eq!(total_of(&table).last(), Some(&"$58.58"), "{table}");
    assert!(
        table.contains("not in COST: no price for nvidia.com/gpu (--prices nvidia.com/gpu=...)"),
        "{table}"
    );

    let (json, _, _) = plan_window("examples", "7d", &["-o", "json"]);
    assert!(!json.contains("\"cost\""), "no money without prices");
    let (json, _, _) = plan_window("examples", "7d", &[&prices[..], &["-o", "json"]].concat());
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let savings = &parsed["savings"];
    let total = &savings["total"];
    assert_eq!(total["hoursAsleep"], 1450.5);
    assert_eq!(total["skippedRuns"], 226);
    assert_eq!(total["gpuHoursWithheld"], 113.0);
    assert_eq!(total["extendedHoursWithheld"]["nvidia.com/gpu"], 113.0);
    assert_eq!(total["cost"], 58.58);
    assert_eq!(savings["currency"], "USD");
    assert_eq!(savings["unpriced"], serde_json::json!(["nvidia.com/gpu"]));
    let web = (savings["objects"].as_array().into_iter().flatten())
        .find(|object| object["name"] == "web")
        .unwrap();
    assert_eq!(
        (&web["secondsAsleep"], &web["replicaHoursWithheld"]),
        (&(103 * 3600).into(), &309.0.into())
    );
}

#[test]
fn an_invalid_object_is_said_on_stderr_beside_the_chart() {
    let (svg, stderr, code) = plan_window("tests/fixtures/plan/invalid.yaml", "1d", &["-o", "svg"]);
    assert_eq!(code, 1);
    assert!(svg.starts_with("<svg "), "{svg}");
    assert!(
        stderr.contains("invalid staging/Deployment/never-fires, not drawn: "),
        "{stderr}"
    );
}

#[test]
fn a_reader_that_stops_early_gets_no_panic() {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronscaler"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["plan", "-f", "examples/", "--for", "366d", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut head = [0; 1024];
    child
        .stdout
        .take()
        .expect("its standard output")
        .read_exact(&mut head)
        .expect("the start of the plan");
    // `| head -c 1024`: the pipe is closed here, with megabytes of plan still to come.
    let output = child.wait_with_output().expect("it ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}
