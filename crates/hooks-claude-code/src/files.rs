//! Claude Code's settings files on disk: where each scope's is, read as text and JSON,
//! written whole through a link's target, which of them hold this app's handlers, and what
//! install created in each (`installed.json` in the app's data folder).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::settings::is_ours;

/// Which settings file: the user's, the project's (committed), or the project's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
    Local,
}

/// Where the settings files are: Claude Code's home (`$CLAUDE_CONFIG_DIR` or `~/.claude`)
/// and the project.
#[derive(Debug, Clone)]
pub struct Places {
    pub claude_home: PathBuf,
    pub project: PathBuf,
    /// The file name of the binary whose entries are looked for (see
    /// [`crate::settings::is_ours`]).
    pub program: String,
}

/// A settings file that cannot be read, parsed or written, with what to do; `invalid` when
/// the file's content is at fault rather than the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub invalid: bool,
    pub message: String,
}

impl FileError {
    fn runtime(message: String) -> Self {
        Self {
            invalid: false,
            message,
        }
    }
    fn invalid(message: String) -> Self {
        Self {
            invalid: true,
            message,
        }
    }
}

pub fn settings_path(p: &Places, scope: Scope) -> PathBuf {
    match scope {
        Scope::User => p.claude_home.join("settings.json"),
        Scope::Project => p.project.join(".claude/settings.json"),
        Scope::Local => p.project.join(".claude/settings.local.json"),
    }
}

/// The largest settings file read.
pub const MAX_SETTINGS_BYTES: u64 = 16 * 1024 * 1024;

/// A settings file's text, when it is a regular file (a project's `.claude/settings.json`
/// could be a FIFO, which would hang the reader) of at most [`MAX_SETTINGS_BYTES`].
pub fn read_settings_text(path: &Path) -> std::io::Result<String> {
    let bytes =
        hooks_platform::read_regular(path, hooks_platform::ReadLimit::bytes(MAX_SETTINGS_BYTES))?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// Reads a settings file; a missing one is an empty object.
pub fn read_settings(path: &Path) -> Result<Map<String, Value>, FileError> {
    let text = match read_settings_text(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => {
            return Err(FileError::runtime(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        FileError::invalid(format!(
            "{}: not valid JSON at line {}, column {}: {e}; fix it by hand, it was left as it is",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let Value::Object(m) = v else {
        return Err(FileError::invalid(format!(
            "{}: must hold a JSON object; it was left as it is",
            path.display()
        )));
    };
    if let Some(h) = m.get("hooks")
        && !h.is_object()
    {
        return Err(FileError::invalid(format!(
            "{}: \"hooks\" must be an object; it was left as it is",
            path.display()
        )));
    }
    if let Some(Value::Object(h)) = m.get("hooks") {
        for (event, groups) in h {
            if !groups.is_array() {
                return Err(FileError::invalid(format!(
                    "{}: hooks.{event} must be an array; it was left as it is",
                    path.display()
                )));
            }
        }
    }
    Ok(m)
}

/// The file a settings path stands for: a symlinked settings file (dotfiles set up by stow
/// or chezmoi) is written through to its target, so the link stays a link.
pub fn write_target(path: &Path) -> Result<PathBuf, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            FileError::runtime(format!(
                "{} is a symbolic link whose target cannot be reached ({e}); fix the link, it was left as it is",
                path.display()
            ))
        }),
        _ => Ok(path.to_owned()),
    }
}

/// Replaces the file atomically, in its own folder, keeping its mode: the new file is
/// private until it is whole and renamed (see [`hooks_platform::files::replace`]), so a
/// 0600 settings file is never readable by others on the way, and a name planted in the
/// folder (a repository's `.claude/`) is never followed.
pub fn write_text(path: &Path, text: &str) -> Result<(), FileError> {
    use std::os::unix::fs::PermissionsExt;
    let target = write_target(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| FileError::runtime(format!("could not create {}: {e}", dir.display())))?;
    let mode = std::fs::metadata(&target)
        .ok()
        .map(|m| m.permissions().mode());
    hooks_platform::files::replace(&target, text.as_bytes(), mode)
        .map_err(|e| FileError::runtime(format!("could not write {}: {e}", path.display())))
}

/// A settings file as it is on disk: its text (`None` if there is none) and its JSON.
pub struct Settings {
    pub path: PathBuf,
    pub text: Option<String>,
    pub map: Map<String, Value>,
}

pub fn load(path: &Path) -> Result<Settings, FileError> {
    let map = read_settings(path)?;
    let text = match read_settings_text(path) {
        Ok(t) if !t.trim().is_empty() => Some(t),
        _ => None,
    };
    Ok(Settings {
        path: path.to_owned(),
        text,
        map,
    })
}

/// What install created in each settings file (`file`, `hooks`, `hooks.<Event>`), kept in
/// the data folder so that uninstall removes those and never a user's own empty ones.
pub struct Created {
    pub file: PathBuf,
    pub all: Map<String, Value>,
}

impl Created {
    /// The record in the app's data folder (none yet is an empty one).
    pub fn load(data_dir: &Path) -> Self {
        let file = data_dir.join("installed.json");
        let all =
            hooks_platform::read_regular(&file, hooks_platform::ReadLimit::bytes(4 * 1024 * 1024))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .unwrap_or_default();
        Self { file, all }
    }
    pub fn key(path: &Path) -> String {
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .to_string_lossy()
            .into_owned()
    }
    pub fn get(&self, path: &Path) -> Option<Vec<String>> {
        self.all
            .get(&Self::key(path))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
    }
    pub fn set(&mut self, path: &Path, created: Option<Vec<String>>) -> Result<(), FileError> {
        let key = Self::key(path);
        match created {
            // Kept even when empty: "installed here, created nothing" is not "no record".
            Some(c) => {
                self.all.insert(key, json!(c));
            }
            None => {
                if self.all.shift_remove(&key).is_none() {
                    return Ok(());
                }
            }
        }
        let mut text = serde_json::to_string_pretty(&self.all).unwrap_or_default();
        text.push('\n');
        hooks_platform::files::write_private(&self.file, &text).map_err(|e| {
            FileError::runtime(format!("could not write {}: {e}", self.file.display()))
        })
    }
}

/// Where this app's hook is installed: the settings files that have one of its entries.
/// The URLs this app's `http` hooks post to, in every settings file it looks at.
pub fn installed_http_urls(places: &Places) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project, Scope::Local] {
        let p = settings_path(places, scope);
        let Ok(m) = read_settings(&p) else { continue };
        let handlers = m
            .get("hooks")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|h| h.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter(|h| is_ours(h, &places.program) && h["type"] == "http");
        for h in handlers {
            if let Some(u) = h["url"].as_str()
                && !out
                    .iter()
                    .any(|(q, v): &(PathBuf, String)| *q == p && v == u)
            {
                out.push((p.clone(), u.to_owned()));
            }
        }
    }
    out
}

/// The settings files that hold this app's handlers, with the events they hold them for.
pub fn installed_in(places: &Places) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project, Scope::Local] {
        let p = settings_path(places, scope);
        let Ok(m) = read_settings(&p) else { continue };
        let events = events_with_ours(&m, &places.program);
        if !events.is_empty() {
            out.push((p, events));
        }
    }
    out.extend(plugin_installed(places));
    out
}

