//! How the daemon runs without a terminal: the mode `install --daemon` chose, kept in
//! `<data-dir>/daemon.json`; starting `serve --on-demand` from `claude-hook` when something
//! was queued and no daemon holds the data folder; the list of running daemons for
//! `status`; and the systemd / launchd unit of the `service` mode.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::environment::DaemonEnvironment;
pub use crate::options::DEFAULT_IDLE_EXIT;
use crate::options::DaemonMode;
use crate::{AppError, AppResult, Context};

const CONFIG_FILE: &str = "daemon.json";
pub const LOG_FILE: &str = "serve.log";
/// The log is rotated (one old copy, `serve.log.1`) when a daemon starts past this size.
const LOG_ROTATE_AT: u64 = 1024 * 1024;
const SERVICE_NAME: &str = "hooks-app";

/// The daemon mode and the idle time of on-demand daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaemonConfig {
    pub mode: DaemonMode,
    pub idle_exit: u64,
    /// Where the daemon serves the HTTP API and page (`install --http`), if it does.
    pub http: Option<std::net::SocketAddr>,
    /// The mode before `uninstall` set `none`: what `install` comes back to.
    pub before_uninstall: Option<DaemonMode>,
}

impl DaemonConfig {
    /// As `install` wrote it (on demand unless told otherwise). Where install never ran
    /// with this version, `none`: no process is started in the background for a user who
    /// did not ask for it.
    pub fn read(data_dir: &Path) -> Self {
        let v: Value = hooks_platform::read_regular(
            &data_dir.join(CONFIG_FILE),
            hooks_platform::ReadLimit::bytes(64 * 1024),
        )
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
        let mode = |m: &Value| match m.as_str() {
            Some("on-demand") => Some(DaemonMode::OnDemand),
            Some("service") => Some(DaemonMode::Service),
            Some("none") => Some(DaemonMode::None),
            _ => None,
        };
        Self {
            mode: mode(&v["mode"]).unwrap_or(DaemonMode::None),
            idle_exit: v["idleExitSecs"].as_u64().unwrap_or(DEFAULT_IDLE_EXIT),
            http: v["http"].as_str().and_then(|a| a.parse().ok()),
            before_uninstall: mode(&v["modeBeforeUninstall"]),
        }
    }

    pub fn write(&self, data_dir: &Path) -> AppResult {
        let text = serde_json::to_string_pretty(&json!({
            "mode": mode_name(self.mode),
            "idleExitSecs": self.idle_exit,
            "http": self.http.map(|a| a.to_string()),
            "modeBeforeUninstall": self.before_uninstall.map(mode_name),
        }))
        .unwrap_or_default();
        crate::fsutil::write_private(&data_dir.join(CONFIG_FILE), &format!("{text}\n"))
    }
}

pub fn mode_name(m: DaemonMode) -> &'static str {
    match m {
        DaemonMode::OnDemand => "on-demand",
        DaemonMode::Service => "service",
        DaemonMode::None => "none",
    }
}

