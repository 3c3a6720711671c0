//! `install` / `uninstall`: the `claude-hook` entries in Claude Code's `settings.json`.
//!
//! The file is edited as text (`hooks_claude_code::jsonedit`, with this app's handlers
//! recognised and placed by `hooks_claude_code::settings`): install inserts its entries and the
//! containers it must create, laid out in the file's own style, and changes no other byte;
//! uninstall takes out what install put in, and the containers install created (recorded
//! in `<data-dir>/installed.json`), so install then uninstall gives the file back byte for
//! byte. A symlinked file is written through to its target. Running `install` twice changes
//! nothing; an invalid settings file is refused and left as it was; `--dry-run` shows the
//! change and makes none. Entries of this app are recognised by their command: a program
//! named `hooks-app` followed by `claude-hook`. With the `stop` trigger, a `SessionEnd`
//! entry without `--on` is added too: it only wakes follow-ups waiting for the
//! conversation to be closed. A `StopFailure` entry is always added: a turn stopped by a
//! usage limit or an outage queues the `conversation-failed` hooks.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::cli::{InstallArgs, UninstallArgs};
use crate::options::{DaemonMode, Scope, Transport, Trigger};
use hooks_claude_code::jsonedit;
use hooks_claude_code::settings::*;

use crate::{AppError, AppResult, Context};

pub fn settings_path(ctx: &Context, scope: Scope) -> PathBuf {
    match scope {
        Scope::User => ctx.claude_home.join("settings.json"),
        Scope::Project => ctx.here.join(".claude/settings.json"),
        Scope::Local => ctx.here.join(".claude/settings.local.json"),
    }
}

/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 16 * 1024 * 1024;

