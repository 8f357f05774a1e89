//! The process's API clients: the controller's, under one request budget, and the wake-up
//! backend's own.

use kube::{Client, client::ClientBuilder};

use crate::{commands::cli::RunArgs, runtime::budget::RequestBudget};

/// The process's API clients, for the cluster of the current kubeconfig or in-cluster.
#[derive(Clone)]
pub struct Clients {
    /// The controller's: every request goes through one `--kube-qps` / `--kube-burst` budget.
    pub controller: Client,
    /// The wake-up backend's own, whose requests never queue behind the controller's (lease
    /// renewals, scaling), nor the controller's behind its; its budget, `--wake-kube-qps`, is
    /// kept by the backend (`wake::cluster`), which would rather not read than wait.
    pub wake: Client,
}

pub fn clients_for(config: kube::Config, args: &RunArgs) -> Result<Clients, kube::Error> {
    Ok(Clients {
        controller: ClientBuilder::try_from(config.clone())?
            .with_layer(&RequestBudget::new(args.kube_qps, args.kube_burst))
            .build(),
        wake: Client::try_from(config)?,
    })
}
