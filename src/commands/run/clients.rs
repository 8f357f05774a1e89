//! The process's API clients: the controller's, under one request budget; the one it carries
//! out others' asks with, under its own; and the wake-up backend's own.

use std::sync::Arc;

use kube::{Client, client::ClientBuilder};

use crate::{
    commands::cli::RunArgs,
    runtime::budget::{RequestBudget, TokenBucket},
};

/// The process's API clients, for the cluster of the current kubeconfig or in-cluster.
#[derive(Clone)]
pub struct Clients {
    /// The controller's: every request goes through one `--kube-qps` / `--kube-burst` budget.
    pub controller: Client,
    /// The wake-up backend's own, whose requests never queue behind the controller's (lease
    /// renewals, scaling), nor the controller's behind its; its budget, `--wake-kube-qps`, is
    /// kept by the backend (`wake::cluster`), which would rather not read than wait.
    pub wake: Client,
    /// What the controller carries out `WakeRequest`s with: whoever may ask (the backend, which
    /// faces the internet) may make them as fast as it likes, so they are read, carried out and
    /// removed on a budget of their own, `--wake-kube-qps`, and never delay the lease or
    /// scaling.
    pub asked: Client,
    /// The budget `asked` goes through, which the workers ask before carrying out an ask, so
    /// that a flood of asks waits in the queue, not in the workers scaling needs.
    pub asked_budget: Arc<TokenBucket>,
}

/// How many asks are carried out at once before `--wake-kube-qps` holds them back: a wake costs
/// three requests (read, wake, removal).
const ASKED_BURST: u32 = 15;

pub fn clients_for(config: kube::Config, args: &RunArgs) -> Result<Clients, kube::Error> {
    let asked_budget = RequestBudget::new(args.wake_kube_qps(), ASKED_BURST);
    Ok(Clients {
        controller: ClientBuilder::try_from(config.clone())?
            .with_layer(&RequestBudget::new(args.kube_qps, args.kube_burst))
            .build(),
        wake: Client::try_from(config.clone())?,
        asked: ClientBuilder::try_from(config)?
            .with_layer(&asked_budget)
            .build(),
        asked_budget: asked_budget.bucket(),
    })
}
