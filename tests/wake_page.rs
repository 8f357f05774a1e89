//! The wake-up page in a real browser (headless Chromium, where installed): it shows how far
//! the wake is, then loads the original URL once everything is ready. A small server stands in
//! for the proxy and the backend: `/app` is asleep (the page) until the status says ready.

mod browser;

use std::{
    io::{BufRead as _, BufReader, Write as _},
    net::TcpListener,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use cronscaler::wake::{
    page::{Progress, page},
    readiness::Readiness,
};

const APP: &str = "<html><body><h1>the app itself</h1></body></html>";

/// Serves `/app` and the status on a free port; the status says ready from its `ready_from`th
/// poll on (never, with `usize::MAX`). Returns the port and the count of polls.
fn serve(ready_from: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = polls.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // The rest of the head, unread by this server.
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|read| read > 2) {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let ready = counted.load(Ordering::SeqCst) >= ready_from;
            let (status, content_type, body) = if path.starts_with("/.cronscaler/status") {
                let polled = counted.fetch_add(1, Ordering::SeqCst) + 1;
                let ready = polled >= ready_from;
                let readiness = Readiness {
                    ready: if ready { 2 } else { 1 },
                    total: 2,
                };
                (
                    "200 OK",
                    "application/json",
                    Progress::new("staging", readiness, !ready).json(),
                )
            } else if ready {
                ("200 OK", "text/html", APP.to_string())
            } else {
                let progress = Progress::new("staging", Readiness { ready: 0, total: 2 }, true);
                (
                    "503 Service Unavailable",
                    "text/html",
                    page(&progress, &path, Some(40)),
                )
            };
            let mut stream = &stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, polls)
}

/// The page's DOM after `budget_ms` of the browser's virtual time.
fn dom_after(chromium: &str, port: u16, budget_ms: u32) -> String {
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--dump-dom",
            &format!("--virtual-time-budget={budget_ms}"),
            &format!("http://127.0.0.1:{port}/app"),
        ])
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_page_shows_the_progress_then_loads_the_original_url_once_ready() {
    let Some(chromium) = browser::chromium() else {
        eprintln!(
            "skipped: no chromium on PATH (`which chromium`), so the wake-up page is not run in a \
             browser; install chromium to run this test"
        );
        return;
    };
    let (waking, polls) = serve(usize::MAX);
    let dom = dom_after(chromium, waking, 5_000);
    assert!(
        dom.contains("1 of 2 workloads ready"),
        "the progress the status gives, shown: {dom}"
    );
    assert!(polls.load(Ordering::SeqCst) >= 2, "polled every 2 s");

    let (becomes_ready, _) = serve(3);
    let dom = dom_after(chromium, becomes_ready, 20_000);
    assert!(
        dom.contains("the app itself"),
        "the original URL, loaded once all are ready: {dom}"
    );
}
