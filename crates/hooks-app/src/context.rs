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
use hooks_store_postgres::{PgOptions, PgStore};

/// Set in a follow-up's environment: its own Stop must not queue it again.
pub use hooks_runner_claude::FOLLOW_UP_ENV;

use crate::cli::Global;
use crate::fsutil::shell_quote;
use crate::fsutil::write_private;
use crate::prompts::FilePrompts;
use crate::{AppError, AppResult};

/// The resolved paths.
#[derive(Debug, Clone)]
pub struct Context {
    pub data_dir: PathBuf,
    /// Whether the data folder was chosen by flag or variable (and must be passed on to
    /// the hook command that `install` writes).
    pub data_dir_explicit: bool,
    /// Where prompt files are found after the conversation's own project (and where no
    /// approval is needed): `--workspace`, else the one `init` or `install` recorded, else
    /// the current folder.
    pub workspace: PathBuf,
    /// `--workspace`, else the current folder: the project `install --scope project|local`
    /// edits, and the workspace `init` and `install` record.
    pub here: PathBuf,
    pub claude_home: PathBuf,
    pub claude_bin: PathBuf,
    /// The last line that marks a conversation as done.
    pub done_marker: String,
    /// What resumes conversations.
    pub runner: RunnerChoice,
    /// Where hooks, the queue and session state live.
    pub store: StoreChoice,
    /// This host's id in a shared store.
    pub host_id: String,
    pub host_id_explicit: bool,
    /// Fire entries queued on any host.
    pub any_host: bool,
    /// Poll the store rather than listen for its changes.
    pub store_poll: bool,
}

/// The store adapter chosen, with what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The JSON file store in a folder; `explicit` when chosen by `--store json:DIR`.
    Json { dir: PathBuf, explicit: bool },
    /// PostgreSQL; `arg` is the option as given (the URL, or `@FILE` holding it).
    Postgres { url: String, arg: String },
}

impl StoreChoice {
    /// Reads `--store`: `json:DIR`, a `postgres://` URL, or `@FILE` holding either.
    pub fn parse(arg: &str) -> AppResult<Self> {
        let rule = "must be json:DIR, a postgres:// URL, or @FILE holding one";
        let text = match arg.strip_prefix('@') {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    AppError::invalid(format!("store: {rule}: could not read {file}: {e}"))
                })?;
                let line = text.trim().to_owned();
                if line.is_empty() || line.contains('\n') || line.starts_with('@') {
                    return Err(AppError::invalid(format!(
                        "store: {rule}: {file} must hold one line, a store URL"
                    )));
                }
                line
            }
            None => arg.trim().to_owned(),
        };
        if let Some(dir) = text.strip_prefix("json:") {
            if dir.is_empty() {
                return Err(AppError::invalid(format!(
                    "store: {rule} (json: needs a folder)"
                )));
            }
            return Ok(StoreChoice::Json {
                dir: absolute(Path::new(dir))?,
                explicit: true,
            });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(StoreChoice::Postgres {
                url: text,
                arg: arg.trim().to_owned(),
            });
        }
        Err(AppError::invalid(format!(
            "store: {rule} (got {:?})",
            hooks_store_postgres::redact(&text)
        )))
    }

    /// The store for people: a folder, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            StoreChoice::Json { dir, .. } => format!("json:{}", dir.display()),
            StoreChoice::Postgres { url, .. } => hooks_store_postgres::redact(url),
        }
    }
}

