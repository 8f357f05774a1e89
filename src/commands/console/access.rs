//! What the API server says a person may do, asked as the console's ServiceAccount: who a token
//! belongs to (a TokenReview), and whether they may see or act on an environment (a
//! SubjectAccessReview, kept [`KEPT`] for a page's worth of questions, never for acting).

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::Duration,
};

use futures::{StreamExt as _, stream};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec},
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, Client, api::PostParams};
use tokio::time::Instant;

use super::session::Identity;

/// How long an answer to "may they see it" is kept: a page and the few after it.
pub const KEPT: Duration = Duration::from_secs(30);

/// The most answers kept: a few hundred people's pages of a few hundred environments.
const MOST_KEPT: usize = 100_000;

/// How many reviews are asked at once for one page.
const AT_ONCE: usize = 16;

/// What a person is asked about, of one Namespace (`Some`) or every one (`None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Question {
    /// `get` the Namespace: they see the environment.
    See(Option<String>),
    /// `create` an `OverrideRequest` in it: they may press its buttons.
    Act(Option<String>),
    /// `list` a resource of a group (`""` the core) in every Namespace (`nodes`, `pods`,
    /// `poddisruptionbudgets`): they see the page of nodes, which names the Pods of every
    /// Namespace that keep them and their budgets.
    ListAll(&'static str, &'static str),
}

impl Question {
    fn attributes(&self) -> ResourceAttributes {
        match self {
            Question::See(namespace) => ResourceAttributes {
                verb: Some("get".into()),
                resource: Some("namespaces".into()),
                name: namespace.clone(),
                namespace: namespace.clone(),
                ..ResourceAttributes::default()
            },
            Question::Act(namespace) => ResourceAttributes {
                verb: Some("create".into()),
                group: Some("cronscaler.dev".into()),
                resource: Some("overriderequests".into()),
                namespace: namespace.clone(),
                ..ResourceAttributes::default()
            },
            Question::ListAll(group, resource) => ResourceAttributes {
                verb: Some("list".into()),
                group: (!group.is_empty()).then(|| group.to_string()),
                resource: Some(resource.to_string()),
                ..ResourceAttributes::default()
            },
        }
    }

    /// As a refusal says it: `create overriderequests.cronscaler.dev in team-b`.
    pub fn said(&self) -> String {
        let attributes = self.attributes();
        let group = attributes
            .group
            .map(|g| format!(".{g}"))
            .unwrap_or_default();
        let place = match (self, &attributes.namespace) {
            (_, None) => "cluster-wide".to_string(),
            (Question::See(_), Some(namespace)) => namespace.to_string(),
            (_, Some(namespace)) => format!("in {namespace}"),
        };
        format!(
            "{} {}{group} {place}",
            attributes.verb.unwrap_or_default(),
            attributes.resource.unwrap_or_default()
        )
    }
}

/// The console's questions to the API server, and the answers kept.
pub struct Access {
    client: Client,
    kept: Mutex<HashMap<(Identity, Question), (bool, Instant)>>,
}

impl Access {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// Who `token` belongs to, when the API server knows it.
    pub async fn signed_in(&self, token: &str) -> Result<Option<Identity>, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        Ok((status.authenticated == Some(true))
            .then_some(status.user)
            .flatten()
            .and_then(|user| {
                Some(Identity {
                    user: user.username.filter(|name| !name.is_empty())?,
                    groups: user.groups.unwrap_or_default(),
                })
            }))
    }

    /// The answers to `questions` for `who`, kept ones first; a review that fails counts as
    /// "no".
    pub async fn answers(&self, who: &Identity, questions: &[Question]) -> Vec<bool> {
        stream::iter(questions.iter().cloned())
            .map(|question| async move {
                if let Some(allowed) = self.kept(who, &question) {
                    return allowed;
                }
                let allowed = self.may(who, &question).await;
                self.keep(who, &question, allowed);
                allowed
            })
            .buffered(AT_ONCE)
            .collect()
            .await
    }

    fn kept(&self, who: &Identity, question: &Question) -> Option<bool> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let (allowed, at) = kept.get(&(who.clone(), question.clone()))?;
        (at.elapsed() < KEPT).then_some(*allowed)
    }

    fn keep(&self, who: &Identity, question: &Question, allowed: bool) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        // Answers of people long gone are dropped before the map grows past a few pages' worth;
        // past that, all are (each is one review to ask again).
        if kept.len() >= MOST_KEPT {
            kept.retain(|_, (_, at)| at.elapsed() < KEPT);
            if kept.len() >= MOST_KEPT {
                kept.clear();
            }
        }
        kept.insert((who.clone(), question.clone()), (allowed, Instant::now()));
    }

    /// Whether `who` may do what `question` asks, asked now and kept for nothing (acting asks
    /// so); a review that fails counts as "no".
    pub async fn may(&self, who: &Identity, question: &Question) -> bool {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(who.user.clone()),
                groups: Some(who.groups.clone()),
                resource_attributes: Some(question.attributes()),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(answer) => answer.status.is_some_and(|status| status.allowed),
            Err(error) => {
                tracing::warn!(user = %who.user, question = %question.said(), %error, "the access review failed; taken as a refusal");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_says_the_rule_a_person_needs() {
        assert_eq!(
            Question::Act(Some("team-b".into())).said(),
            "create overriderequests.cronscaler.dev in team-b"
        );
        assert_eq!(
            Question::See(Some("team-b".into())).said(),
            "get namespaces team-b"
        );
        assert_eq!(Question::See(None).said(), "get namespaces cluster-wide");
        assert_eq!(
            Question::ListAll("", "pods").said(),
            "list pods cluster-wide"
        );
        assert_eq!(
            Question::ListAll("policy", "poddisruptionbudgets").said(),
            "list poddisruptionbudgets.policy cluster-wide"
        );
    }
}
