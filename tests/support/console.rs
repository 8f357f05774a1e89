//! What the self-service tests share: people bound to the built-in roles, their requests and
//! Namespaces as an admin reads them, and the web console (`cronscaler console`) started as its
//! install's ServiceAccount and spoken to as a browser would.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::Path,
};

use k8s_openapi::api::{
    authentication::v1::TokenRequest,
    core::v1::{Namespace, ServiceAccount},
    rbac::v1::RoleBinding,
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams},
};
use serde_json::json;

use super::{
    Controller, Scenario,
    crds::install_crd,
    envtest,
    wake::{Answer, LOOPBACK, exchange},
};

/// Binds the subject `subject` (`{"kind": "User", "name": ...}` or a ServiceAccount) to the
/// built-in ClusterRole `role` in `namespace`.
pub async fn bind(scenario: &Scenario, subject: serde_json::Value, role: &str, namespace: &str) {
    let name = format!("{}-{role}", subject["name"].as_str().unwrap_or("subject"));
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [subject],
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(scenario.client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap_or_else(|error| panic!("binding {name} in {namespace}: {error}"));
}

/// A user, as a RoleBinding names them.
pub fn user(name: &str) -> serde_json::Value {
    json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name })
}

/// A ServiceAccount `name` made in `namespace`, as a RoleBinding names it, and a token of it
/// (`kubectl create token`).
pub async fn service_account(
    scenario: &Scenario,
    namespace: &str,
    name: &str,
) -> (serde_json::Value, String) {
    let accounts: Api<ServiceAccount> = Api::namespaced(scenario.client.clone(), namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({ "metadata": { "name": name } })).expect("an account");
    accounts
        .create(&PostParams::default(), &account)
        .await
        .unwrap_or_else(|error| panic!("creating ServiceAccount {namespace}/{name}: {error}"));
    let request: TokenRequest =
        serde_json::from_value(json!({ "spec": { "audiences": [], "expirationSeconds": 3600 } }))
            .expect("a TokenRequest");
    let answer: Result<TokenRequest, _> = accounts
        .create_subresource("token", name, &PostParams::default(), &request)
        .await;
    let token = answer
        .ok()
        .and_then(|answer| answer.status)
        .map(|status| status.token)
        .unwrap_or_else(|| panic!("a token of {namespace}/{name}"));
    let subject = json!({ "kind": "ServiceAccount", "name": name, "namespace": namespace });
    (subject, token)
}

fn override_requests() -> (GroupVersionKind, ApiResource) {
    let gvk = GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "OverrideRequest");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "overriderequests");
    (gvk, resource)
}

/// Installs the `OverrideRequest` CRD and the aggregated roles that give `edit` and `view`
/// their rules of it.
pub async fn install_self_service(scenario: &Scenario) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (gvk, _) = override_requests();
    let crd = repo.join("manifests/09-override-request-crd.yaml");
    install_crd(&scenario.client, &crd, &gvk).await;
    envtest::apply_file(&scenario.client, &repo.join("rbac/aggregated-roles.yaml"))
        .await
        .expect("the aggregated roles");
}

/// A Namespace `name` annotated with `schedule`, with a Deployment `web` of 2 replicas.
pub async fn team(scenario: &Scenario, name: &str, schedule: serde_json::Value) {
    super::create_namespace(&scenario.client, name).await;
    super::annotate_namespace(&scenario.client, name, schedule).await;
    super::create_deployment(&scenario.client, name, "web", 2).await;
}

/// Namespaces `teams`, each asleep all the time with a Deployment `web` of 2 replicas.
pub async fn teams_asleep(scenario: &Scenario, teams: &[&str]) {
    for name in teams {
        let asleep = json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00" });
        team(scenario, name, asleep).await;
    }
}

/// The `OverrideRequest`s of `namespace`, as an admin lists them.
pub async fn requests_in(scenario: &Scenario, namespace: &str) -> Vec<DynamicObject> {
    let (_, resource) = override_requests();
    Api::<DynamicObject>::namespaced_with(scenario.client.clone(), namespace, &resource)
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
}

