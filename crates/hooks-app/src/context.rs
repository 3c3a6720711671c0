//! Where things are, resolved once from flags, environment and defaults, and the adapters
//! built from them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hooks_core::ports::{Clock, HookStore, Runner, SessionStore, StoreSignals};
use hooks_core::service::{Config, Ports, Service};
use hooks_core::stamp::Timestamp;
use hooks_meta::MetaStore;
use hooks_runner_claude::{ClaudeRunner, RunnerConfig};
use hooks_runner_webhook::{WebhookConfig, WebhookRunner};
use hooks_store_json::{JsonStore, SessionFiles};

use crate::cli::Global;
use crate::prompts::FilePrompts;
use crate::{AppError, AppResult};

/// The resolved paths.
#[derive(Debug, Clone)]
pub struct Context {
    pub data_dir: PathBuf,
    /// Whether the data folder was chosen by flag or variable (and must be passed on to
    /// the hook command that `install` writes).
    pub data_dir_explicit: bool,
    pub workspace: PathBuf,
    pub claude_home: PathBuf,
    pub claude_bin: PathBuf,
    /// The last line that marks a conversation as done.
    pub done_marker: String,
    /// What resumes conversations.
    pub runner: RunnerChoice,
}

/// The store through its ports: its data, the sessions' durable state kept beside it, and
/// what a daemon needs besides.
#[derive(Clone)]
pub struct Store {
    pub data: Arc<dyn HookStore>,
    pub sessions: Arc<dyn SessionStore>,
    pub signals: Arc<dyn StoreSignals>,
}

impl std::ops::Deref for Store {
    type Target = dyn HookStore;
    fn deref(&self) -> &Self::Target {
        &*self.data
    }
}

/// The runner adapter chosen, with what it needs.
#[derive(Debug, Clone)]
pub enum RunnerChoice {
    Claude,
    Webhook {
        url: String,
        /// The file holding the token; without one, HOOKS_RUNNER_TOKEN (read when the
        /// runner is made, so a command that runs nothing never needs it).
        token_file: Option<PathBuf>,
    },
}

fn home() -> AppResult<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| AppError::runtime("HOME is not set: pass --data-dir and --claude-home"))
}

fn absolute(p: &Path) -> AppResult<PathBuf> {
    std::path::absolute(p).map_err(|e| AppError::invalid(format!("{}: {e}", p.display())))
}

