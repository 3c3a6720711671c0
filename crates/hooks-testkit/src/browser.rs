//! A headless browser for the page's tests: Debian's Chromium, driven by Playwright's core
//! library from npm (no browser download: it runs `/usr/bin/chromium`).

use std::fs::{self, File};
use std::path::PathBuf;
use std::process::Command;

use crate::workspace_root;

/// The Playwright version the browser tests drive Chromium with.
pub const PLAYWRIGHT_VERSION: &str = "1.64.1";

/// Debian's Chromium, installed with apt on first use when running as root; otherwise a
/// panic that says how to install it.
pub fn chromium() -> PathBuf {
    let bin = PathBuf::from("/usr/bin/chromium");
    if bin.exists() {
        return bin;
    }
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "the browser tests need Debian's Chromium at /usr/bin/chromium: `sudo apt-get install chromium` (cargo xtask deps does it)"
    );
    let dir = workspace_root().join("target/test-deps");
    fs::create_dir_all(&dir).expect("target/test-deps");
    let lock = File::create(dir.join("chromium.lock")).expect("lock file");
    lock.lock().expect("lock");
    if !bin.exists() {
        let ok = Command::new("sh")
            .args([
                "-c",
                "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null",
            ])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok && bin.exists(),
            "could not install chromium with apt-get"
        );
    }
    bin
}

/// The folder whose `node_modules` holds playwright-core, installed from npm on first use.
pub fn playwright() -> PathBuf {
    let dir = workspace_root().join(format!("target/test-deps/playwright-{PLAYWRIGHT_VERSION}"));
    let pkg = dir.join("node_modules/playwright-core/package.json");
    if !pkg.exists() {
        fs::create_dir_all(&dir).expect("target/test-deps");
        let lock = File::create(dir.with_extension("lock")).expect("lock file");
        lock.lock().expect("lock");
        if !pkg.exists() {
            crate::npm_install(&dir, &format!("playwright-core@{PLAYWRIGHT_VERSION}"));
        }
    }
    dir
}

/// `node` running `script` (CommonJS) with playwright-core importable and the browser's
/// path in `CHROMIUM`.
pub fn node(script: &std::path::Path) -> Command {
    let browser = chromium();
    let mut c = Command::new("node");
    c.arg(script)
        .env("NODE_PATH", playwright().join("node_modules"))
        .env("CHROMIUM", browser);
    c
}
