//! The adapters built from a [`Context`]: the store behind its ports, the session meta,
//! the runners, and the service that composes them. The only code that names them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hooks_core::ports::{Clock, Runner, StoreSignals};
use hooks_core::service::{Config, Ports, Service};
use hooks_meta::MetaStore;
use hooks_runner_claude::{ClaudeRunner, RunnerConfig};
use hooks_runner_webhook::{WebhookConfig, WebhookRunner};
use hooks_store_json::{JsonStore, SessionFiles};
use hooks_store_postgres::{PgOptions, PgStore};

/// Set in a follow-up's environment: its own Stop must not queue it again.
pub use hooks_runner_claude::FOLLOW_UP_ENV;

use super::adapters::Store;
use super::choice::{RunnerChoice, StoreChoice};
use super::clock::{StoreClock, SystemClock};
use super::context::{Context, host_name, owner_id};
use crate::{AppError, AppResult};
use hooks_prompts::FilePrompts;

impl Context {
    /// The store chosen (seeded on first use: a new JSON file, a new database's schema,
    /// unless the command only reads: [`Context::read_only`]), as the ports see it.
    pub fn open_store(&self) -> AppResult<Store> {
        self.open(&self.store, !self.read_only)
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
            StoreChoice::Json { .. } | StoreChoice::Custom { .. } => Ok((Vec::new(), 0)),
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
            StoreChoice::Custom { name, arg } => self.open_custom(name, arg, create)?,
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

    /// What a team's store adapter is told: every store option of this context.
    fn store_open<'a>(&'a self, arg: &'a str, create: bool) -> super::adapters::StoreOpen<'a> {
        let mut at = super::adapters::StoreOpen::new(arg, &self.host_id, &self.data_dir, create);
        at.any_host = self.any_host;
        at.poll = self.store_poll;
        at
    }

    fn custom_adapter(name: &str) -> AppResult<Arc<dyn super::adapters::StoreAdapter>> {
        super::adapters::Adapters::registered()
            .find_store(name)
            .cloned()
            .ok_or_else(|| AppError::invalid(format!("store: no store named {name} in this build")))
    }

    fn open_custom(&self, name: &str, arg: &str, create: bool) -> AppResult<Store> {
        Self::custom_adapter(name)?
            .open(&self.store_open(arg, create))
            .map_err(|e| AppError::runtime(format!("store {name}:{arg}: {e}")))
    }

    /// `store migrate` for a team's store: what its adapter did, or `None` for nothing to
    /// do (see [`super::adapters::StoreAdapter::migrate`]).
    pub fn migrate_custom(&self) -> AppResult<Option<String>> {
        let StoreChoice::Custom { name, arg } = &self.store else {
            return Ok(None);
        };
        Self::custom_adapter(name)?
            .migrate(&self.store_open(arg, true))
            .map_err(|e| AppError::runtime(format!("store {name}:{arg}: {e}")))
    }

    /// What this host can see of sessions, over the store's session state.
    pub fn meta(&self, store: &Store) -> MetaStore {
        MetaStore::new(store.sessions.clone(), &self.claude_home)
            .with_codex_home(&self.codex_home)
            .with_host(host_name())
    }

    /// The prompt files: the workspace's, and a project's once approved (also what `doctor`
    /// asks where a hook's prompt comes from).
    pub fn prompts(&self) -> FilePrompts {
        FilePrompts::new(&self.workspace, &self.data_dir)
    }

    /// The claude CLI runner (also what `doctor` asks for claude's version).
    pub fn claude_runner(&self, timeout: Duration) -> ClaudeRunner {
        ClaudeRunner::new(RunnerConfig {
            program: self.claude_bin.clone(),
            timeout,
            ..RunnerConfig::default()
        })
    }

    /// The Codex CLI runner.
    fn codex_runner(&self, timeout: Duration) -> hooks_runner_codex::CodexRunner {
        hooks_runner_codex::CodexRunner::new(hooks_runner_codex::CodexConfig {
            program: self
                .codex_bin
                .clone()
                .unwrap_or_else(|| std::path::PathBuf::from("codex")),
            timeout,
            codex_home: Some(self.codex_home.clone()),
            ..hooks_runner_codex::CodexConfig::default()
        })
    }

    /// The runner chosen, with `timeout` for one run. The agent CLIs (`claude`, the
    /// default, and `codex`) resume each conversation with its own agent's CLI: a Codex
    /// thread with codex, a Claude Code session with claude; a webhook or a team's runner
    /// takes every conversation.
    pub fn runner(&self, timeout: Duration) -> AppResult<Arc<dyn Runner>> {
        Ok(match &self.runner {
            RunnerChoice::Claude | RunnerChoice::Codex => Arc::new(ByAgent {
                claude: Arc::new(self.claude_runner(timeout)),
                codex: Arc::new(self.codex_runner(timeout)),
            }),
            RunnerChoice::Custom { name, arg } => super::adapters::Adapters::registered()
                .find_runner(name)
                .ok_or_else(|| {
                    AppError::invalid(format!("runner: no runner named {name} in this build"))
                })?
                .make(&super::adapters::RunnerMake {
                    arg: arg.as_deref(),
                    timeout,
                })
                .map_err(|e| AppError::runtime(format!("runner {name}: {e}")))?,
            RunnerChoice::Webhook {
                url, token_file, ..
            } => Arc::new(WebhookRunner::new(WebhookConfig {
                url: url.clone(),
                token: webhook_token(token_file.as_deref())?,
                timeout,
            })?),
        })
    }

    /// What `doctor` says of a team's runner ([`super::adapters::RunnerAdapter::check`]);
    /// `None` when the runner chosen is not a team's.
    pub fn check_custom_runner(&self) -> Option<(String, Result<String, String>)> {
        let RunnerChoice::Custom { name, arg } = &self.runner else {
            return None;
        };
        let with = super::adapters::RunnerMake {
            arg: arg.as_deref(),
            timeout: Duration::from_secs(1),
        };
        Some((
            name.clone(),
            super::adapters::Adapters::registered()
                .find_runner(name)
                .ok_or_else(|| format!("no runner named {name} in this build"))
                .and_then(|a| a.check(&with)),
        ))
    }

    /// The core service over the real adapters.
    pub fn service(&self, runner: Arc<dyn Runner>, config: Config) -> AppResult<(Service, Store)> {
        let store = self.open_store()?;
        let ports = Ports {
            store: store.data.clone(),
            meta: Arc::new(self.meta(&store)),
            runner,
            prompts: Arc::new(self.prompts()),
            clock: Arc::new(StoreClock(store.clock_offset)),
        };
        Ok((Service::new(ports, config), store))
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
}

/// Each conversation resumed by its own agent's CLI: a Codex conversation (its transcript a
/// Codex rollout) by codex, any other by claude, which alone delivers into an open TUI.
struct ByAgent {
    claude: Arc<dyn Runner>,
    codex: Arc<dyn Runner>,
}

impl ByAgent {
    fn for_request(&self, req: &hooks_core::ports::RunRequest) -> &Arc<dyn Runner> {
        match req.agent.as_deref() {
            Some("codex") => &self.codex,
            _ => &self.claude,
        }
    }
}

#[async_trait::async_trait]
impl Runner for ByAgent {
    async fn start(
        &self,
        req: &hooks_core::ports::RunRequest,
    ) -> Result<Box<dyn hooks_core::ports::RunHandle>, hooks_core::ports::RunnerError> {
        self.for_request(req).start(req).await
    }
    fn delivers_into_open(&self) -> bool {
        self.claude.delivers_into_open()
    }
    /// Both CLIs' runs carry the same variable in the same kind of group.
    async fn end_leftovers(&self, group: &hooks_core::ProcessRef) -> usize {
        self.claude.end_leftovers(group).await
    }
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
            hooks_platform::read_regular(f, hooks_platform::ReadLimit::bytes(64 * 1024))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
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

/// A service for commands that run nothing. A runner that cannot be made (a team's whose
/// program is missing) does not stop them: listing, pausing or dropping needs none, and
/// a run asked of this service is refused with why the runner could not be made.
pub fn service(ctx: &Context) -> AppResult<(Service, Store)> {
    let mut config = Config::new(owner_id());
    config.prices = crate::prices::load(&ctx.data_dir)?;
    let runner = ctx
        .runner(Duration::from_secs(1))
        .unwrap_or_else(|e| Arc::new(Unmade(e.message)));
    ctx.service(runner, config)
}

/// A runner that could not be made, standing in where nothing needs to run: every start
/// is refused with why.
struct Unmade(String);

#[async_trait::async_trait]
impl Runner for Unmade {
    async fn start(
        &self,
        _request: &hooks_core::ports::RunRequest,
    ) -> Result<Box<dyn hooks_core::ports::RunHandle>, hooks_core::ports::RunnerError> {
        Err(hooks_core::ports::RunnerError::Spawn {
            program: "the runner".into(),
            message: self.0.clone(),
        })
    }

    async fn end_leftovers(&self, _group: &hooks_core::live::ProcessRef) -> usize {
        0
    }
}

#[cfg(test)]
pub fn tests_ctx() -> Context {
    store_tests::ctx(StoreChoice::Json {
        dir: "/d".into(),
        explicit: false,
    })
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
            arg: "https://backend.example/runs?team=a b".into(),
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
            workspace: "/w".into(),
            here: "/w".into(),
            claude_home: "/c".into(),
            claude_bin: "claude".into(),
            codex_bin: None,
            codex_home: "/x/.codex".into(),
            done_marker: "DONE".into(),
            runner: RunnerChoice::Claude,
            store,
            host_id: "h".into(),
            host_id_explicit: false,
            any_host: false,
            store_poll: false,
            program: "hooks-app".into(),
            read_only: false,
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
    fn every_store_option_reaches_a_teams_store() {
        let mut c = ctx(StoreChoice::Custom {
            name: "team".into(),
            arg: "x".into(),
        });
        let at = c.store_open("x", false);
        assert_eq!(
            (at.arg, at.host_id, at.create, at.any_host, at.poll),
            ("x", "h", false, false, false)
        );
        c.any_host = true;
        c.store_poll = true;
        c.host_id = "host-b".into();
        let at = c.store_open("x", true);
        assert_eq!(
            (at.host_id, at.create, at.any_host, at.poll),
            ("host-b", true, true, true)
        );
        assert_eq!(at.data_dir, std::path::Path::new("/d"));
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
