//! Test support shared by the crates' tests. Never a normal dependency of any crate.
//!
//! - [`claude_bin`]: the pinned `@anthropic-ai/claude-code` CLI, installed from npm into
//!   `target/test-deps/` on first use (under a lock, so parallel test processes share one
//!   install); tests fail with a clear message when it cannot be installed.
//! - [`MockApi`]: a mock of the Anthropic Messages API on 127.0.0.1 at a free port, enough
//!   for the real CLI: streamed replies with usage, a tool call on demand, or no answer.
//! - [`ClaudeEnv`]: a scratch `HOME`/`CLAUDE_CONFIG_DIR` with a dummy key, pointed at a mock.
//! - [`leftover_processes`]: the processes still running with a test's marker.
//! - [`pg`]: a fresh database on a PostgreSQL server, private to the test process unless
//!   `HOOKS_TEST_DATABASE_URL` names one.

pub mod browser;
pub mod codex;
pub mod http;
mod mock;
pub mod pg;
mod tui;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use mock::{Limit, MockApi, MockMode};
pub use tui::Tui;

/// The Claude Code versions the tests are run against: the oldest supported, and the newest
/// at the time of writing (bump the second to move on; `cargo xtask deps` installs both).
pub const CLAUDE_VERSIONS: [&str; 2] = ["2.1.197", "2.1.332"];

/// The Claude Code version these tests run against: `HOOKS_TEST_CLAUDE_VERSION` (one of
/// [`CLAUDE_VERSIONS`]), else the oldest.
pub fn claude_version() -> &'static str {
    match std::env::var("HOOKS_TEST_CLAUDE_VERSION") {
        Ok(v) => CLAUDE_VERSIONS
            .iter()
            .find(|x| **x == v.trim())
            .copied()
            .unwrap_or_else(|| {
                panic!("HOOKS_TEST_CLAUDE_VERSION={v} is not one of {CLAUDE_VERSIONS:?}")
            }),
        Err(_) => CLAUDE_VERSIONS[0],
    }
}

/// Whether the CLI under test is at least `version` (e.g. `"2.1.332"`): where two versions
/// behave differently, a test says which does what.
pub fn claude_at_least(version: &str) -> bool {
    let parse = |v: &str| -> Vec<u32> { v.split('.').filter_map(|x| x.parse().ok()).collect() };
    parse(claude_version()) >= parse(version)
}

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Where the pinned CLI is installed.
pub fn claude_install_dir() -> PathBuf {
    workspace_root().join(format!("target/test-deps/claude-code-{}", claude_version()))
}

/// The pinned `claude` binary, installing it from npm when it is not there yet. Panics with
/// a clear message when it cannot be had: these tests are never skipped.
pub fn claude_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("HOOKS_TEST_CLAUDE_BIN") {
        return PathBuf::from(p);
    }
    let dir = claude_install_dir();
    let bin = dir.join("node_modules/.bin/claude");
    if !has_version(&bin) {
        fs::create_dir_all(&dir).expect("create the test-deps folder");
        let lock = File::create(dir.with_extension("lock")).expect("create the install lock");
        lock.lock().expect("lock the install");
        if !has_version(&bin) {
            npm_install(
                &dir,
                &format!("@anthropic-ai/claude-code@{}", claude_version()),
            );
        }
        assert!(
            has_version(&bin),
            "{} does not report version {} after install",
            bin.display(),
            claude_version()
        );
    }
    bin
}

/// `npm install PKG` into `dir`; panics saying what to check when it fails.
pub fn npm_install(dir: &Path, pkg: &str) {
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(dir)
        .arg(pkg)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "could not install {pkg} with npm into {} (exit {:?}): {}\nRun `cargo xtask deps` or check that the npm registry is reachable.",
            dir.display(),
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("could not run npm to install {pkg}: {e}. Install Node.js and npm."),
    }
}

fn has_version(bin: &Path) -> bool {
    bin.exists()
        && Command::new(bin)
            .arg("--version")
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with(claude_version()))
}

/// A scratch home for the real CLI, pointed at a mock API, with a marker variable that
/// lets a test find every process it started.
pub struct ClaudeEnv {
    pub dir: tempfile::TempDir,
    pub marker: String,
    pub base_url: String,
    /// Variables a test adds (e.g. `ANTHROPIC_MODEL`), for every process that gets
    /// [`Self::vars`].
    extra: std::sync::Mutex<Vec<(String, String)>>,
    /// Signed in as a subscriber (an OAuth token) rather than with an API key.
    subscriber: std::sync::atomic::AtomicBool,
}

