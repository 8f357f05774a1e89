//! `cronscaler plan` as a user runs it: the binary, on manifests, compared with golden output.
//! Regenerate a golden file after an intended change with `CRONSCALER_BLESS=1 cargo test --test plan`.

use std::{path::Path, process::Command};

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
    let (stdout, stderr, code) = plan(&[
        "-f",
        "examples",
        "--from",
        "2026-11-20T00:00:00Z",
        "--for",
        "7d",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_golden(&stdout, "plan-examples.txt");
}

#[test]
fn the_plan_is_available_as_json() {
    let (stdout, stderr, code) = plan(&[
        "-f",
        "examples",
        "--from",
        "2026-11-20T00:00:00Z",
        "--for",
        "1d",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_golden(&stdout, "plan-examples-1d.json");
    let parsed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(parsed["invalid"].as_array().is_some_and(Vec::is_empty));
}

#[test]
fn invalid_annotations_are_listed_with_reasons_and_fail_the_exit_code() {
    let (stdout, stderr, code) = plan(&[
        "-f",
        "tests/fixtures/plan/invalid.yaml",
        "--from",
        "2026-11-20T00:00:00Z",
        "--for",
        "1d",
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_golden(&stdout, "plan-invalid.txt");
}

#[test]
fn a_missing_manifest_is_named() {
    let (_, stderr, code) = plan(&["-f", "no/such/file.yaml"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no/such/file.yaml"), "{stderr}");
}
