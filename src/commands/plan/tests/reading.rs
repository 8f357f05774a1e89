//! Reading manifests: other kinds skipped and broken documents named, lists from `kubectl get`
//! read item by item, and what a directory did not read.

use super::*;

#[test]
fn other_kinds_are_skipped_and_broken_documents_named() {
    let manifests = parse_manifests(
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: staging}\n---\n",
        "svc.yaml",
    )
    .unwrap();
    assert!(manifests.objects.is_empty());
    assert_eq!(
        skipped(&manifests),
        ["svc.yaml: document 1: Service staging/web: not of a kind cronscaler puts to sleep"]
    );
    let error = parse_manifests("kind: Deployment\nspec: [not, a, spec]\n", "broken.yaml")
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("broken.yaml: document 1: "), "{error}");
}

#[test]
fn a_list_from_kubectl_get_is_read_item_by_item() {
    for (text, path) in [
        (
            include_str!("../../../../tests/fixtures/plan/kubectl-get-deploy.yaml"),
            "deploy.yaml",
        ),
        (
            include_str!("../../../../tests/fixtures/plan/kubectl-get-deploy.json"),
            "deploy.json",
        ),
    ] {
        let manifests = parse_manifests(text, path).unwrap();
        let names: Vec<_> = manifests
            .objects
            .iter()
            .map(|object| (object.target.to_string(), object.observed.replicas))
            .collect();
        assert_eq!(
            names,
            [
                ("Deployment staging/web".to_string(), 3),
                ("Deployment staging/api".to_string(), 2)
            ],
            "{path}"
        );
        assert!(skipped(&manifests).is_empty(), "{path}");
        let plan = simulate(&manifests.objects, utc(9, 0), utc(9, 12), Tz::UTC);
        let rows: Vec<_> = plan
            .transitions
            .iter()
            .map(|t| (t.name.as_str(), t.action.as_str(), t.from, t.to))
            .collect();
        // Monday 2026-03-09: down at 20:00 CET on Friday is caught up on, up at 07:00 CET.
        assert_eq!(rows, [("web", "down", 3, 0), ("web", "up", 0, 3)], "{path}");
    }
}

#[test]
fn typed_lists_are_expanded_and_their_items_need_a_kind() {
    let text = "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a, namespace: n}\n- metadata: {name: b, namespace: n}\n";
    let manifests = parse_manifests(text, "raw.yaml").unwrap();
    assert_eq!(manifests.objects.len(), 1);
    assert_eq!(
        skipped(&manifests),
        ["raw.yaml: document 1, items[1]: n/b: no kind"]
    );
}

#[test]
fn what_is_skipped_is_named_with_its_place_and_reason() {
    let manifests = parse_manifests(
        include_str!("../../../../tests/fixtures/plan/skipped.yaml"),
        "skipped.yaml",
    )
    .unwrap();
    assert_eq!(
        skipped(&manifests),
        [
            "skipped.yaml: document 1: Service staging/web: not of a kind cronscaler puts to sleep",
            "skipped.yaml: document 2: ConfigMap settings: not of a kind cronscaler puts to sleep",
            "skipped.yaml: document 3: orphan: no kind",
            "skipped.yaml: document 4, items[0]: Deployment: no metadata.name",
            "skipped.yaml: document 4, items[1]: List: a List inside a List is not expanded",
            "skipped.yaml: document 4, items[2]: kindless: no kind",
            "skipped.yaml: document 5: not an object (a mapping with apiVersion and kind)",
        ]
    );
    let names: Vec<_> = manifests
        .objects
        .iter()
        .map(|object| object.target.to_string())
        .collect();
    assert_eq!(names, ["Deployment staging/batch"]);
}

#[test]
fn a_broken_item_of_a_list_is_an_error_naming_it() {
    let error = parse_manifests(
        "kind: List\nitems:\n- kind: Foo\n  metadata: {name: x}\n  spec: 7\n",
        "list.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("list.yaml: document 1, items[0]: "),
        "{error}"
    );
}

#[test]
fn a_directory_says_what_it_did_not_read() {
    let dir = std::env::temp_dir().join(format!("cronscaler-plan-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("README.md"), "# notes\n").unwrap();
    std::fs::write(
        dir.join("web.yaml"),
        deployment("web", 1, "    cronscaler.dev/scale-down: \"0 20 * * *\""),
    )
    .unwrap();
    let manifests = read_manifests(&[&dir], Reading::default());
    std::fs::remove_dir_all(&dir).unwrap();
    let manifests = manifests.unwrap();
    assert_eq!(manifests.objects.len(), 1);
    let dir = dir.display();
    assert_eq!(
        skipped(&manifests),
        [
            format!("{dir}/README.md: not a .yaml, .yml or .json file"),
            format!("{dir}/nested: a directory; directories are read one level deep"),
        ]
    );
}
