//! Where things are, resolved once from flags, environment and defaults.

use std::path::{Path, PathBuf};

use super::choice::{RunnerChoice, StoreChoice};
use crate::fsutil::shell_quote;
use crate::fsutil::write_private;
use crate::fsutil::{absolute, home};
use crate::{AppError, AppResult};

/// What the command line says of where things are, before defaults: the commands make it
/// from the global flags (and their variables).
#[derive(Debug, Clone)]
pub struct Flags {
    pub data_dir: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub claude_home: Option<PathBuf>,
    pub claude_bin: Option<PathBuf>,
    pub codex_bin: Option<PathBuf>,
    pub done_marker: String,
    /// `claude`, `webhook`, or a runner this build adds.
    pub runner: String,
    pub runner_url: Option<String>,
    pub runner_token_file: Option<PathBuf>,
    pub store: Option<String>,
    pub host_id: Option<String>,
    pub any_host: bool,
    pub store_poll: bool,
    /// A Claude Code hook's call: nothing is taken from the environment (a project's
    /// settings `env` reaches every hook), and the defaults come from the user database's
    /// home, not `$HOME` or `$XDG_DATA_HOME`.
    pub from_hook: bool,
    /// The file name of this binary ([`crate::output::program`]): the program its settings entries
    /// name, and the one its messages tell the person to run.
    pub program: String,
}

/// The resolved paths.
#[derive(Debug, Clone)]
pub struct Context {
    /// The private data folder: the JSON store, session files, tokens, logs.
    pub data_dir: PathBuf,
    /// Where prompt files are found after the conversation's own project (and where no
    /// approval is needed): `--workspace`, else the one `init` or `install` recorded, else
    /// the current folder.
    pub workspace: PathBuf,
    /// `--workspace`, else the current folder: the project `install --scope project|local`
    /// edits, and the workspace `init` and `install` record.
    pub here: PathBuf,
    /// Claude Code's folder (`CLAUDE_CONFIG_DIR`, else `~/.claude`): its sessions,
    /// transcripts and settings.
    pub claude_home: PathBuf,
    /// The claude program: a path, or a name looked up on `PATH`.
    pub claude_bin: PathBuf,
    /// The codex program (`--codex-bin`), when given; else `codex` on `PATH`.
    pub codex_bin: Option<PathBuf>,
    /// Codex's folder (`$CODEX_HOME`, else `~/.codex`): its threads and their locks.
    pub codex_home: PathBuf,
    /// The last line that marks a conversation as done.
    pub done_marker: String,
    /// What resumes conversations.
    pub runner: RunnerChoice,
    /// Where hooks, the queue and session state live.
    pub store: StoreChoice,
    /// This host's id in a shared store.
    pub host_id: String,
    /// Whether the host id was given (`--host-id`) rather than this host's name.
    pub host_id_explicit: bool,
    /// Fire entries queued on any host.
    pub any_host: bool,
    /// Poll the store rather than listen for its changes.
    pub store_poll: bool,
    /// The file name of this binary: `hooks-app`, or a team's own build of it. Its entries
    /// in Claude Code's and Codex's settings are the ones naming it, and only those
    /// ([`hooks_claude_code::settings::is_ours`]).
    pub program: String,
    /// The command only reads: a store not there yet is an error, never made and seeded.
    pub read_only: bool,
}