/// `OverrideRequest`s of `namespace` as `client` reaches them.
pub fn requests_api(client: kube::Client, namespace: &str) -> Api<DynamicObject> {
    let (_, resource) = override_requests();
    Api::namespaced_with(client, namespace, &resource)
}

/// The annotations of the Namespace `name`, as an admin reads them.
pub async fn annotations_of(scenario: &Scenario, name: &str) -> BTreeMap<String, String> {
    Api::<Namespace>::all(scenario.client.clone())
        .get(name)
        .await
        .expect("the Namespace")
        .metadata
        .annotations
        .unwrap_or_default()
}

/// Starts `cronscaler console` as its install's ServiceAccount (`console/rbac.yaml`, applied
/// here), on a port of its own, with `flags`; ready once it answers.
pub async fn start_console(scenario: &Scenario, flags: &[&str]) -> (Controller, SocketAddr) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    envtest::apply_file(&scenario.client, &repo.join("console/rbac.yaml"))
        .await
        .expect("the console's RBAC");
    let kubeconfig = (scenario.plane())
        .sign_in_as("cronscaler-console")
        .await
        .expect("the console's ServiceAccount");
    let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let listen = addr.to_string();
    let mut args = vec!["console", "--console-addr", &listen];
    args.extend_from_slice(flags);
    let mut console = scenario.spawn_at(&kubeconfig, "console", &args, addr);
    console.wait_ready().await;
    (console, addr)
}

/// A visitor of the console: a browser's cookie jar of one cookie, from one address.
pub struct Visitor {
    pub addr: SocketAddr,
    pub from: IpAddr,
    pub cookie: Option<String>,
    pub headers: Vec<(String, String)>,
}

impl Visitor {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            from: LOOPBACK,
            cookie: None,
            headers: Vec::new(),
        }
    }

    async fn send(&mut self, method: &str, path: &str, form: &str) -> Answer {
        let mut headers: Vec<(&str, &str)> = (self.headers.iter())
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let cookie = self
            .cookie
            .as_ref()
            .map(|cookie| format!("cronscaler-console={cookie}"));
        if let Some(cookie) = &cookie {
            headers.push(("Cookie", cookie));
        }
        if method == "POST" {
            headers.push(("Content-Type", "application/x-www-form-urlencoded"));
        }
        let answer = exchange(self.from, self.addr, (method, path), &headers, form)
            .await
            .unwrap_or_else(|| panic!("no answer from the console to {method} {path}"));
        let set = (answer.head.lines())
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
            .and_then(|(_, value)| value.trim().strip_prefix("cronscaler-console="))
            .and_then(|value| value.split(';').next());
        if let Some(value) = set {
            self.cookie = (!value.is_empty()).then(|| value.to_string());
        }
        answer
    }

    pub async fn get(&mut self, path: &str) -> Answer {
        self.send("GET", path, "").await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Answer {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        self.send("POST", path, &body).await
    }

    /// Presses `button` (a form's `do`) of `namespace`'s environment, with the form token `token`.
    pub async fn press(&mut self, namespace: &str, button: &str, token: &str) -> Answer {
        let form = [("namespace", namespace), ("do", button), ("token", token)];
        self.post("/act", &form).await
    }

    /// Signs in with `token`: the console's answer.
    pub async fn sign_in(&mut self, token: &str) -> Answer {
        self.post("/sign-in", &[("token", token)]).await
    }
}

/// The form token a page carries.
pub fn form_token(page: &str) -> String {
    let at = page
        .find(r#"name="token" value=""#)
        .expect("a form token on the page");
    let rest = &page[at + r#"name="token" value=""#.len()..];
    rest[..rest.find('"').unwrap_or(0)].to_string()
}

/// The look of `namespace`'s environment on a page, or `None` where the page does not show it.
pub fn look_of(page: &str, namespace: &str) -> Option<String> {
    let marker = format!(r#"id="ns-{namespace}" data-look=""#);
    let rest = &page[page.find(&marker)? + marker.len()..];
    Some(rest[..rest.find('"')?].to_string())
}

/// The part of a page about `namespace`'s environment.
pub fn section_of<'a>(page: &'a str, namespace: &str) -> &'a str {
    let marker = format!(r#"id="ns-{namespace}""#);
    let Some(start) = page.find(&marker) else {
        return "";
    };
    let rest = &page[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}