impl Context {
    pub fn resolve(g: &Global) -> AppResult<Self> {
        let data_dir_explicit = g.data_dir.is_some();
        let data_dir = match &g.data_dir {
            Some(d) => absolute(d)?,
            None => match std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
                Some(x) => PathBuf::from(x).join("hooks-app"),
                None => home()?.join(".local/share/hooks-app"),
            },
        };
        let workspace = match &g.workspace {
            Some(w) => absolute(w)?,
            None => std::env::current_dir()
                .map_err(|e| AppError::runtime(format!("current directory: {e}")))?,
        };
        let claude_home = match g.claude_home.as_ref().filter(|p| !p.as_os_str().is_empty()) {
            Some(c) => absolute(c)?,
            None => home()?.join(".claude"),
        };
        let claude_bin = g
            .claude_bin
            .clone()
            .unwrap_or_else(|| PathBuf::from("claude"));
        let done_marker = hooks_core::validate_marker(&g.done_marker)?;
        let runner = match g.runner {
            crate::cli::RunnerKind::Claude => RunnerChoice::Claude,
            crate::cli::RunnerKind::Webhook => {
                let url = g.runner_url.clone().ok_or_else(|| {
                    AppError::invalid(
                        "runnerUrl: --runner webhook needs --runner-url URL (or HOOKS_RUNNER_URL)",
                    )
                })?;
                let token_file = g.runner_token_file.as_deref().map(absolute).transpose()?;
                RunnerChoice::Webhook { url, token_file }
            }
        };
        Ok(Self {
            data_dir,
            data_dir_explicit,
            workspace,
            claude_home,
            claude_bin,
            done_marker,
            runner,
        })
    }

    /// The store (the JSON file in the data folder, seeded on first use), as the ports
    /// see it.
    pub fn open_store(&self) -> AppResult<Store> {
        let json = Arc::new(JsonStore::open(&self.data_dir, SystemClock.now())?);
        Ok(Store {
            data: json.clone(),
            sessions: Arc::new(SessionFiles::new(&self.data_dir)),
            signals: json,
        })
    }

    /// The store only if it exists already: nothing is created or seeded.
    pub fn existing_store(&self) -> AppResult<Store> {
        let json = Arc::new(JsonStore::open_existing(&self.data_dir)?);
        Ok(Store {
            data: json.clone(),
            sessions: Arc::new(SessionFiles::new(&self.data_dir)),
            signals: json,
        })
    }

    /// What this host can see of sessions, over the store's session state.
    pub fn meta(&self, store: &Store) -> MetaStore {
        MetaStore::new(store.sessions.clone(), &self.claude_home).with_host(host_name())
    }

    /// The claude CLI runner (also what `doctor` asks for claude's version).
    pub fn claude_runner(&self, timeout: Duration) -> ClaudeRunner {
        ClaudeRunner::new(RunnerConfig {
            program: self.claude_bin.clone(),
            timeout,
            ..RunnerConfig::default()
        })
    }

    /// The runner chosen, with `timeout` for one run.
    pub fn runner(&self, timeout: Duration) -> AppResult<Arc<dyn Runner>> {
        Ok(match &self.runner {
            RunnerChoice::Claude => Arc::new(self.claude_runner(timeout)),
            RunnerChoice::Webhook { url, token_file } => {
                Arc::new(WebhookRunner::new(WebhookConfig {
                    url: url.clone(),
                    token: webhook_token(token_file.as_deref())?,
                    timeout,
                })?)
            }
        })
    }

    /// The core service over the real adapters.
    pub fn service(&self, runner: Arc<dyn Runner>, config: Config) -> AppResult<(Service, Store)> {
        let store = self.open_store()?;
        let ports = Ports {
            store: store.data.clone(),
            meta: Arc::new(self.meta(&store)),
            runner,
            prompts: Arc::new(FilePrompts::new(&self.workspace)),
            clock: Arc::new(SystemClock),
        };
        Ok((Service::new(ports, config), store))
    }

    /// The runner options that pass this choice on to another hooks-app: the token only
    /// by its file (or by HOOKS_RUNNER_TOKEN, in the environment a child inherits).
    pub fn runner_args(&self) -> Vec<String> {
        match &self.runner {
            RunnerChoice::Claude => Vec::new(),
            RunnerChoice::Webhook {
                url, token_file, ..
            } => {
                let mut a = vec![
                    "--runner".to_owned(),
                    "webhook".to_owned(),
                    "--runner-url".to_owned(),
                    url.clone(),
                ];
                if let Some(f) = token_file {
                    a.push("--runner-token-file".to_owned());
                    a.push(f.to_string_lossy().into_owned());
                }
                a
            }
        }
    }

    /// The shell-quoted absolute path of this binary, as hook commands name it.
    pub fn self_command(&self) -> AppResult<String> {
        let exe = std::env::current_exe()
            .map_err(|e| AppError::runtime(format!("cannot find this program's path: {e}")))?;
        let mut cmd = shell_quote(&exe.to_string_lossy());
        if self.data_dir_explicit {
            cmd.push_str(" --data-dir ");
            cmd.push_str(&shell_quote(&self.data_dir.to_string_lossy()));
        }
        if self.done_marker != hooks_core::DONE_MARKER {
            cmd.push_str(" --done-marker ");
            cmd.push_str(&shell_quote(&self.done_marker));
        }
        for a in self.runner_args() {
            cmd.push(' ');
            cmd.push_str(&shell_quote(&a));
        }
        Ok(cmd)
    }
}

/// Quotes `s` for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The webhook's bearer token: the file's one line, else HOOKS_RUNNER_TOKEN, else none.
pub fn webhook_token(file: Option<&Path>) -> AppResult<Option<String>> {
    let token = match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| {
                    AppError::invalid(format!(
                        "runnerTokenFile: could not read {}: {e}",
                        f.display()
                    ))
                })?
                .trim()
                .to_owned(),
        ),
        None => std::env::var("HOOKS_RUNNER_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
    };
    if token
        .as_deref()
        .is_some_and(|t| t.is_empty() || t.contains(['\r', '\n']))
    {
        return Err(AppError::invalid(
            "runnerTokenFile: the token must be one non-empty line",
        ));
    }
    Ok(token)
}

/// The system clock, in UTC; days in the tz database's zones (`/usr/share/zoneinfo`).
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        time::OffsetDateTime::now_utc()
    }

    fn day(&self, zone: Option<&str>, at: Timestamp) -> Result<hooks_core::cost::Day, String> {
        use hooks_core::cost::Day;
        let tz = match zone {
            None => tz::TimeZone::local().map_err(|e| format!("this machine's time zone: {e}"))?,
            Some(z) => {
                let z = hooks_core::cost::Budget::validate_zone(z).map_err(|e| e.rule)?;
                tz::TimeZone::from_posix_tz(&z).map_err(|_| {
                    format!("unknown time zone {z:?} (not in the tz database, /usr/share/zoneinfo)")
                })?
            }
        };
        let offset = |t: Timestamp| {
            tz.find_local_time_type(t.unix_timestamp())
                .map(|l| l.ut_offset())
                .map_err(|e| e.to_string())
        };
        // The date by the offset at `at`; each midnight by the offset in force at it, so a
        // day that changes to or from summer time has its true length.
        let midnight = |date: time::Date| -> Result<Timestamp, String> {
            let wall = time::PrimitiveDateTime::new(date, time::Time::MIDNIGHT).assume_utc();
            let mut t = wall - time::Duration::seconds(i64::from(offset(wall)?));
            for _ in 0..2 {
                t = wall - time::Duration::seconds(i64::from(offset(t)?));
            }
            Ok(t)
        };
        let date = Day::at_offset(at, offset(at)?).date;
        let next = date
            .next_day()
            .ok_or_else(|| "a date past the calendar's end".to_owned())?;
        Ok(Day {
            date,
            start: midnight(date)?,
            end: midnight(next)?,
        })
    }
}