impl Context {
    /// Resolves the flags: defaults filled, paths made absolute, the store and runner
    /// named checked (against this build's [`crate::Adapters`] too); an error names the
    /// flag and its rule.
    pub fn resolve(g: &Flags) -> AppResult<Self> {
        let data_dir = match &g.data_dir {
            Some(d) => absolute(d)?,
            None if g.from_hook => account_data_dir()?,
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
            None if g.from_hook => account_home()?.join(".claude"),
            None => home()?.join(".claude"),
        };
        // Codex's folder, where its threads' writer locks say which are open: `CODEX_HOME`
        // as Codex reads it, except in a hook call (the environment is partly a project's).
        let codex_home = match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
            Some(c) if !g.from_hook => absolute(Path::new(&c))?,
            _ if g.from_hook => account_home()?.join(".codex"),
            _ => home()?.join(".codex"),
        };
        let claude_bin = g
            .claude_bin
            .clone()
            .unwrap_or_else(|| PathBuf::from("claude"));
        let done_marker = hooks_core::validate_marker(&g.done_marker)?;
        let runner = match g.runner.trim() {
            "" | "claude" => RunnerChoice::Claude,
            "codex" => RunnerChoice::Codex,
            "webhook" => {
                let arg = g.runner_url.clone().ok_or_else(|| {
                    AppError::invalid(
                        "runnerUrl: --runner webhook needs --runner-url URL (or HOOKS_RUNNER_URL)",
                    )
                })?;
                let url = runner_url(&arg)?;
                let token_file = g.runner_token_file.as_deref().map(absolute).transpose()?;
                RunnerChoice::Webhook {
                    url,
                    arg,
                    token_file,
                }
            }
            name => {
                let adapters = super::adapters::Adapters::registered();
                if adapters.find_runner(name).is_none() {
                    return Err(AppError::invalid(format!(
                        "runner: must be one of {} (got {name:?})",
                        adapters.runner_names().join(", ")
                    )));
                }
                RunnerChoice::Custom {
                    name: name.to_owned(),
                    arg: g.runner_url.clone(),
                }
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
            workspace,
            here,
            claude_home,
            claude_bin,
            codex_bin: g.codex_bin.clone(),
            codex_home,
            done_marker,
            runner,
            store,
            host_id_explicit: g.host_id.as_deref().is_some_and(|h| !h.trim().is_empty()),
            host_id,
            any_host: g.any_host,
            store_poll: g.store_poll,
            program: program_name(&g.program)?,
            read_only: false,
        })
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
            StoreChoice::Custom { name, arg } => {
                a.push("--store".into());
                a.push(format!("{name}:{arg}"));
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

    /// The runner options that pass this choice on to another hooks-app: the token only
    /// by its file (or by HOOKS_RUNNER_TOKEN, in the environment a child inherits).
    pub fn runner_args(&self) -> Vec<String> {
        match &self.runner {
            RunnerChoice::Claude => Vec::new(),
            RunnerChoice::Codex => {
                let mut a = vec!["--runner".to_owned(), "codex".to_owned()];
                if let Some(b) = &self.codex_bin {
                    a.push("--codex-bin".to_owned());
                    a.push(b.to_string_lossy().into_owned());
                }
                a
            }
            RunnerChoice::Custom { name, arg } => {
                let mut a = vec!["--runner".to_owned(), name.clone()];
                if let Some(arg) = arg {
                    a.push("--runner-url".to_owned());
                    a.push(arg.clone());
                }
                a
            }
            RunnerChoice::Webhook {
                arg, token_file, ..
            } => {
                let mut a = vec![
                    "--runner".to_owned(),
                    "webhook".to_owned(),
                    "--runner-url".to_owned(),
                    arg.clone(),
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
        // The hook command names the data folder whenever it is not the one a hook finds by
        // itself (under the user database's home: a hook reads no variable).
        if account_data_dir().ok().as_ref() != Some(&self.data_dir) {
            cmd.push_str(" --data-dir ");
            cmd.push_str(&shell_quote(&self.data_dir.to_string_lossy()));
        }
        // And Claude Code's folder, where it is not `~/.claude` (`CLAUDE_CONFIG_DIR`): the
        // hook looks there for the conversations open now.
        if account_home().ok().map(|h| h.join(".claude")).as_ref() != Some(&self.claude_home) {
            cmd.push_str(" --claude-home ");
            cmd.push_str(&shell_quote(&self.claude_home.to_string_lossy()));
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

/// A program name as entries and messages carry it: a file name a shell word can hold.
fn program_name(name: &str) -> AppResult<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(name.to_owned())
    } else {
        Err(AppError::invalid(format!(
            "program: this binary's file name must be up to 64 letters, digits, '-', '_' or '.' \
             (got {name:?}); rename it"
        )))
    }
}

/// Where `install` keeps a webhook runner's URL: it may carry a key (user info, a query, a
/// path), and what install writes is a settings file others may read and a command line
/// every user sees.
pub const RUNNER_URL_FILE: &str = "runner-url";

impl Context {
    /// A webhook runner's URL given as it is: kept in the data folder's private
    /// [`RUNNER_URL_FILE`] (written unless `dry_run`) and passed on as `@FILE` from here
    /// on. Nothing for any other runner, or a URL given as `@FILE` already.
    pub fn keep_runner_url(&mut self, dry_run: bool) -> AppResult {
        if let RunnerChoice::Webhook { url, arg, .. } = &mut self.runner
            && !arg.starts_with('@')
        {
            let file = self.data_dir.join(RUNNER_URL_FILE);
            if !dry_run {
                crate::fsutil::write_private(&file, &format!("{url}\n"))?;
            }
            *arg = format!("@{}", file.display());
        }
        Ok(())
    }
}

/// `--runner-url`: the URL, or `@FILE` holding it on one line.
fn runner_url(arg: &str) -> AppResult<String> {
    let Some(file) = arg.strip_prefix('@') else {
        return Ok(arg.trim().to_owned());
    };
    let rule = "runnerUrl: must be an http(s):// URL, or @FILE holding one";
    let text =
        hooks_platform::read_regular(Path::new(file), hooks_platform::ReadLimit::bytes(64 * 1024))
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .map_err(|e| AppError::invalid(format!("{rule}: could not read {file}: {e}")))?;
    if text.is_empty() || text.contains('\n') || text.starts_with('@') {
        return Err(AppError::invalid(format!(
            "{rule}: {file} must hold one line, the URL"
        )));
    }
    Ok(text)
}

/// The user's home as the user database gives it (never `$HOME`).
pub fn account_home() -> AppResult<PathBuf> {
    hooks_platform::account::home().ok_or_else(|| {
        AppError::runtime("this user has no home folder in the user database: pass --data-dir")
    })
}

/// The data folder a `claude-hook` call uses when its command line names none.
pub fn account_data_dir() -> AppResult<PathBuf> {
    Ok(account_home()?.join(".local/share/hooks-app"))
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
/// must not take that project for the user's own folder. A workspace already recorded, and
/// still there, is kept unless `--workspace` names another: running `init` or `install` in
/// another folder never moves where prompts come from. Returns the workspace kept when
/// `here` is not it, for the command to say so.
pub fn record_workspace(ctx: &mut Context) -> AppResult<Option<PathBuf>> {
    if let Some(recorded) = recorded_workspace(&ctx.data_dir)
        && recorded.is_dir()
        && ctx.workspace == recorded
    {
        // Given no --workspace (Context::new took the recorded one), or given this one.
        return Ok((ctx.here != recorded).then_some(recorded));
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "workspace": ctx.here.to_string_lossy(),
    }))
    .unwrap_or_default();
    write_private(&ctx.data_dir.join(WORKSPACE_FILE), &format!("{text}\n"))?;
    ctx.workspace = ctx.here.clone();
    Ok(None)
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

pub use crate::blocking::block_on;
