//! Open file descriptors: every connection holds one. The usual soft limit (1,024) is far
//! below what the kernel allows the process (the hard limit), so the process raises it at
//! start, and the wake-up backend takes its connection cap from the result, keeping room for
//! the controller's own sockets (API connections, watches, the HTTP listener).

/// Descriptors kept for the controller itself, whatever the backend's connections.
pub const KEPT_FOR_THE_CONTROLLER: u64 = 256;
/// The most connections the backend holds, whatever the limit: each costs memory (its buffers,
/// up to about 20 KiB), and the manifests give the process 128 MiB.
pub const MOST_CONNECTIONS: u64 = 4096;
/// The fewest, on a machine whose limit leaves less.
const FEWEST_CONNECTIONS: u64 = 64;

/// The soft limit of open files before and after raising it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub was: u64,
    pub is: u64,
}

/// Raises the soft limit of open files to the hard limit.
pub fn raise_limit() -> std::io::Result<OpenFiles> {
    let (was, _) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
    let is = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok(OpenFiles { was, is })
}

/// Raises the open-files limit to what the kernel allows, says so, and returns the limit in
/// force: the wake-up backend's connection cap comes from it.
pub fn raise_limit_and_say() -> u64 {
    match raise_limit() {
        Ok(open_files) => {
            tracing::info!(
                was = open_files.was,
                is = open_files.is,
                wake_connections = connection_cap(open_files.is),
                kept_for_the_controller = KEPT_FOR_THE_CONTROLLER,
                "open-files limit raised to the hard limit; the wake-up backend holds at most wake_connections connections"
            );
            open_files.is
        }
        Err(error) => {
            let fallback = 1024;
            tracing::warn!(%error, fallback, "could not read or raise the open-files limit; assuming the usual soft limit");
            fallback
        }
    }
}

/// How many connections the wake-up backend may hold with `limit` open files.
pub fn connection_cap(limit: u64) -> usize {
    let cap = limit
        .saturating_sub(KEPT_FOR_THE_CONTROLLER)
        .clamp(FEWEST_CONNECTIONS, MOST_CONNECTIONS);
    usize::try_from(cap).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_keeps_room_for_the_controller_within_what_memory_allows() {
        assert_eq!(connection_cap(1024), 768);
        assert_eq!(connection_cap(1_048_576), 4096);
        assert_eq!(connection_cap(256), 64);
    }
}
