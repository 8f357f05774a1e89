//! The processes of a control plane and the files they leave: where the binaries are, free
//! ports, spawning so that nothing outlives the test binary, signals, logs, temporary
//! directories.

use std::{
    collections::BTreeSet,
    fs::{self, OpenOptions},
    io,
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Mutex, OnceLock, mpsc},
    time::{Duration, Instant},
};

/// The directory of etcd, kube-apiserver and kube-controller-manager, if the user gave one.
pub fn assets() -> Option<PathBuf> {
    std::env::var_os("KUBEBUILDER_ASSETS")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
}

/// A TCP port nobody listens on now and that this process has not handed out before, so two
/// control planes (or controllers) started at once never get the same one.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("binding 127.0.0.1:0 to find a free port")
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            return port;
        }
    }
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `command` from the spawner thread, with `PR_SET_PDEATHSIG` = SIGKILL, so the process
/// cannot outlive the test binary.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("envtest-spawner".into())
            // The sender lives in a static, so this loop (and the thread) never ends.
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("starting the spawner thread");
        Mutex::new(requests)
    });
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// Sends `signal` to the process.
pub fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) with a pid we own (not yet reaped, so not reused) has no memory effects.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// SIGTERM, then SIGKILL if the process has not exited within `grace`. Returns how it exited.
pub fn terminate(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    signal(child, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// The last `lines` lines of a log file, for failure messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|error| format!("({error})"));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A log file for a process's stdout and stderr, appended to (a restarted API server keeps one
/// log).
pub fn log_file(path: &Path) -> (Stdio, Stdio) {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|error| panic!("opening {}: {error}", path.display()));
    let second = file.try_clone().expect("cloning a log file handle");
    (Stdio::from(file), Stdio::from(second))
}

/// A temporary directory named `<prefix><pid>-...`. Directories of the same prefix left by test
/// binaries that no longer run (killed, so nothing removed them; an etcd data directory is over
/// 100 MB) are removed first.
pub fn temp_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    let pid = std::process::id();
    if let Ok(entries) = fs::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(owner) = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('-').next())
                .and_then(|owner| owner.parse::<u32>().ok())
            else {
                continue;
            };
            if owner != pid && !Path::new(&format!("/proc/{owner}")).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{pid}-"))
        .tempdir()
}
