//! What this process may do, as the API server says: a SelfSubjectAccessReview, which every
//! authenticated user may make. A feature that lacks a grant says so at start, instead of
//! failing at its first write hours later.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::{Api, Client, api::PostParams};

/// One thing to be done: a verb on a resource of a group (`""`: the core group), in a
/// Namespace or (`None`) in every one, to the object `name` or (`None`) to any: a rule that
/// names its objects (`resourceNames`) allows only an action that names one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

impl<'a> Action<'a> {
    /// `verb` on any object of `resource` of `group`, in every Namespace.
    pub const fn anywhere(verb: &'a str, group: &'a str, resource: &'a str) -> Self {
        Self {
            verb,
            group,
            resource,
            namespace: None,
            name: None,
        }
    }
}

impl std::fmt::Display for Action<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            verb,
            group,
            resource,
            namespace,
            name,
        } = self;
        let mut resource = match group.is_empty() {
            true => resource.to_string(),
            false => format!("{resource}.{group}"),
        };
        if let Some(name) = name {
            resource = format!("{resource}/{name}");
        }
        match namespace {
            Some(namespace) => write!(f, "{verb} {resource} in {namespace}"),
            None => write!(f, "{verb} {resource}"),
        }
    }
}

/// Whether this process may do `action`.
pub async fn may(client: &Client, action: Action<'_>) -> Result<bool, kube::Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(action.group.to_string()),
                resource: Some(action.resource.to_string()),
                verb: Some(action.verb.to_string()),
                namespace: action.namespace.map(String::from),
                name: action.name.map(String::from),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

/// Of `actions`, those this process may not do (an action the API server could not review
/// counts as allowed: a feature is not turned off by a failed question).
pub async fn refused<'a>(client: &Client, actions: &[Action<'a>]) -> Vec<Action<'a>> {
    let mut refused = Vec::new();
    for action in actions {
        match may(client, *action).await {
            Ok(false) => refused.push(*action),
            Ok(true) => {}
            Err(error) => tracing::debug!(%action, %error, "could not review an access"),
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_reads_as_kubectl_auth_can_i_takes_it() {
        let slices = Action::anywhere("create", "discovery.k8s.io", "endpointslices");
        assert_eq!(slices.to_string(), "create endpointslices.discovery.k8s.io");
        let services = Action {
            namespace: Some("shop"),
            ..Action::anywhere("list", "", "services")
        };
        assert_eq!(services.to_string(), "list services in shop");
        let owner = Action {
            name: Some("cronscaler-wake-slices"),
            ..Action::anywhere("get", "rbac.authorization.k8s.io", "clusterroles")
        };
        assert_eq!(
            owner.to_string(),
            "get clusterroles.rbac.authorization.k8s.io/cronscaler-wake-slices"
        );
    }
}
