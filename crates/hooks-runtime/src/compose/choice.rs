//! The adapters chosen on the command line: the store (`--store`) and the runner
//! (`--runner`), with what each needs.

use std::path::{Path, PathBuf};

use crate::fsutil::absolute;
use crate::{AppError, AppResult};

/// The store adapter chosen, with what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The JSON file store in a folder; `explicit` when chosen by `--store json:DIR`.
    Json { dir: PathBuf, explicit: bool },
    /// PostgreSQL; `arg` is the option as given (the URL, or `@FILE` holding it).
    Postgres { url: String, arg: String },
    /// A store this build adds ([`crate::Adapters::store`]): `--store NAME:ARG`.
    Custom { name: String, arg: String },
}

impl StoreChoice {
    /// Reads `--store`: `json:DIR`, a `postgres://` URL, or `@FILE` holding either.
    pub fn parse(arg: &str) -> AppResult<Self> {
        let rule = "must be json:DIR, a postgres:// URL, or @FILE holding one";
        let text = match arg.strip_prefix('@') {
            Some(file) => {
                let text = hooks_platform::read_regular(
                    std::path::Path::new(file),
                    hooks_platform::ReadLimit::bytes(64 * 1024),
                )
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| {
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
        let adapters = super::adapters::Adapters::registered();
        if let Some((name, rest)) = text.split_once(':')
            && adapters.find_store(name).is_some()
        {
            return Ok(StoreChoice::Custom {
                name: name.to_owned(),
                arg: rest.to_owned(),
            });
        }
        let more = adapters.store_names();
        let rule = if more.is_empty() {
            rule.to_owned()
        } else {
            format!("{rule}, or {}", more.join(", "))
        };
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
            StoreChoice::Custom { name, arg } => format!("{name}:{arg}"),
        }
    }
}

/// The runner adapter chosen, with what it needs.
#[derive(Debug, Clone)]
pub enum RunnerChoice {
    Claude,
    /// OpenAI's Codex CLI (`codex exec resume`), the program from `--codex-bin`.
    Codex,
    /// A runner this build adds ([`crate::Adapters::runner`]): `--runner NAME`, its
    /// argument from `--runner-url`.
    Custom {
        name: String,
        arg: Option<String>,
    },
    Webhook {
        url: String,
        /// `--runner-url` as given: the URL, or `@FILE` holding it (what is passed on to
        /// hook commands and daemons, so a key in the URL is on no command line).
        arg: String,
        /// The file holding the token; without one, HOOKS_RUNNER_TOKEN (read when the
        /// runner is made, so a command that runs nothing never needs it).
        token_file: Option<PathBuf>,
    },
}