/// A settings file's text, when it is a regular file (a project's `.claude/settings.json`
/// could be a FIFO, which would hang the reader) of at most [`MAX_SETTINGS_BYTES`].
fn read_settings_text(path: &Path) -> std::io::Result<String> {
    let bytes =
        hooks_platform::read_regular(path, hooks_platform::ReadLimit::bytes(MAX_SETTINGS_BYTES))?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// Reads a settings file; a missing one is an empty object.
pub fn read_settings(path: &Path) -> AppResult<Map<String, Value>> {
    let text = match read_settings_text(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => {
            return Err(AppError::runtime(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        AppError::invalid(format!(
            "{}: not valid JSON at line {}, column {}: {e}; fix it by hand, it was left as it is",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let Value::Object(m) = v else {
        return Err(AppError::invalid(format!(
            "{}: must hold a JSON object; it was left as it is",
            path.display()
        )));
    };
    if let Some(h) = m.get("hooks")
        && !h.is_object()
    {
        return Err(AppError::invalid(format!(
            "{}: \"hooks\" must be an object; it was left as it is",
            path.display()
        )));
    }
    if let Some(Value::Object(h)) = m.get("hooks") {
        for (event, groups) in h {
            if !groups.is_array() {
                return Err(AppError::invalid(format!(
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
fn write_target(path: &Path) -> AppResult<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            AppError::runtime(format!(
                "{} is a symbolic link whose target cannot be reached ({e}); fix the link, it was left as it is",
                path.display()
            ))
        }),
        _ => Ok(path.to_owned()),
    }
}

/// Replaces the file atomically, in its own folder, keeping its mode.
fn write_text(path: &Path, text: &str) -> AppResult {
    let target = write_target(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| AppError::runtime(format!("could not create {}: {e}", dir.display())))?;
    let tmp = dir.join(format!(".settings.json.hooks-app.{}", std::process::id()));
    let r = std::fs::write(&tmp, text).and_then(|()| {
        if let Ok(m) = std::fs::metadata(&target) {
            std::fs::set_permissions(&tmp, m.permissions())?;
        }
        hooks_platform::sync::sync_file(&std::fs::File::open(&tmp)?)?;
        std::fs::rename(&tmp, &target)
    });
    r.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        AppError::runtime(format!("could not write {}: {e}", path.display()))
    })
}

/// A settings file as it is on disk: its text (`None` if there is none) and its JSON.
struct Settings {
    path: PathBuf,
    text: Option<String>,
    map: Map<String, Value>,
}

fn load(path: &Path) -> AppResult<Settings> {
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
struct Created {
    file: PathBuf,
    all: Map<String, Value>,
}

impl Created {
    fn load(ctx: &Context) -> Self {
        let file = ctx.data_dir.join("installed.json");
        let all = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        Self { file, all }
    }
    fn key(path: &Path) -> String {
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .to_string_lossy()
            .into_owned()
    }
    fn get(&self, path: &Path) -> Option<Vec<String>> {
        self.all
            .get(&Self::key(path))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
    }
    fn set(&mut self, path: &Path, created: Option<Vec<String>>) -> AppResult {
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
        crate::fsutil::write_private(&self.file, &text)
    }
}

/// Shows or writes the new text; `None` removes the file.
fn apply(s: &Settings, after: Option<&str>, dry_run: bool, verb: &str) -> AppResult<bool> {
    if s.text.as_deref() == after {
        println!("{}: nothing to change ({verb} already)", s.path.display());
        return Ok(false);
    }
    if dry_run {
        match after {
            Some(t) => {
                println!("would write {}:", s.path.display());
                print!("{t}");
                if !t.ends_with('\n') {
                    println!();
                }
            }
            None => println!("would remove {} (install created it)", s.path.display()),
        }
        return Ok(false);
    }
    match after {
        Some(t) => write_text(&s.path, t)?,
        None => std::fs::remove_file(write_target(&s.path)?).map_err(|e| {
            AppError::runtime(format!("could not remove {}: {e}", s.path.display()))
        })?,
    }
    println!("{}: {verb}", s.path.display());
    Ok(true)
}

/// The command Claude Code runs, `claude-hook` followed by `args`. In the project scope, a
/// file teams commit, it names no path of this machine and does nothing where hooks-app
/// is not installed.
fn command_for(ctx: &Context, scope: Scope, args: &str) -> AppResult<String> {
    if scope != Scope::Project {
        return Ok(format!("{} claude-hook{args}", ctx.self_command()?));
    }
    let mut cmd = String::from("hooks-app");
    if ctx.done_marker != hooks_core::DONE_MARKER {
        cmd.push_str(" --done-marker ");
        cmd.push_str(&crate::fsutil::shell_quote(&ctx.done_marker));
    }
    // Where hooks-app is missing, the event on stdin is still read (a hook that exits
    // without reading it leaves Claude Code writing into a closed pipe), and the exit is 0.
    Ok(format!(
        "command -v hooks-app >/dev/null 2>&1 && exec {cmd} claude-hook{args} || cat >/dev/null"
    ))
}

pub fn install(ctx: &Context, a: &InstallArgs) -> AppResult {
    let path = settings_path(ctx, a.scope);
    let s = load(&path)?;
    let http_base = match a.transport {
        Transport::Command => None,
        Transport::Http => Some(match &a.http_url {
            Some(u) => u.clone(),
            None => crate::daemon::ondemand::http_url(&ctx.data_dir).ok_or_else(|| {
                AppError::invalid(
                    "httpUrl: --transport http needs --http-url URL, or a daemon running with --http to take it from",
                )
            })?,
        }),
    };
    let handler = |on_end: bool| -> AppResult<Value> {
        Ok(match &http_base {
            Some(base) => http_handler(
                base,
                on_end,
                crate::http::TOKEN_ENV,
                crate::compose::FOLLOW_UP_ENV,
            ),
            None => command_handler(command_for(
                ctx,
                a.scope,
                if on_end { " --on session-end" } else { "" },
            )?),
        })
    };
    let mut wanted: Vec<(&str, Value)> = Vec::new();
    if matches!(a.trigger, Trigger::Stop | Trigger::Both) {
        wanted.push(("Stop", handler(false)?));
    }
    if matches!(a.trigger, Trigger::SessionEnd | Trigger::Both) {
        wanted.push(("SessionEnd", handler(true)?));
    } else {
        // A conversation being closed wakes the follow-ups that wait for it, so they run
        // within seconds of the person's /exit. This entry never queues anything.
        wanted.push(("SessionEnd", handler(false)?));
    }
    // A turn stopped by a usage limit or an outage: what the conversation-failed hooks
    // follow up. Claude Code ignores this hook's output and exit code.
    wanted.push(("StopFailure", handler(false)?));
    let mut expected = s.map.clone();
    strip_ours(&mut expected);
    for (ev, h) in &wanted {
        add(&mut expected, ev, h.clone());
    }
    // Already installed as wanted, wherever the entries sit: leave the file alone.
    if same_entries(&s.map, &expected) {
        return apply(&s, s.text.as_deref(), a.dry_run, "installed").map(|_| ());
    }
    let original = s.text.clone().unwrap_or_else(|| "{}".into());
    let (mut text, _) = strip_text(original.clone())?;
    let st = jsonedit::style_of(&original, &reparse(&original)?);
    let mut record = Created::load(ctx);
    let mut created = record.get(&path).unwrap_or_default();
    if s.text.is_none() && !created.iter().any(|c| c == "file") {
        created.push("file".into());
    }
    for (ev, h) in &wanted {
        let (t, c) = add_text(&text, &st, ev, h)?;
        text = t;
        for c in c {
            if !created.contains(&c) {
                created.push(c);
            }
        }
    }
    if s.text.is_none() {
        text.push('\n');
    }
    let written: Value = serde_json::from_str(&text).map_err(|e| {
        AppError::runtime(format!(
            "internal: the edited settings do not parse ({e}); nothing was written"
        ))
    })?;
    if written != Value::Object(expected) {
        return Err(AppError::runtime(
            "internal: the edited settings differ from what was meant; nothing was written",
        ));
    }
    if apply(&s, Some(&text), a.dry_run, "installed")? {
        record.set(&path, Some(created))?;
    }
    if http_base.is_some() && !a.dry_run {
        println!(
            "the http hook sends the token from ${0}: put `export {0}=$(cat {1})` where Claude Code's \
             environment comes from. An http hook loses the event when no daemon listens (Claude \
             Code only reports the error), so keep a daemon running (`hooks-app serve --http …`)",
            crate::http::TOKEN_ENV,
            ctx.data_dir.join(crate::http::TOKEN_FILE).display()
        );
    }
    if a.scope == Scope::Project && !a.dry_run {
        println!(
            "the command is portable: `hooks-app` from PATH, and a quiet no-op where it is not installed; \
             for this machine's path use --scope local"
        );
    }
    daemon_setup(ctx, a)
}

/// Keeps the daemon mode for claude-hook and doctor, and writes the service unit.
fn daemon_setup(ctx: &Context, a: &InstallArgs) -> AppResult {
    use crate::daemon::ondemand::{self, DaemonConfig};
    let cfg = DaemonConfig {
        mode: a.daemon,
        idle_exit: a.idle_exit,
        http: a.http,
    };
    if let Some(addr) = a.http {
        crate::http::check_options(&crate::http::HttpOptions {
            addr,
            no_auth: false,
            allow_insecure: false,
        })?;
        if a.daemon == DaemonMode::None {
            return Err(AppError::invalid(
                "http: --http needs a daemon to serve it: --daemon on-demand (the default) or service",
            ));
        }
    }
    let unit = ondemand::unit_path();
    if a.dry_run {
        println!(
            "would set the daemon mode to {}",
            ondemand::mode_name(a.daemon)
        );
        if a.daemon == DaemonMode::Service {
            println!(
                "would write {}:\n{}",
                unit.display(),
                ondemand::unit_text(ctx)?
            );
        }
        return Ok(());
    }
    if DaemonConfig::read(&ctx.data_dir) != cfg || !ctx.data_dir.join("daemon.json").exists() {
        cfg.write(&ctx.data_dir)?;
    }
    match a.daemon {
        DaemonMode::OnDemand => println!(
            "daemon: on demand (claude-hook starts `serve` when it queues something; it exits after {} s with nothing pending; log: {}){}",
            a.idle_exit,
            ctx.data_dir.join(ondemand::LOG_FILE).display(),
            a.http
                .map(|h| format!("; while it runs it serves http://{h} (`hooks-app open`)"))
                .unwrap_or_default()
        ),
        DaemonMode::None => {
            println!("daemon: none (run `hooks-app serve`, or `hooks-app tick` from cron)");
        }
        DaemonMode::Service => {
            let text = ondemand::unit_text(ctx)?;
            if std::fs::read_to_string(&unit).ok().as_deref() != Some(text.as_str()) {
                if let Some(dir) = unit.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        AppError::runtime(format!("could not create {}: {e}", dir.display()))
                    })?;
                }
                std::fs::write(&unit, text).map_err(|e| {
                    AppError::runtime(format!("could not write {}: {e}", unit.display()))
                })?;
            }
            println!(
                "daemon: service, {}; turn it on with: {}",
                unit.display(),
                ondemand::enable_command(&unit)
            );
        }
    }
    Ok(())
}

pub fn uninstall(ctx: &Context, a: &UninstallArgs) -> AppResult {
    let path = settings_path(ctx, a.scope);
    let s = load(&path)?;
    let Some(original) = s.text.clone() else {
        println!(
            "{}: nothing to change (uninstalled already)",
            path.display()
        );
        return Ok(());
    };
    let (mut text, emptied) = strip_text(original)?;
    let mut record = Created::load(ctx);
    let created = record.get(&path);
    let mut remove_file = false;
    match &created {
        // Remove what install created, if nothing else has been put in it since.
        Some(created) => {
            for ev in created.iter().filter_map(|c| c.strip_prefix("hooks.")) {
                text = drop_if_empty(text, ev)?;
            }
            let root = reparse(&text)?;
            if created.iter().any(|c| c == "hooks")
                && root
                    .member("hooks")
                    .is_some_and(jsonedit::Node::is_empty_container)
            {
                text = jsonedit::remove_member(&text, &root, "hooks");
            }
            remove_file =
                created.iter().any(|c| c == "file") && reparse(&text)?.is_empty_container();
            // An empty container install wrote into gets back the whitespace it held.
            for (path, ws) in created
                .iter()
                .filter_map(|c| c.strip_prefix("inner:")?.split_once('='))
            {
                let root = reparse(&text)?;
                let node = match path {
                    "" => Some(&root),
                    "hooks" => root.member("hooks"),
                    p => p
                        .strip_prefix("hooks.")
                        .and_then(|ev| root.member("hooks")?.member(ev)),
                };
                if let Some(n) = node
                    && n.is_empty_container()
                    && jsonedit::inner(&text, n).is_empty()
                {
                    text = jsonedit::set_inner(&text, n, ws);
                }
            }
        }
        // Installed by an older version, or the record is gone: drop the events that
        // held only our entries.
        None => {
            for ev in &emptied {
                text = drop_if_empty(text, ev)?;
            }
        }
    }
    let after = (!remove_file).then_some(text.as_str());
    if apply(&s, after, a.dry_run, "uninstalled")? {
        record.set(&path, None)?;
    }
    let still = installed_in(ctx);
    if !still.is_empty() {
        println!(
            "the hook is still installed in {}: the daemon and the data folder stay",
            still
                .iter()
                .map(|(p, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(());
    }
    let cfg = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir);
    let unit = crate::daemon::ondemand::unit_path();
    let service =
        (a.daemon == Some(DaemonMode::Service) || cfg.mode == DaemonMode::Service) && unit.exists();
    if service {
        stop_service(&unit, a.dry_run)?;
    }
    if a.dry_run {
        return Ok(());
    }
    if cfg.mode == DaemonMode::OnDemand {
        // Nothing will start it again: the hook that did is gone.
        crate::daemon::ondemand::DaemonConfig {
            mode: DaemonMode::None,
            ..cfg
        }
        .write(&ctx.data_dir)?;
    }
    for pid in crate::daemon::ondemand::stop_on_demand(&ctx.data_dir) {
        println!("stopped the on-demand daemon (pid {pid})");
    }
    left_behind(ctx);
    Ok(())
}

/// Turns the service off (best effort, with the command to run where that fails) and
/// removes its unit file.
fn stop_service(unit: &Path, dry_run: bool) -> AppResult {
    let off = crate::daemon::ondemand::disable_command(unit);
    if dry_run {
        println!("would run `{off}` and remove {}", unit.display());
        return Ok(());
    }
    let mut words = off.split_whitespace();
    let ran = words.next().map(|program| {
        std::process::Command::new(program)
            .args(words)
            .stdin(std::process::Stdio::null())
            .output()
    });
    match ran {
        Some(Ok(o)) if o.status.success() => println!("turned the service off: {off}"),
        Some(Ok(o)) => println!(
            "could not turn the service off ({}): run `{off}` yourself",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        _ => println!("could not run `{off}`: run it yourself if the service runs"),
    }
    std::fs::remove_file(unit)
        .map_err(|e| AppError::runtime(format!("could not remove {}: {e}", unit.display())))?;
    println!("{}: removed", unit.display());
    Ok(())
}

/// Says what uninstall leaves, and how to remove it.
fn left_behind(ctx: &Context) {
    if ctx.data_dir.is_dir() {
        println!(
            "left: the data folder {} (hooks, queue, run log); remove it with: rm -r {}",
            ctx.data_dir.display(),
            crate::fsutil::shell_quote(&ctx.data_dir.to_string_lossy())
        );
    }
    let prompts = ctx.workspace.join(hooks_core::PROMPT_DIR);
    let files: Vec<String> = std::fs::read_dir(&prompts)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.ends_with(".md"))
        .collect();
    if !files.is_empty() {
        println!(
            "left: the prompt files in {} ({}); they are yours to keep or delete",
            prompts.display(),
            files.join(", ")
        );
    }
}

/// Where this app's hook is installed: the settings files that have one of its entries.
/// The URLs this app's `http` hooks post to, in every settings file it looks at.
pub fn installed_http_urls(ctx: &Context) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project, Scope::Local] {
        let p = settings_path(ctx, scope);
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
            .filter(|h| is_ours(h) && h["type"] == "http");
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

pub fn installed_in(ctx: &Context) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project, Scope::Local] {
        let p = settings_path(ctx, scope);
        let Ok(m) = read_settings(&p) else { continue };
        let mut events = Vec::new();
        if let Some(Value::Object(h)) = m.get("hooks") {
            for (ev, groups) in h {
                let has = groups.as_array().into_iter().flatten().any(|g| {
                    g.get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .any(is_ours)
                });
                if has {
                    events.push(ev.clone());
                }
            }
        }
        if !events.is_empty() {
            out.push((p, events));
        }
    }
    out
}
