//! A real Kubernetes control plane for tests, in the manner of controller-runtime's envtest:
//! etcd, kube-apiserver and (when its binary is there) kube-controller-manager, from the
//! directory `KUBEBUILDER_ASSETS` names, on free ports, in a temporary directory.
//!
//! The API server enforces RBAC and authenticates by token, so the controller under test runs
//! as the project's own ServiceAccount, bound by `rbac/` exactly as installed: a grant missing
//! there is a 403 here. An audit log records every request, so a test can count what the
//! controller asked for.
//!
//! Every process is spawned from one thread that never exits, with `PR_SET_PDEATHSIG`: the kernel
//! kills the processes when that thread dies, that is when the test binary exits, however it
//! exits (pdeathsig follows the spawning *thread*, so spawning from a test's own thread would kill
//! them when that test ends).

mod audit;
mod install;
mod plane;
mod process;

// Each test binary uses its own subset of these.
#[allow(unused_imports)]
pub use self::{audit::*, install::*, plane::*, process::*};

/// The project's ServiceAccount, as `rbac/service-account.yaml` installs it.
pub const SA_NAMESPACE: &str = "cronscaler";
pub const SA_NAME: &str = "cronscaler";
/// The user name the API server gives requests made with the ServiceAccount's token.
pub const SA_USER: &str = "system:serviceaccount:cronscaler:cronscaler";

/// Field manager of everything the tests apply.
pub const FIELD_MANAGER: &str = "cronscaler-e2e";
