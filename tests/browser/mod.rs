//! What the browser tests share (each includes it with `mod browser;`): the headless Chromium
//! they run in, where one is installed.

use std::process::Command;

/// The first Chromium on PATH; `None` where there is none, and the test says it is skipped.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new("which")
                .arg(name)
                .output()
                .is_ok_and(|found| found.status.success())
        })
}