/// Starts `serve --on-demand` in the background when the mode is on demand and no daemon
/// holds the data folder. Returns whether one was started. Two hooks racing may both start
/// one; the second finds the first holding `ondemand.lock` and exits at once.
///
/// The daemon gets the environment the user's `install` kept ([`DaemonEnvironment`]),
/// never this process's: from a Claude Code hook (`from_hook`) that environment is partly
/// the repository's. Where none was kept, a hook starts nothing (what it queued waits,
/// and it says so); a command the user typed passes on its own.
pub fn ensure_running(ctx: &Context, from_hook: bool) -> AppResult<bool> {
    let cfg = DaemonConfig::read(&ctx.data_dir);
    if cfg.mode != DaemonMode::OnDemand || crate::daemon::ondemand::daemon_running(&ctx.data_dir) {
        return Ok(false);
    }
    let env = match DaemonEnvironment::read(&ctx.data_dir) {
        Some(env) => env,
        None if from_hook => {
            return Err(AppError::runtime(format!(
                "no daemon was started: {} is missing, so the environment to start it with is not known; run `hooks-app install` again from your own shell",
                ctx.data_dir.join(super::environment::FILE).display()
            )));
        }
        None => DaemonEnvironment::capture(ctx),
    };
    let log_path = ctx.data_dir.join(LOG_FILE);
    rotate(&log_path);
    let log = hooks_platform::files::open_regular_with(
        &log_path,
        OpenOptions::new().create(true).append(true).mode(0o600),
    )
    .map_err(|e| AppError::runtime(format!("could not open {}: {e}", log_path.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| AppError::runtime(format!("cannot find this program's path: {e}")))?;
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .envs(&env.vars)
        .arg("--data-dir")
        .arg(&ctx.data_dir)
        .arg("--claude-home")
        .arg(&env.claude_home)
        .arg("--claude-bin")
        .arg(&env.claude_bin)
        .arg("--done-marker")
        .arg(&ctx.done_marker)
        .args(ctx.child_args())
        // A store URL with a password goes by the environment, never a command line.
        .envs(ctx.store_secret_env())
        .args(["serve", "--on-demand", "--idle-exit"])
        .arg(cfg.idle_exit.to_string())
        .args(
            cfg.http
                .iter()
                .flat_map(|a| ["--http".to_owned(), a.to_string()]),
        )
        .current_dir(&ctx.data_dir)
        .stdin(Stdio::null())
        .stdout(
            log.try_clone()
                .map_err(|e| AppError::runtime(e.to_string()))?,
        )
        .stderr(log);
    // SAFETY: setsid(2) is async-signal-safe; between fork and exec it only detaches the
    // child into a session of its own, out of reach of the hook's process group and terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    // Not waited for: it outlives this hook, and init reaps it.
    cmd.spawn()
        .map_err(|e| AppError::runtime(format!("could not start the daemon: {e}")))?;
    Ok(true)
}

fn rotate(log: &Path) {
    if std::fs::metadata(log).is_ok_and(|m| m.len() >= LOG_ROTATE_AT) {
        let _ = std::fs::rename(log, log.with_extension("log.1"));
    }
}

/// The exclusive lock an on-demand daemon holds: at most one runs per data folder.
pub fn take_singleton(data_dir: &Path) -> Option<File> {
    let f = crate::fsutil::open_lock(&data_dir.join("ondemand.lock")).ok()?;
    f.try_lock().ok()?;
    Some(f)
}

/// A running daemon's entry in `<data-dir>/daemons/`, removed when it stops.
pub struct Registration(PathBuf);

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Registers this daemon, with the URL it serves HTTP at, if it does, and whether it
/// delivers follow-ups into open conversations (`serve --deliver`).
pub fn register(
    data_dir: &Path,
    on_demand: bool,
    http: Option<&str>,
    deliver_open: bool,
) -> Option<Registration> {
    let me = hooks_meta::live::this_process()?;
    let dir = data_dir.join("daemons");
    crate::fsutil::create_private_dir(&dir).ok()?;
    let path = dir.join(format!("{}.json", me.pid));
    let v = json!({
        "pid": me.pid,
        "procStart": me.start,
        "startedAt": hooks_core::stamp::format(time::OffsetDateTime::now_utc()),
        "mode": if on_demand { "on-demand" } else { "serve" },
        "log": on_demand.then(|| data_dir.join(LOG_FILE)),
        "http": http,
        "deliverOpen": deliver_open,
    });
    // The single address file of earlier versions: the registrations say it now.
    let _ = std::fs::remove_file(data_dir.join("http.json"));
    crate::fsutil::write_private(&path, &v.to_string()).ok()?;
    Some(Registration(path))
}

/// Whether the daemons running on this data folder deliver into open conversations, as a
/// hook tells a person what will happen: `false` only when every one that runs said
/// `--deliver closed` (none running: the default, which an on-demand start gets).
pub fn daemons_deliver_open(data_dir: &Path) -> bool {
    let running = running(data_dir);
    running.is_empty() || running.iter().any(|d| d["deliverOpen"] != false)
}

/// The daemons running on this data folder now, as they registered; the entry of a daemon
/// that is gone (killed) is removed.
pub fn running(data_dir: &Path) -> Vec<Value> {
    let Ok(rd) = std::fs::read_dir(data_dir.join("daemons")) else {
        return Vec::new();
    };
    let mut out: Vec<Value> = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(v) =
            hooks_platform::read_regular(&path, hooks_platform::ReadLimit::bytes(64 * 1024))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            continue;
        };
        let live = match (v["pid"].as_u64(), v["procStart"].as_u64()) {
            (Some(pid), Some(start)) => u32::try_from(pid).is_ok_and(|pid| {
                hooks_meta::live::is_alive(&hooks_core::ProcessRef { pid, start })
            }),
            _ => false,
        };
        if live {
            out.push(v);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    out.sort_by_key(|v| v["pid"].as_u64());
    out
}

/// Stops the data folder's on-demand daemons (SIGTERM: each finishes or hands back what it
/// runs) and waits up to ten seconds for them to go. Returns the pids it stopped.
pub fn stop_on_demand(data_dir: &Path) -> Vec<u32> {
    let mut stopped = Vec::new();
    for d in running(data_dir) {
        let (Some(pid), Some(start)) = (
            d["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
            d["procStart"].as_u64(),
        ) else {
            continue;
        };
        if d["mode"] != "on-demand" || pid == std::process::id() {
            continue;
        }
        let me = hooks_core::ProcessRef { pid, start };
        // The very process that registered: a pid reused since is another's.
        if !hooks_meta::live::is_alive(&me) {
            continue;
        }
        // SAFETY: kill(2) with SIGTERM on a pid checked just above to be the daemon that
        // registered itself (pid and start time).
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
        let t = std::time::Instant::now();
        while hooks_meta::live::is_alive(&me) && t.elapsed() < Duration::from_secs(10) {
            // Waiting on another process's exit: there is nothing to block on.
            std::thread::sleep(Duration::from_millis(20));
        }
        stopped.push(pid);
    }
    stopped
}

/// Where the newest live daemon of the data folder serves HTTP, if one does.
pub fn http_url(data_dir: &Path) -> Option<String> {
    let mut serving: Vec<Value> = running(data_dir)
        .into_iter()
        .filter(|d| d["http"].is_string())
        .collect();
    serving.sort_by(|a, b| b["startedAt"].as_str().cmp(&a["startedAt"].as_str()));
    serving
        .first()
        .and_then(|d| d["http"].as_str().map(str::to_owned))
}

/// Where the service unit goes on this system, and the commands that turn it on and off.
pub fn unit_path() -> PathBuf {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    if cfg!(target_os = "macos") {
        home.join("Library/LaunchAgents/dev.hooks-app.serve.plist")
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map_or_else(|| home.join(".config"), PathBuf::from)
            .join(format!("systemd/user/{SERVICE_NAME}.service"))
    }
}

/// The command that restarts the daemon installed as a user service.
pub fn restart_command(unit: &Path) -> String {
    if cfg!(target_os = "macos") {
        let label = unit
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!(
            "launchctl kickstart -k gui/{}/{label}",
            hooks_platform::account::uid()
        )
    } else {
        format!("systemctl --user restart {SERVICE_NAME}.service")
    }
}

pub fn enable_command(unit: &Path) -> String {
    if cfg!(target_os = "macos") {
        format!(
            "launchctl load -w {}",
            crate::fsutil::shell_quote(&unit.to_string_lossy())
        )
    } else {
        format!(
            "systemctl --user daemon-reload && systemctl --user enable --now {SERVICE_NAME}.service"
        )
    }
}

pub fn disable_command(unit: &Path) -> String {
    if cfg!(target_os = "macos") {
        format!(
            "launchctl unload -w {}",
            crate::fsutil::shell_quote(&unit.to_string_lossy())
        )
    } else {
        format!("systemctl --user disable --now {SERVICE_NAME}.service")
    }
}

/// The unit's text for this system: `serve` on this data folder, restarted if it fails.
pub fn unit_text(ctx: &Context) -> AppResult<String> {
    unit_text_for(ctx, cfg!(target_os = "macos"))
}

/// The unit's text: a launchd agent's plist (`macos`) or a systemd user unit.
pub fn unit_text_for(ctx: &Context, macos: bool) -> AppResult<String> {
    let exe = std::env::current_exe()
        .map_err(|e| AppError::runtime(format!("cannot find this program's path: {e}")))?;
    ctx.check_store_secret()?;
    let mut args = vec![
        exe.to_string_lossy().into_owned(),
        "--data-dir".into(),
        ctx.data_dir.to_string_lossy().into_owned(),
        "--claude-home".into(),
        ctx.claude_home.to_string_lossy().into_owned(),
        "--workspace".into(),
        ctx.workspace.to_string_lossy().into_owned(),
        // A service starts with the system's short PATH (launchd's is /usr/bin:/bin:…),
        // where a claude from npm or Homebrew is not: the one found now is named.
        "--claude-bin".into(),
        super::environment::claude_for_daemon(&ctx.claude_bin)
            .to_string_lossy()
            .into_owned(),
    ];
    args.extend(ctx.child_args());
    args.push("serve".into());
    if let Some(a) = DaemonConfig::read(&ctx.data_dir).http {
        args.extend(["--http".into(), a.to_string()]);
    }
    Ok(if macos {
        let items: String = args
            .iter()
            .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
            .collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n  <key>Label</key><string>dev.hooks-app.serve</string>\n  <key>ProgramArguments</key>\n  <array>\n{items}  </array>\n  <key>RunAtLoad</key><true/>\n  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n  <key>StandardErrorPath</key><string>{}</string>\n</dict>\n</plist>\n",
            xml_escape(&ctx.data_dir.join(LOG_FILE).to_string_lossy())
        )
    } else {
        let exec: Vec<String> = args.iter().map(|a| systemd_quote(a)).collect();
        format!(
            "# Written by `hooks-app install --daemon service`; removed by `hooks-app uninstall --daemon service`.\n\
             [Unit]\nDescription=hooks-app: follow-ups for finished Claude Code conversations\n\n\
             [Service]\nExecStart={}\nRestart=on-failure\nRestartSec=5\n\
             # The follow-ups run claude, which needs its credentials: put ANTHROPIC_API_KEY (or\n\
             # what your set-up uses) in ~/.config/hooks-app/env.\n\
             EnvironmentFile=-%h/.config/hooks-app/env\n\n\
             [Install]\nWantedBy=default.target\n",
            exec.join(" ")
        )
    })
}

fn systemd_quote(s: &str) -> String {
    if !s.is_empty() && !s.contains([' ', '"', '\'', '\\', '%', '$', ';']) {
        s.to_owned()
    } else {
        format!(
            "\"{}\"",
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('%', "%%")
                .replace('$', "$$")
        )
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Holds a shared lock on `serve.lock` while a daemon runs, so `status` and `doctor` can
/// tell whether one is running (several may run at once).
pub struct DaemonMark(#[allow(dead_code)] std::fs::File);

pub fn mark_running(dir: &Path) -> Option<DaemonMark> {
    let f = crate::fsutil::open_lock(&dir.join("serve.lock")).ok()?;
    f.lock_shared().ok()?;
    Some(DaemonMark(f))
}

/// Whether some daemon holds `serve.lock`.
pub fn daemon_running(dir: &Path) -> bool {
    let Ok(f) = hooks_platform::open_regular(&dir.join("serve.lock"), true) else {
        return false;
    };
    match f.try_lock() {
        Ok(()) => {
            let _ = f.unlock();
            false
        }
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launchd agent as macOS reads it: a plist that Python's plistlib (the format's
    /// reference reader here) parses, running `serve` with every argument intact.
    #[test]
    fn the_launchd_agent_is_a_valid_plist_that_runs_serve() {
        let mut ctx = crate::compose::tests_ctx();
        ctx.data_dir = "/Users/ada/Library/Application Support/hooks & co".into();
        let plist = unit_text_for(&ctx, true).unwrap();
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import json, plistlib, sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(plist.as_bytes())?;
                c.wait_with_output()
            })
            .expect("python3");
        assert!(out.status.success(), "{plist}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["Label"], "dev.hooks-app.serve");
        assert_eq!(v["RunAtLoad"], true);
        let args: Vec<&str> = v["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args.last(), Some(&"serve"), "{args:?}");
        let at = args.iter().position(|a| *a == "--data-dir").unwrap();
        assert_eq!(
            args[at + 1],
            "/Users/ada/Library/Application Support/hooks & co"
        );
        assert!(args.contains(&"--claude-bin"), "{args:?}");
        assert_eq!(
            v["StandardErrorPath"],
            "/Users/ada/Library/Application Support/hooks & co/serve.log"
        );
        let unit = unit_text_for(&ctx, false).unwrap();
        assert!(
            unit.contains("ExecStart=")
                && unit.contains("\"/Users/ada/Library/Application Support/hooks & co\""),
            "{unit}"
        );
    }
}
