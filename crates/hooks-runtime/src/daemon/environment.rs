//! The environment an on-demand daemon (and so every follow-up it runs) starts with: the
//! one the user's own `install` ran in, kept in `<data-dir>/daemon-env.json` (0600), never
//! the one of the Claude Code hook that happens to start the daemon. A hook's environment
//! is partly a repository's: Claude Code exports a project's settings `env` to every hook
//! command, trusted folder or not, so `ANTHROPIC_BASE_URL` or `PATH` there would otherwise
//! steer the follow-ups of every other project too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{AppError, AppResult, Context};

/// The file, in the data folder.
pub const FILE: &str = "daemon-env.json";

/// Variables never kept: Claude Code's own for its hooks (a `claude` that sees them takes
/// itself for a nested session), this app's markers of a follow-up, the app's settings
/// (a daemon gets those as options), and a terminal session's passing state.
const NEVER: [&str; 33] = [
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_ENV_FILE",
    "HOOKS_APP_FOLLOW_UP",
    "HOOKS_APP_ORIGIN",
    "HOOKS_DATA_DIR",
    "HOOKS_WORKSPACE",
    "HOOKS_CLAUDE_BIN",
    "HOOKS_DONE_MARKER",
    "HOOKS_RUNNER",
    "HOOKS_RUNNER_URL",
    "HOOKS_RUNNER_TOKEN_FILE",
    "HOOKS_STORE",
    "HOOKS_HOST_ID",
    "HOOKS_ANY_HOST",
    "HOOKS_STORE_POLL",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    "TERM_SESSION_ID",
    "ITERM_SESSION_ID",
    "SSH_TTY",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "COLUMNS",
    "LINES",
];

/// What an on-demand daemon is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonEnvironment {
    /// The `claude` follow-ups run, as a path (found on the user's `PATH` at install).
    pub claude_bin: PathBuf,
    /// Claude Code's folder.
    pub claude_home: PathBuf,
    /// The variables, by name.
    pub vars: BTreeMap<String, String>,
}

impl DaemonEnvironment {
    /// This process's environment (the user's own command), as a daemon would get it.
    pub fn capture(ctx: &Context) -> Self {
        Self {
            claude_bin: claude_for_daemon(&ctx.claude_bin),
            claude_home: ctx.claude_home.clone(),
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| !NEVER.contains(&k.as_str()))
                .collect(),
        }
    }

    /// As `install` kept it, if it did.
    pub fn read(data_dir: &Path) -> Option<Self> {
        let bytes = hooks_platform::read_regular(
            &data_dir.join(FILE),
            hooks_platform::ReadLimit::bytes(1024 * 1024),
        )
        .ok()?;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        let path = |k: &str| {
            v[k].as_str()
                .map(PathBuf::from)
                .filter(|p| p.is_absolute() || p.components().count() == 1)
        };
        Some(Self {
            claude_bin: path("claudeBin")?,
            claude_home: path("claudeHome")?,
            vars: v["env"]
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .filter(|(k, _)| !NEVER.contains(&k.as_str()))
                .collect(),
        })
    }

    /// Keeps it in the data folder, private to the user (it may hold an API key).
    pub fn write(&self, data_dir: &Path) -> AppResult {
        let text = serde_json::to_string_pretty(&json!({
            "claudeBin": self.claude_bin,
            "claudeHome": self.claude_home,
            "env": self.vars,
        }))
        .map_err(|e| AppError::runtime(e.to_string()))?;
        crate::fsutil::write_private(&data_dir.join(FILE), &format!("{text}\n"))
    }

    /// The names of the variables (never their values), for `doctor` and `install`.
    pub fn names(&self) -> Vec<&str> {
        self.vars.keys().map(String::as_str).collect()
    }
}

/// The `claude` the daemon will run, as a path: the one named, the one on `PATH`, or else
/// the Claude Code process this hook runs under (claude → /bin/sh -c → this hook). Claude
/// Code's own "local" install is reached through a shell alias that a daemon's PATH does
/// not have; the process that ran the hook is that very binary.
pub fn claude_for_daemon(bin: &Path) -> PathBuf {
    if bin.components().count() > 1 {
        return bin.to_owned();
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(bin))
            .find(|p| p.is_file())
    });
    if let Some(p) = on_path {
        return p;
    }
    let mut pid = std::process::id();
    for _ in 0..4 {
        let Some(p) = hooks_platform::process::process(pid) else {
            break;
        };
        pid = p.ppid;
        if pid <= 1 {
            break;
        }
        if let Some(exe) = hooks_platform::process::exe(pid)
            && exe
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("claude"))
        {
            return exe;
        }
    }
    bin.to_owned()
}
