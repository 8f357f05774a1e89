"""Helm's own Go SDK (PyPI's helm-python-sdk), driven by tests/support/helm.rs: one request as
JSON on stdin, one answer as JSON on stdout, {"ok": ...} or {"error": "..."}, where the error is
Helm's own message, as `helm` would print it."""

import json
import sys

import helm_python as helm


def main() -> None:
    request = json.load(sys.stdin)
    op = request["op"]
    chart = request.get("chart")
    values = request.get("values")
    release = request.get("release")
    namespace = request.get("namespace")
    if op == "lint":
        answer = helm.lint(chart, values, strict=True, namespace=namespace)
    elif op == "render":
        answer = helm.Chart.load(chart).render(
            values, name=release, namespace=namespace, is_install=True
        )
    elif op == "crds":
        answer = helm.Chart.load(chart).crds
    elif op == "package":
        answer = helm.package(chart, destination=request["destination"])
    elif op == "validate":
        helm.Chart.load(chart).validate_schema(values)
        answer = None
    else:
        config = helm.Config(kubeconfig_path=request["kubeconfig"], namespace=namespace)
        if op == "install":
            answer = config.install(
                chart, release, values, namespace=namespace, create_namespace=True, timeout=120
            )
        elif op == "upgrade":
            answer = config.upgrade(chart, release, values, namespace=namespace, timeout=120)
        elif op == "uninstall":
            answer = config.uninstall(release, timeout=120)
        else:
            raise ValueError(f"unknown op {op!r}")
    json.dump({"ok": answer}, sys.stdout, default=str)


if __name__ == "__main__":
    try:
        main()
    except helm.HelmError as error:
        json.dump({"error": str(error)}, sys.stdout)