/// The name this project's Claude Code plugin has in every marketplace that holds it.
pub const PLUGIN: &str = "hooks-app";

/// The file, in the plugin's data folder, that says which hooks-app the plugin runs: one
/// shell line, `exec '/abs/hooks-app' [global options] "$@"`, that `hooks-app install
/// --plugin` writes. The plugin's `scripts/hooks-app` runs it and nothing else: never a
/// `hooks-app` found on `PATH`, which a repository's settings can set.
pub const PLUGIN_RECORD: &str = "hooks-app.sh";

/// The plugin's data folders, Claude Code's `${CLAUDE_PLUGIN_DATA}`
/// (`plugins/data/<name@marketplace with every other character than letters, digits, '-'
/// and '_' made '-'>`): one for each marketplace `plugins/installed_plugins.json` lists it
/// from, and always the one of this project's own marketplace, `hooks-app`, so a record
/// written before the plugin is installed is found. Claude Code removes a folder when its
/// plugin is uninstalled.
pub fn plugin_data_dirs(places: &Places) -> Vec<PathBuf> {
    let list = places.claude_home.join("plugins/installed_plugins.json");
    let prefix = format!("{PLUGIN}@");
    let mut names = vec![format!("{PLUGIN}@{PLUGIN}")];
    if let Some(listed) = read_settings_text(&list)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("plugins")?.as_object().cloned())
    {
        names.extend(listed.keys().filter(|k| k.starts_with(&prefix)).cloned());
    }
    names.sort();
    names.dedup();
    names
        .iter()
        .map(|n| {
            let id: String = n
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            places.claude_home.join("plugins/data").join(id)
        })
        .collect()
}

/// This app's Claude Code plugin, where Claude Code has it installed and enabled: the
/// plugin's `hooks/hooks.json` in Claude Code's copy (from `plugins/installed_plugins.json`),
/// with the events it holds this app's handlers for. `None` when it is not installed, is
/// disabled in the user's settings (`enabledPlugins`), or holds no handler of this app.
pub fn plugin_installed(places: &Places) -> Option<(PathBuf, Vec<String>)> {
    let list = places.claude_home.join("plugins/installed_plugins.json");
    let text = read_settings_text(&list).ok()?;
    let list: Value = serde_json::from_str(&text).ok()?;
    let enabled = read_settings(&settings_path(places, Scope::User)).ok()?;
    let enabled = enabled.get("enabledPlugins")?.as_object()?;
    let prefix = format!("{PLUGIN}@");
    list.get("plugins")?
        .as_object()?
        .iter()
        .filter(|(name, _)| {
            name.starts_with(&prefix) && enabled.get(*name) == Some(&Value::Bool(true))
        })
        .flat_map(|(_, copies)| copies.as_array().into_iter().flatten())
        .filter_map(|copy| {
            let file = PathBuf::from(copy.get("installPath")?.as_str()?).join("hooks/hooks.json");
            let events = events_with_ours(&read_settings(&file).ok()?, &places.program);
            (!events.is_empty()).then_some((file, events))
        })
        .next()
}

/// The events of a settings file's (or a plugin's) `hooks` that hold a handler of this app.
fn events_with_ours(settings: &Map<String, Value>, program: &str) -> Vec<String> {
    let Some(Value::Object(hooks)) = settings.get("hooks") else {
        return Vec::new();
    };
    hooks
        .iter()
        .filter(|(_, groups)| {
            groups.as_array().into_iter().flatten().any(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|h| is_ours(h, program))
            })
        })
        .map(|(ev, _)| ev.clone())
        .collect()
}