/// This host's name, as leases and claim owners carry it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// A claim owner unique to this process: host, pid and a nonce.
pub fn owner_id() -> String {
    let nonce = time::OffsetDateTime::now_utc().unix_timestamp_nanos() % 1_000_000_000;
    format!("{}:{}:{nonce}", host_name(), std::process::id())
}

/// Replaces `path` with `text` atomically (a temp file beside it, renamed over it), the file
/// private to its owner (0600), creating its folder if need be.
pub fn write_private(path: &Path, text: &str) -> AppResult {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("tmp"),
        std::process::id()
    ));
    std::fs::create_dir_all(dir)
        .and_then(|()| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            std::fs::rename(&tmp, path)
        })
        .map_err(|e| AppError::runtime(format!("could not write {}: {e}", path.display())))
}

/// Opens (creating, 0600) a file that is only ever locked, never written.
pub fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    fn day(zone: &str, at: &str) -> Result<hooks_core::cost::Day, String> {
        SystemClock.day(Some(zone), hooks_core::stamp::parse(at).expect("a time"))
    }

    #[test]
    fn days_follow_the_zone_and_its_summer_time() {
        let rows: &[(&str, &str, &str, &str, &str, i64)] = &[
            // zone, instant, date there, start, end, hours long
            (
                "Asia/Kolkata",
                "2026-12-03T20:00:00+0000",
                "2026-12-04",
                "2026-12-03T18:30:00+0000",
                "2026-12-04T18:30:00+0000",
                24,
            ),
            (
                "UTC",
                "2026-12-03T23:59:59+0000",
                "2026-12-03",
                "2026-12-03T00:00:00+0000",
                "2026-12-04T00:00:00+0000",
                24,
            ),
            (
                "Europe/Berlin",
                "2026-03-29T12:00:00+0000",
                "2026-03-29",
                "2026-03-28T23:00:00+0000",
                "2026-03-29T22:00:00+0000",
                23,
            ),
            (
                "Europe/Berlin",
                "2026-10-25T12:00:00+0000",
                "2026-10-25",
                "2026-10-24T22:00:00+0000",
                "2026-10-25T23:00:00+0000",
                25,
            ),
            (
                "America/Los_Angeles",
                "2026-12-04T03:00:00+0000",
                "2026-12-03",
                "2026-12-03T08:00:00+0000",
                "2026-12-04T08:00:00+0000",
                24,
            ),
        ];
        for (zone, at, date, start, end, hours) in rows {
            let d = day(zone, at).expect(zone);
            assert_eq!(
                (
                    d.date.to_string(),
                    hooks_core::stamp::format(d.start),
                    hooks_core::stamp::format(d.end),
                    (d.end - d.start).whole_hours()
                ),
                (
                    (*date).to_owned(),
                    (*start).to_owned(),
                    (*end).to_owned(),
                    *hours
                ),
                "{zone} {at}"
            );
        }
        let e = day("Mars/Olympus", "2026-12-03T20:00:00+0000").unwrap_err();
        assert!(e.contains("unknown time zone \"Mars/Olympus\""), "{e}");
        let e = day("../../etc/passwd", "2026-12-03T20:00:00+0000").unwrap_err();
        assert!(e.contains("must be a time zone name"), "{e}");
        assert!(
            SystemClock.day(None, SystemClock.now()).is_ok(),
            "this machine's own zone"
        );
    }
}

#[cfg(test)]
mod runner_tests {
    use super::*;

    #[test]
    fn the_webhook_choice_travels_to_hook_commands_and_daemons() {
        let mut ctx = Context {
            data_dir: "/d".into(),
            data_dir_explicit: false,
            workspace: "/w".into(),
            claude_home: "/c".into(),
            claude_bin: "claude".into(),
            done_marker: "DONE".into(),
            runner: RunnerChoice::Claude,
        };
        assert!(ctx.runner_args().is_empty());
        ctx.runner = RunnerChoice::Webhook {
            url: "https://backend.example/runs?team=a b".into(),
            token_file: Some("/etc/hooks app/token".into()),
        };
        assert_eq!(
            ctx.runner_args(),
            [
                "--runner",
                "webhook",
                "--runner-url",
                "https://backend.example/runs?team=a b",
                "--runner-token-file",
                "/etc/hooks app/token"
            ]
        );
        let cmd = ctx.self_command().unwrap();
        assert!(
            cmd.ends_with(
                " --runner webhook --runner-url 'https://backend.example/runs?team=a b' --runner-token-file '/etc/hooks app/token'"
            ),
            "{cmd}"
        );
    }
}