/// The store through its ports: its data, the sessions' durable state kept beside it, and
/// what a daemon needs besides.
#[derive(Clone)]
pub struct Store {
    pub data: Arc<dyn HookStore>,
    pub sessions: Arc<dyn SessionStore>,
    pub signals: Arc<dyn StoreSignals>,
    /// The store's clock less this host's: a shared store's time is the one that counts.
    pub clock_offset: time::Duration,
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
        let here = match &g.workspace {
            Some(w) => absolute(w)?,
            None => std::env::current_dir()
                .map_err(|e| AppError::runtime(format!("current directory: {e}")))?,
        };
        let workspace = match &g.workspace {
            Some(_) => here.clone(),
            None => recorded_workspace(&data_dir).unwrap_or_else(|| here.clone()),
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
            crate::options::RunnerKind::Claude => RunnerChoice::Claude,
            crate::options::RunnerKind::Webhook => {
                let url = g.runner_url.clone().ok_or_else(|| {
                    AppError::invalid(
                        "runnerUrl: --runner webhook needs --runner-url URL (or HOOKS_RUNNER_URL)",
                    )
                })?;
                let token_file = g.runner_token_file.as_deref().map(absolute).transpose()?;
                RunnerChoice::Webhook { url, token_file }
            }
        };
        let store = match g.store.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(arg) => StoreChoice::parse(arg)?,
            None => StoreChoice::Json {
                dir: data_dir.clone(),
                explicit: false,
            },
        };
        let host_id = match g.host_id.as_deref().map(str::trim) {
            Some(h) if !h.is_empty() => {
                if h.len() > 253 || h.chars().any(|c| c.is_control() || c.is_whitespace()) {
                    return Err(AppError::invalid(format!(
                        "hostId: must be up to 253 characters without spaces (got {h:?})"
                    )));
                }
                h.to_owned()
            }
            _ => host_name(),
        };
        Ok(Self {
            data_dir,
            data_dir_explicit,
            workspace,
            here,
            claude_home,
            claude_bin,
            done_marker,
            runner,
            store,
            host_id_explicit: g.host_id.as_deref().is_some_and(|h| !h.trim().is_empty()),
            host_id,
            any_host: g.any_host,
            store_poll: g.store_poll,
        })
    }

    /// The store chosen (seeded on first use: a new JSON file, a new database's schema),
    /// as the ports see it.
    pub fn open_store(&self) -> AppResult<Store> {
        self.open(&self.store, true)
    }

    /// An error naming the data folder when the JSON store chosen is not there yet (a
    /// database is asked when it is opened).
    pub fn require_store(&self) -> AppResult {
        match &self.store {
            StoreChoice::Json { dir, .. } if !dir.join("hooks.json").is_file() => {
                Err(AppError::runtime(format!(
                    "no hooks-app data in {} (run hooks-app init)",
                    dir.display()
                )))
            }
            _ => Ok(()),
        }
    }

    /// The store only if it exists already: nothing is created, seeded or migrated.
    pub fn existing_store(&self) -> AppResult<Store> {
        self.open(&self.store, false)
    }

    /// Applies the schema migrations a database store lacks: the versions applied and the
    /// version it is at. A JSON store has none (its file is brought up to date as written).
    pub fn migrate_store(&self) -> AppResult<(Vec<i32>, i32)> {
        match &self.store {
            StoreChoice::Json { .. } => Ok((Vec::new(), 0)),
            StoreChoice::Postgres { url, .. } => {
                let pg = PgStore::connect(self.pg_options(url))?;
                let applied = pg.migrate()?;
                Ok((applied, pg.schema_version()?.0))
            }
        }
    }

    fn pg_options(&self, url: &str) -> PgOptions {
        PgOptions {
            any_host: self.any_host,
            listen: !self.store_poll,
            ..PgOptions::new(url, &self.host_id)
        }
    }

    /// Opens any store; with `create`, a new one is seeded (or migrated).
    pub fn open(&self, choice: &StoreChoice, create: bool) -> AppResult<Store> {
        Ok(match choice {
            StoreChoice::Json { dir, .. } => {
                let json = Arc::new(
                    if create {
                        JsonStore::open(dir, SystemClock.now())?
                    } else {
                        JsonStore::open_existing(dir)?
                    }
                    .with_max_bytes(store_max_bytes()?),
                );
                Store {
                    data: json.clone(),
                    sessions: Arc::new(SessionFiles::new(dir)),
                    signals: json,
                    clock_offset: time::Duration::ZERO,
                }
            }
            StoreChoice::Postgres { url, .. } => {
                let pg = if create {
                    PgStore::open(self.pg_options(url))?
                } else {
                    let pg = PgStore::connect(self.pg_options(url))?;
                    let (have, _) = pg.schema_version()?;
                    if have == 0 {
                        return Err(AppError::runtime(format!(
                            "{}: the database has no hooks-app tables yet: run `hooks-app store migrate`",
                            pg.location()
                        )));
                    }
                    pg
                };
                let pg = Arc::new(pg);
                Store {
                    clock_offset: pg.clock_offset(),
                    data: pg.clone(),
                    sessions: pg.clone(),
                    signals: pg,
                }
            }
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
            prompts: Arc::new(FilePrompts::new(&self.workspace, &self.data_dir)),
            clock: Arc::new(StoreClock(store.clock_offset)),
        };
        Ok((Service::new(ports, config), store))
    }

    /// The options that pass this context's choices on to another hooks-app: the runner,
    /// and the store where it was chosen (a URL with a password only by its file).
    pub fn child_args(&self) -> Vec<String> {
        let mut a = self.runner_args();
        match &self.store {
            StoreChoice::Json {
                explicit: false, ..
            } => {}
            StoreChoice::Json { dir, .. } => {
                a.push("--store".into());
                a.push(format!("json:{}", dir.display()));
            }
            // A URL with a password is passed on by the environment only.
            StoreChoice::Postgres { arg, url } => {
                if arg.starts_with('@') || hooks_store_postgres::redact(url) == *url {
                    a.push("--store".into());
                    a.push(arg.clone());
                }
            }
        }
        if self.host_id_explicit {
            a.push("--host-id".into());
            a.push(self.host_id.clone());
        }
        if self.any_host {
            a.push("--any-host".into());
        }
        if self.store_poll {
            a.push("--store-poll".into());
        }
        a
    }

    /// `HOOKS_STORE` for a child, when the store's URL carries a password.
    pub fn store_secret_env(&self) -> Option<(&'static str, String)> {
        match &self.store {
            StoreChoice::Postgres { url, arg }
                if !arg.starts_with('@') && hooks_store_postgres::redact(url) != *url =>
            {
                Some(("HOOKS_STORE", url.clone()))
            }
            _ => None,
        }
    }

    /// Refuses to write a store password where others may read it (Claude Code's settings,
    /// a service unit): such a URL is to be given as `--store @FILE`.
    pub fn check_store_secret(&self) -> AppResult {
        match &self.store {
            StoreChoice::Postgres { url, arg }
                if !arg.starts_with('@') && hooks_store_postgres::redact(url) != *url =>
            {
                Err(AppError::invalid(
                    "store: the URL carries a password, which would be written into a settings file: \
                     put the URL in a file only you can read and pass --store @FILE",
                ))
            }
            _ => Ok(()),
        }
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
        self.check_store_secret()?;
        for a in self.child_args() {
            cmd.push(' ');
            cmd.push_str(&shell_quote(&a));
        }
        Ok(cmd)
    }
}

