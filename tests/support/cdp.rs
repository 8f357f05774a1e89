//! A headless Chromium driven as a person would use it, over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: the browser reads commands on its descriptor 3 and writes answers
//! on 4, each a JSON object ended by a NUL byte), so no WebSocket client is needed.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    os::{fd::AsRawFd as _, unix::process::CommandExt as _},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use base64::Engine as _;

#[path = "../browser/mod.rs"]
mod browser;

#[allow(unused_imports)]
pub use browser::chromium;
use serde_json::{Value, json};

/// One tab of a headless Chromium of its own.
pub struct Browser {
    child: Child,
    commands: std::io::PipeWriter,
    answers: mpsc::Receiver<Value>,
    next_id: u64,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromium` headless with a window of `width`×`height` and opens one blank tab.
    pub fn start(chromium: &str, (width, height): (u32, u32)) -> Self {
        let (their_commands, commands) = std::io::pipe().expect("a pipe");
        let (answers_read, their_answers) = std::io::pipe().expect("a pipe");
        let (read_fd, write_fd) = (their_commands.as_raw_fd(), their_answers.as_raw_fd());
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--remote-debugging-pipe",
                &format!("--window-size={width},{height}"),
                &format!("--user-data-dir={}", profile.path().display()),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(read_fd, 3) < 0 || libc::dup2(write_fd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts");
        drop((their_commands, their_answers));
        let (sender, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers_read);
            let mut message = Vec::new();
            while reader
                .read_until(0, &mut message)
                .is_ok_and(|read| read > 0)
            {
                message.pop();
                if let Ok(value) = serde_json::from_slice::<Value>(&message)
                    && sender.send(value).is_err()
                {
                    return;
                }
                message.clear();
            }
        });
        let mut browser = Self {
            child,
            commands,
            answers,
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].as_str().expect("a tab").to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        browser.call("Page.enable", json!({}));
        browser
    }

    /// Sends `method` (to the tab, once attached) and waits for its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        self.commands.write_all(&bytes).expect("the browser reads");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = (self.answers.recv_timeout(left))
                .unwrap_or_else(|_| panic!("the browser did not answer {method}"));
            if answer["id"] == json!(id) {
                assert!(answer["error"].is_null(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// Opens `url` in the tab and waits until it has loaded.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_loaded();
    }

    /// Waits until the tab's document has loaded (after a navigation, a form sent or a reload).
    pub fn wait_loaded(&mut self) {
        std::thread::sleep(Duration::from_millis(200));
        self.until("the page loaded", Duration::from_secs(20), |browser| {
            browser.eval("document.readyState") == json!("complete")
        });
    }

    /// The value of the JavaScript `expression` in the tab (as a person's browser runs it; the
    /// page itself has no script).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        result["result"]["value"].clone()
    }

    /// Waits up to `within` until `ready` holds, failing the test with the page's text if not.
    pub fn until(&mut self, what: &str, within: Duration, ready: impl Fn(&mut Self) -> bool) {
        let deadline = Instant::now() + within;
        while !ready(self) {
            if Instant::now() > deadline {
                let text = self.eval("document.body ? document.body.innerText : ''");
                panic!("{what}: not within {within:?}; the page says:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The tab as a PNG.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let data = shot["data"].as_str().expect("image data");
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("a base64 image")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
