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
    readiness::{NotKnown, Readiness},
};

const APP: &str = "<html><body><h1>the app itself</h1></body></html>";

/// What the stand-in's status says before it says ready.
#[derive(Clone, Copy)]
enum Before {
    /// 1 of 2 ready.
    HalfReady,
    /// Readiness not known yet (the API server did not answer the backend).
    NotKnown,
}

/// Serves `/app` and the status on a free port; the status says ready from its `ready_from`th
/// poll on (never, with `usize::MAX`), and `before` until then. The page it serves opens
/// `original` (its own path, where `None`). Returns the port and the count of polls.
fn serve(
    ready_from: usize,
    before: Before,
    original: Option<&'static str>,
) -> (u16, Arc<AtomicUsize>) {
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
                let readiness = match (ready, before) {
                    (true, _) => Ok(Readiness { ready: 2, total: 2 }),
                    (false, Before::HalfReady) => Ok(Readiness { ready: 1, total: 2 }),
                    (false, Before::NotKnown) => Err(NotKnown::TimedOut),
                };
                (
                    "200 OK",
                    "application/json",
                    Progress::new("staging", readiness, !ready).json(),
                )
            } else if ready {
                ("200 OK", "text/html", APP.to_string())
            } else {
                let progress = Progress::new("staging", Ok(Readiness { ready: 0, total: 2 }), true);
                (
                    "503 Service Unavailable",
                    "text/html",
                    page(&progress, original.unwrap_or(&path), Some(90)),
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
    let (waking, polls) = serve(usize::MAX, Before::HalfReady, None);
    let dom = dom_after(chromium, waking, 5_000);
    assert!(
        dom.contains("1 of 2 workloads ready, about 1m2"),
        "the progress the status gives, and the warm-up left (90 s less the page's 5), shown: {dom}"
    );
    assert!(polls.load(Ordering::SeqCst) >= 2, "polled every 2 s");

    let (becomes_ready, _) = serve(3, Before::HalfReady, None);
    let dom = dom_after(chromium, becomes_ready, 20_000);
    assert!(
        dom.contains("the app itself"),
        "the original URL, loaded once all are ready: {dom}"
    );
}

#[test]
fn readiness_not_known_keeps_the_page_waiting_instead_of_reloading() {
    let Some(chromium) = browser::chromium() else {
        eprintln!("skipped: no chromium on PATH (`which chromium`); install chromium to run it");
        return;
    };
    let (not_known, polls) = serve(usize::MAX, Before::NotKnown, None);
    let dom = dom_after(chromium, not_known, 7_000);
    assert!(dom.contains("Starting the workloads"), "{dom}");
    assert!(!dom.contains("the app itself"), "{dom}");
    assert!(polls.load(Ordering::SeqCst) >= 3, "still polling");
}

#[test]
fn the_page_opens_only_its_own_origin_whatever_it_was_given() {
    let Some(chromium) = browser::chromium() else {
        eprintln!("skipped: no chromium on PATH (`which chromium`); install chromium to run it");
        return;
    };
    // Ready at once: the page goes to its original URI, which names another host; it opens
    // its own origin's root instead, which the stand-in serves as the app.
    let (port, _) = serve(1, Before::HalfReady, Some("//evil.example/app"));
    let dom = dom_after(chromium, port, 10_000);
    assert!(dom.contains("the app itself"), "{dom}");
}