/// The file that records the workspace `init` or `install` was run for.
pub const WORKSPACE_FILE: &str = "workspace.json";

/// The workspace recorded in the data folder, if any.
pub fn recorded_workspace(data_dir: &Path) -> Option<PathBuf> {
    let bytes = hooks_platform::read_regular(
        &data_dir.join(WORKSPACE_FILE),
        hooks_platform::ReadLimit::bytes(64 * 1024),
    )
    .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let p = PathBuf::from(v.get("workspace")?.as_str()?);
    p.is_absolute().then_some(p)
}

/// Records `here` as the workspace every later command and daemon of this data folder
/// uses (unless given `--workspace`): a daemon started from some project's conversation
/// must not take that project for the user's own folder.
pub fn record_workspace(ctx: &mut Context) -> AppResult {
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "workspace": ctx.here.to_string_lossy(),
    }))
    .unwrap_or_default();
    write_private(&ctx.data_dir.join(WORKSPACE_FILE), &format!("{text}\n"))?;
    ctx.workspace = ctx.here.clone();
    Ok(())
}

/// The largest `hooks.json` read: `HOOKS_STORE_MAX_MB` megabytes, 256 unless set.
fn store_max_bytes() -> AppResult<u64> {
    match std::env::var("HOOKS_STORE_MAX_MB") {
        Err(_) => Ok(hooks_store_json::DEFAULT_MAX_STORE_BYTES),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|mb| (1..=1_048_576).contains(mb))
            .map(|mb| mb * 1024 * 1024)
            .ok_or_else(|| {
                AppError::invalid(format!(
                    "HOOKS_STORE_MAX_MB: must be a whole number of megabytes from 1 to 1048576 (got {v:?})"
                ))
            }),
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

/// The system clock moved by a shared store's offset: the store's time.
pub struct StoreClock(pub time::Duration);

impl Clock for StoreClock {
    fn now(&self) -> Timestamp {
        SystemClock.now() + self.0
    }

    fn day(&self, zone: Option<&str>, at: Timestamp) -> Result<hooks_core::cost::Day, String> {
        SystemClock.day(zone, at)
    }

    fn offset(&self, zone: Option<&str>, at: Timestamp) -> Result<i32, String> {
        SystemClock.offset(zone, at)
    }
}

/// The system clock, in UTC; days in the tz database's zones (`/usr/share/zoneinfo`).
pub struct SystemClock;

/// A zone of the tz database (`None`: this machine's).
fn time_zone(zone: Option<&str>) -> Result<tz::TimeZone, String> {
    match zone {
        None => tz::TimeZone::local().map_err(|e| format!("this machine's time zone: {e}")),
        Some(z) => {
            let z = hooks_core::cost::Budget::validate_zone(z).map_err(|e| e.rule)?;
            tz::TimeZone::from_posix_tz(&z).map_err(|_| {
                format!("unknown time zone {z:?} (not in the tz database, /usr/share/zoneinfo)")
            })
        }
    }
}

fn zone_offset(tz: &tz::TimeZone, t: Timestamp) -> Result<i32, String> {
    tz.find_local_time_type(t.unix_timestamp())
        .map(|l| l.ut_offset())
        .map_err(|e| e.to_string())
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        time::OffsetDateTime::now_utc()
    }

    fn offset(&self, zone: Option<&str>, at: Timestamp) -> Result<i32, String> {
        zone_offset(&time_zone(zone)?, at)
    }

    fn day(&self, zone: Option<&str>, at: Timestamp) -> Result<hooks_core::cost::Day, String> {
        use hooks_core::cost::Day;
        let tz = time_zone(zone)?;
        let offset = |t: Timestamp| zone_offset(&tz, t);
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
    // Read once: the hook's path asks for it more than once (the host id, the lease host).
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| hooks_platform::process::hostname().unwrap_or_else(|| "host".into()))
        .clone()
}

