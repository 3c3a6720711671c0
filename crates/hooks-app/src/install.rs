//! `install` / `uninstall`: the `claude-hook` entries in Claude Code's `settings.json`.
//!
//! Every other setting and hook is kept, in its order. Running `install` twice changes
//! nothing; an invalid settings file is refused and left as it was; `--dry-run` shows the
//! change and makes none. Entries of this app are recognised by their command: a program
//! named `hooks-app` followed by `claude-hook`. With the `stop` trigger, a `SessionEnd`
//! entry without `--on` is added too: it only wakes follow-ups waiting for the
//! conversation to be closed.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::cli::{InstallArgs, Scope, Trigger, UninstallArgs};
use crate::{AppError, AppResult, Context};

/// Seconds Claude gives the hook; it returns in milliseconds.
const HOOK_TIMEOUT: u64 = 30;

pub fn settings_path(ctx: &Context, scope: Scope) -> PathBuf {
    match scope {
        Scope::User => ctx.claude_home.join("settings.json"),
        Scope::Project => ctx.workspace.join(".claude/settings.json"),
    }
}

/// Reads a settings file; a missing one is an empty object.
pub fn read_settings(path: &Path) -> AppResult<Map<String, Value>> {
    let text = match std::fs::read_to_string(path) {
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

/// Whether a hook handler is one of this app's.
pub fn is_ours(handler: &Value) -> bool {
    let Some(cmd) = handler.get("command").and_then(Value::as_str) else {
        return false;
    };
    let mut words = cmd.split_whitespace();
    let prog = words.next().unwrap_or("").trim_matches(['\'', '"']);
    (prog.ends_with("/hooks-app") || prog == "hooks-app") && cmd.contains(" claude-hook")
}

/// Removes this app's handlers everywhere; drops groups and events left empty.
fn strip_ours(settings: &mut Map<String, Value>) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    for ev in events {
        let Some(Value::Array(groups)) = hooks.get_mut(&ev) else {
            continue;
        };
        let before = groups.len();
        for g in groups.iter_mut() {
            if let Some(Value::Array(hs)) = g.get_mut("hooks") {
                hs.retain(|h| !is_ours(h));
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|a| !a.is_empty())
        });
        if groups.is_empty() && before > 0 {
            hooks.shift_remove(&ev);
        }
    }
}

fn add(settings: &mut Map<String, Value>, event: &str, command: String) {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else { return };
    let groups = hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(groups) = groups {
        groups.push(
            json!({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]}),
        );
    }
}

fn write_settings(path: &Path, settings: &Map<String, Value>) -> AppResult {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| AppError::runtime(format!("could not create {}: {e}", dir.display())))?;
    let mut text =
        serde_json::to_string_pretty(settings).map_err(|e| AppError::runtime(e.to_string()))?;
    text.push('\n');
    let tmp = dir.join(format!(".settings.json.hooks-app.{}", std::process::id()));
    let r = std::fs::write(&tmp, text).and_then(|()| {
        if let Ok(m) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, m.permissions())?;
        }
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    r.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        AppError::runtime(format!("could not write {}: {e}", path.display()))
    })
}

fn report(
    path: &Path,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    dry_run: bool,
    verb: &str,
) -> AppResult {
    if before == after {
        println!("{}: nothing to change ({verb} already)", path.display());
        return Ok(());
    }
    if dry_run {
        println!("would write {}:", path.display());
        println!(
            "{}",
            serde_json::to_string_pretty(after).unwrap_or_default()
        );
        return Ok(());
    }
    write_settings(path, after)?;
    println!("{}: {verb}", path.display());
    Ok(())
}

pub fn install(ctx: &Context, a: &InstallArgs) -> AppResult {
    let path = settings_path(ctx, a.scope);
    let before = read_settings(&path)?;
    let mut after = before.clone();
    strip_ours(&mut after);
    let base = ctx.self_command()?;
    if matches!(a.trigger, Trigger::Stop | Trigger::Both) {
        add(&mut after, "Stop", format!("{base} claude-hook"));
    }
    if matches!(a.trigger, Trigger::SessionEnd | Trigger::Both) {
        add(
            &mut after,
            "SessionEnd",
            format!("{base} claude-hook --on session-end"),
        );
    } else {
        // A conversation being closed wakes the follow-ups that wait for it, so they run
        // within seconds of the person's /exit. This entry never queues anything.
        add(&mut after, "SessionEnd", format!("{base} claude-hook"));
    }
    // Keep a settings file that already had our entries, in the same places, unchanged.
    let after = if same_entries(&before, &after) {
        before.clone()
    } else {
        after
    };
    report(&path, &before, &after, a.dry_run, "installed")
}

/// Whether two settings hold the same set of our commands per event, with everything else equal.
fn same_entries(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let ours = |m: &Map<String, Value>| -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(Value::Object(h)) = m.get("hooks") {
            for (ev, groups) in h {
                for g in groups.as_array().into_iter().flatten() {
                    for hd in g
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if is_ours(hd) {
                            v.push((ev.clone(), hd["command"].as_str().unwrap_or("").to_owned()));
                        }
                    }
                }
            }
        }
        v.sort();
        v
    };
    let mut sa = a.clone();
    let mut sb = b.clone();
    strip_ours(&mut sa);
    strip_ours(&mut sb);
    sa == sb && ours(a) == ours(b)
}

pub fn uninstall(ctx: &Context, a: &UninstallArgs) -> AppResult {
    let path = settings_path(ctx, a.scope);
    let before = read_settings(&path)?;
    let mut after = before.clone();
    strip_ours(&mut after);
    report(&path, &before, &after, a.dry_run, "uninstalled")
}

/// Where this app's hook is installed: the settings files that have one of its entries.
pub fn installed_in(ctx: &Context) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project] {
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
