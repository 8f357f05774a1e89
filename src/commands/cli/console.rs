//! `cronscaler console`'s flags: where it listens, whom it believes, how long a sign-in lasts,
//! and the same reading of the cluster as `status`.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;
use ipnet::IpNet;

use super::{ControllerNamespace, OpenCost, StatusReading, up_to_366d};
use crate::{ops::logs::LogFormat, wake::route::parse_trusted_proxy};

#[derive(Debug, Clone, Args)]
pub struct ConsoleArgs {
    /// The address the console listens on: in-cluster, behind single sign-on or `kubectl
    /// port-forward`, never the internet-facing wake port.
    #[arg(long, env = "CRONSCALER_CONSOLE_ADDR", default_value = "0.0.0.0:8090")]
    pub console_addr: SocketAddr,

    /// Source addresses (CIDRs or addresses, comma-separated) of the authenticating proxies
    /// (oauth2-proxy and the like) whose user and group headers the console believes. From
    /// anyone else a person signs in with a Kubernetes token.
    #[arg(long, env = "CRONSCALER_CONSOLE_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_trusted_proxy)]
    pub console_trusted_proxies: Vec<IpNet>,

    /// The header a trusted proxy names its user in.
    #[arg(
        long,
        env = "CRONSCALER_CONSOLE_USER_HEADER",
        default_value = "X-Forwarded-User"
    )]
    pub console_user_header: http::HeaderName,

    /// The header a trusted proxy names the user's groups in, comma-separated.
    #[arg(
        long,
        env = "CRONSCALER_CONSOLE_GROUPS_HEADER",
        default_value = "X-Forwarded-Groups"
    )]
    pub console_groups_header: http::HeaderName,

    /// How long a sign-in with a token lasts (e.g. `8h`).
    #[arg(long, env = "CRONSCALER_CONSOLE_SESSION", default_value = "8h", value_parser = up_to_366d)]
    pub console_session: Duration,

    /// A file of at least 32 bytes (a mounted Secret) that signs sessions, so they outlive a
    /// restart and every replica knows them. Without it each start makes its own, and people
    /// sign in again after a restart.
    #[arg(long, env = "CRONSCALER_CONSOLE_SESSION_KEY_FILE")]
    pub console_session_key_file: Option<PathBuf>,

    /// Mark the session cookie `Secure`: set it where people reach the console over HTTPS.
    #[arg(long, env = "CRONSCALER_CONSOLE_SECURE_COOKIE")]
    pub console_secure_cookie: bool,

    /// Log format: `text` for people, `json` for log pipelines. The level comes from RUST_LOG.
    #[arg(long, env = "CRONSCALER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    #[command(flatten)]
    pub reading: StatusReading,

    #[command(flatten)]
    pub controller: ControllerNamespace,

    #[command(flatten)]
    pub opencost: OpenCost,
}