/// A claim owner unique to this process: host, pid and a nonce.
pub fn owner_id() -> String {
    let nonce = time::OffsetDateTime::now_utc().unix_timestamp_nanos() % 1_000_000_000;
    format!("{}:{}:{nonce}", host_name(), std::process::id())
}

/// A context with every default, for tests.
#[cfg(test)]
pub fn tests_ctx() -> Context {
    store_tests::ctx(StoreChoice::Json {
        dir: "/d".into(),
        explicit: false,
    })
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
        let mut ctx = super::store_tests::ctx(StoreChoice::Json {
            dir: "/d".into(),
            explicit: false,
        });
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

#[cfg(test)]
mod store_tests {
    use super::*;

    /// A context with every default but its store.
    pub(super) fn ctx(store: StoreChoice) -> Context {
        Context {
            data_dir: "/d".into(),
            data_dir_explicit: false,
            workspace: "/w".into(),
            here: "/w".into(),
            claude_home: "/c".into(),
            claude_bin: "claude".into(),
            done_marker: "DONE".into(),
            runner: RunnerChoice::Claude,
            store,
            host_id: "h".into(),
            host_id_explicit: false,
            any_host: false,
            store_poll: false,
        }
    }

    #[test]
    fn store_urls_are_read_and_bad_ones_named() {
        assert_eq!(
            StoreChoice::parse("json:/srv/hooks").unwrap(),
            StoreChoice::Json {
                dir: "/srv/hooks".into(),
                explicit: true
            }
        );
        let pg = StoreChoice::parse("postgresql://u@db:5432/hooks?sslmode=require").unwrap();
        assert!(matches!(pg, StoreChoice::Postgres { .. }));
        for bad in ["json:", "mysql://x", "hooks.json", "@/nonexistent/file"] {
            let e = StoreChoice::parse(bad).unwrap_err().message;
            assert!(
                e.starts_with("store: must be json:DIR, a postgres:// URL"),
                "{bad}: {e}"
            );
        }
        let e = StoreChoice::parse("redis://u:secret@x")
            .unwrap_err()
            .message;
        assert!(!e.contains("secret"), "a password is never echoed: {e}");
    }

    #[test]
    fn a_store_travels_to_children_but_a_password_only_by_file_or_environment() {
        let mut c = ctx(StoreChoice::parse("postgres://app@db/hooks").unwrap());
        c.host_id_explicit = true;
        c.any_host = true;
        assert_eq!(
            c.child_args(),
            [
                "--store",
                "postgres://app@db/hooks",
                "--host-id",
                "h",
                "--any-host"
            ]
        );
        assert!(
            c.self_command()
                .unwrap()
                .contains(" --store postgres://app@db/hooks")
        );
        assert_eq!(c.store_secret_env(), None);

        let c = ctx(StoreChoice::parse("postgres://app:s3cret@db/hooks").unwrap());
        assert!(c.child_args().is_empty(), "not on a command line");
        assert_eq!(
            c.store_secret_env(),
            Some(("HOOKS_STORE", "postgres://app:s3cret@db/hooks".to_owned()))
        );
        let e = c.self_command().unwrap_err().message;
        assert!(
            e.starts_with("store: the URL carries a password") && e.contains("--store @FILE"),
            "{e}"
        );

        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("url");
        std::fs::write(&f, "postgres://app:s3cret@db/hooks\n").unwrap();
        let arg = format!("@{}", f.display());
        let c = ctx(StoreChoice::parse(&arg).unwrap());
        assert_eq!(c.child_args(), ["--store", arg.as_str()]);
        assert!(c.self_command().is_ok());
        assert_eq!(c.store.describe(), "postgres://app:***@db/hooks");
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> AppResult<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::runtime(format!("could not start the runtime: {e}")))?;
    Ok(rt.block_on(f))
}

/// A service for commands that run nothing.
pub fn service(ctx: &Context) -> AppResult<(Service, Store)> {
    let mut config = Config::new(owner_id());
    config.prices = crate::prices::load(&ctx.data_dir)?;
    ctx.service(ctx.runner(Duration::from_secs(1))?, config)
}