impl ClaudeEnv {
    pub fn new(api: &MockApi) -> Self {
        let dir = tempfile::tempdir().expect("scratch home");
        fs::create_dir_all(dir.path().join("home/.claude")).expect("claude home");
        let marker = format!("hooks-test-{}-{}", std::process::id(), mock::unique());
        Self {
            dir,
            marker,
            base_url: api.base_url(),
            extra: std::sync::Mutex::new(Vec::new()),
            subscriber: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Adds `key=value` to what every `claude` started here (and every program that starts
    /// one) gets.
    pub fn set_var(&self, key: &str, value: &str) {
        self.extra
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((key.to_owned(), value.to_owned()));
    }

    /// Signs every `claude` here in as a subscriber (a dummy OAuth token, no API key): the
    /// CLI then words a usage limit as a subscription's, with its reset time.
    pub fn as_subscriber(&self) {
        self.subscriber
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Claude Code's folder (`CLAUDE_CONFIG_DIR`).
    pub fn claude_home(&self) -> PathBuf {
        self.home().join(".claude")
    }

    /// A folder to run conversations in.
    pub fn workdir(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        fs::create_dir_all(&p).expect("workdir");
        p
    }

    /// The variables a `claude` (or a program that runs it) needs here.
    pub fn vars(&self) -> Vec<(String, String)> {
        let h = self.home().to_string_lossy().into_owned();
        [
            ("HOME", h.clone()),
            (
                "CLAUDE_CONFIG_DIR",
                self.claude_home().to_string_lossy().into_owned(),
            ),
            ("XDG_CONFIG_HOME", format!("{h}/.config")),
            ("XDG_DATA_HOME", format!("{h}/.local/share")),
            if self.subscriber.load(std::sync::atomic::Ordering::SeqCst) {
                (
                    "CLAUDE_CODE_OAUTH_TOKEN",
                    "sk-ant-oat01-test-dummy".to_owned(),
                )
            } else {
                ("ANTHROPIC_API_KEY", "sk-ant-test-dummy".to_owned())
            },
            ("ANTHROPIC_BASE_URL", self.base_url.clone()),
            ("DISABLE_AUTOUPDATER", "1".to_owned()),
            ("DISABLE_TELEMETRY", "1".to_owned()),
            ("DISABLE_ERROR_REPORTING", "1".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("HOOKS_TEST_MARKER", self.marker.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(
            self.extra
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .cloned(),
        )
        .collect()
    }

    /// Applies [`Self::vars`] to `cmd`, removing credentials the machine may have.
    pub fn apply(&self, cmd: &mut Command) {
        for k in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "HOOKS_APP_FOLLOW_UP",
            "HOOKS_APP_ORIGIN",
            "CLAUDECODE",
        ] {
            cmd.env_remove(k);
        }
        cmd.envs(self.vars());
    }

    /// Runs `claude -p` in `cwd` and returns its parsed JSON result.
    pub fn run(&self, cwd: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
        let mut cmd = Command::new(claude_bin());
        cmd.arg("-p")
            .arg("--output-format")
            .arg("json")
            .args(args)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null());
        self.apply(&mut cmd);
        let out = cmd.output().expect("run claude");
        let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (
            out.status.code().unwrap_or(-1),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts a new conversation in `cwd` with `prompt`; returns its session id.
    pub fn new_conversation(&self, cwd: &Path, prompt: &str) -> String {
        let (code, v, err) = self.run(cwd, &["--", prompt]);
        assert_eq!(code, 0, "claude -p failed: {v} {err}");
        v["session_id"].as_str().expect("session_id").to_owned()
    }

    /// The transcript file of `session`, wherever Claude put it.
    pub fn transcript(&self, session: &str) -> Option<PathBuf> {
        let name = format!("{session}.jsonl");
        fs::read_dir(self.claude_home().join("projects"))
            .ok()?
            .flatten()
            .map(|e| e.path().join(&name))
            .find(|p| p.exists())
    }

    /// Processes still running with this environment's marker.
    pub fn leftovers(&self) -> Vec<(u32, String)> {
        leftover_processes(&self.marker)
    }
}

/// Processes (other than this one) whose environment holds `HOOKS_TEST_MARKER=<marker>`,
/// with their command lines.
pub fn leftover_processes(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("HOOKS_TEST_MARKER={marker}");
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
            // A zombie waiting to be reaped has already ended.
            let state = fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if state
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
            {
                continue;
            }
            let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

/// Waits until `f` is true, checking every 20 ms, for at most `secs` seconds. This is a
/// bounded wait on an observable condition, not a sleep standing in for synchronisation.
pub fn wait_until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f()
}

/// Writes an executable script.
pub fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, body).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod script");
}

/// `python3` able to import `packages`, installed from PyPI into `target/test-deps/python`
/// on first use (under a lock, so parallel tests share one install). Panics with a clear
/// message when they cannot be had.
pub fn python(packages: &[&str]) -> Command {
    let dir = workspace_root().join("target/test-deps/python");
    fs::create_dir_all(&dir).expect("target/test-deps/python");
    let done = dir.join(format!(".installed-{}", packages.join("+")));
    if !done.exists() {
        let lock = File::create(dir.join(".lock")).expect("lock file");
        lock.lock().expect("lock");
        if !done.exists() {
            let out = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--target",
                ])
                .arg(&dir)
                .args(packages)
                .output()
                .expect("run python3 -m pip (python3 with pip is required)");
            assert!(
                out.status.success(),
                "could not install {packages:?} from PyPI into {}: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            fs::write(&done, "").expect("marker");
        }
    }
    let mut c = Command::new("python3");
    c.env("PYTHONPATH", &dir);
    c
}
