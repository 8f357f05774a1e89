//! Which cluster the commands talk to: the kubeconfig found as kubectl finds it, or the one and
//! the context `--kubeconfig` and `--context` name.

use kube::{
    Client, Config,
    config::{InferConfigError, KubeConfigOptions, Kubeconfig, KubeconfigError},
};

use super::cli::KubeArgs;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The source names the file.
    #[error("reading the kubeconfig: {source}")]
    Read {
        #[source]
        source: KubeconfigError,
    },
    #[error("loading the kubeconfig{}: {source}", context_of(.context))]
    Load {
        context: Option<String>,
        #[source]
        source: KubeconfigError,
    },
    #[error(transparent)]
    Infer(#[from] InferConfigError),
    #[error("building a client: {0}")]
    Client(#[source] kube::Error),
}

fn context_of(context: &Option<String>) -> String {
    context
        .as_ref()
        .map(|context| format!(" context {context:?}"))
        .unwrap_or_default()
}

/// The client configuration `kube` names: without `--kubeconfig` and `--context`, kubectl's
/// search (`KUBECONFIG`, `~/.kube/config`, then the in-cluster ServiceAccount).
pub async fn config(kube: &KubeArgs) -> Result<Config, ConnectError> {
    let options = KubeConfigOptions {
        context: kube.context.clone(),
        ..KubeConfigOptions::default()
    };
    let load = |source| ConnectError::Load {
        context: kube.context.clone(),
        source,
    };
    match (&kube.kubeconfig, &kube.context) {
        (Some(path), _) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ConnectError::Read { source })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(load)
        }
        (None, Some(_)) => Config::from_kubeconfig(&options).await.map_err(load),
        (None, None) => Ok(Config::infer().await?),
    }
}

/// A client for [`config`].
pub async fn client(kube: &KubeArgs) -> Result<Client, ConnectError> {
    Client::try_from(config(kube).await?).map_err(ConnectError::Client)
}
