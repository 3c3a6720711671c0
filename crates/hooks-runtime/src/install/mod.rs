//! `install` / `uninstall`: the `claude-hook` entries in Claude Code's `settings.json`, or
//! with `--agent codex` in Codex's `$CODEX_HOME/hooks.json` (Stop and SessionEnd).
//!
//! The file is edited as text (`hooks_claude_code::jsonedit`, with this app's handlers
//! recognised and placed by `hooks_claude_code::settings`): install inserts its entries and the
//! containers it must create, laid out in the file's own style, and changes no other byte;
//! uninstall takes out what install put in, and the containers install created (recorded
//! in `<data-dir>/installed.json`), so install then uninstall gives the file back byte for
//! byte. A symlinked file is written through to its target. Running `install` twice changes
//! nothing; an invalid settings file is refused and left as it was; `--dry-run` shows the
//! change and makes none. Entries of this app are recognised by their command: this
//! binary's own file name (`hooks-app`, or a team's build: [`Context::program`]) followed
//! by `claude-hook`; another binary's entries are left alone. With the `stop` trigger, a `SessionEnd`
//! entry without `--on` is added too: it only wakes follow-ups waiting for the
//! conversation to be closed. A `StopFailure` entry is always added: a turn stopped by a
//! usage limit or an outage queues the `conversation-failed` hooks.

use serde_json::Value;

use crate::options::{Agent, DaemonMode, Scope, Transport, Trigger};
use hooks_claude_code::jsonedit;
use hooks_claude_code::settings::*;

use crate::{AppError, AppResult, Context};

mod codex_toml;
pub mod mcp;
mod queue;
mod setup;
pub use setup::{record_written_prompts, restart};

mod options;
pub use options::{InstallOptions, UninstallOptions};

use hooks_claude_code::files::{Created, Settings, load, write_target, write_text};
use setup::*;

/// Where the settings files of this context are.
pub fn places(ctx: &Context) -> hooks_claude_code::files::Places {
    hooks_claude_code::files::Places {
        claude_home: ctx.claude_home.clone(),
        project: ctx.here.clone(),
        program: ctx.program.clone(),
    }
}

/// The settings file of `scope` in this context.
pub fn settings_path(ctx: &Context, scope: Scope) -> std::path::PathBuf {
    hooks_claude_code::files::settings_path(&places(ctx), scope.into())
}

/// Codex's hook configuration: `$CODEX_HOME/hooks.json`. Its shape is Claude Code's
/// `hooks` object (`{"hooks": {"Stop": [{"hooks": [handler]}]}}`), so the same text edits
/// put this app's entries in and take them out byte for byte.
pub fn codex_hooks_path(ctx: &Context) -> std::path::PathBuf {
    ctx.codex_home.join("hooks.json")
}

/// Codex's `config.toml`, where its settings, a person's hooks (if they keep them there)
/// and its hook trust live.
fn codex_config_path(ctx: &Context) -> std::path::PathBuf {
    ctx.codex_home.join("config.toml")
}

/// The files Codex's hooks can be in: hooks.json, and `config.toml` for a person who keeps
/// them there.
pub fn codex_hook_files(ctx: &Context) -> [std::path::PathBuf; 2] {
    [codex_hooks_path(ctx), codex_config_path(ctx)]
}

/// `config.toml`'s text, when there is one to read.
fn codex_config_text(ctx: &Context) -> Option<String> {
    let bytes = hooks_platform::read_regular(
        &codex_config_path(ctx),
        hooks_platform::ReadLimit::bytes(4 * 1024 * 1024),
    )
    .ok()?;
    String::from_utf8(bytes).ok()
}

/// Whether `install` adds to `config.toml` rather than hooks.json: the person keeps hooks
/// there and has no hooks.json (Codex warns when one layer has both).
fn codex_uses_toml(ctx: &Context) -> bool {
    !codex_hooks_path(ctx).exists()
        && codex_config_text(ctx).is_some_and(|t| codex_toml::has_hooks(&t))
}

/// The events of `config.toml` that hold this app's handlers.
fn codex_toml_installed(ctx: &Context) -> Vec<String> {
    codex_config_text(ctx)
        .map(|t| codex_toml::installed_events(&t, &ctx.program))
        .unwrap_or_default()
}

/// This app's handlers in Codex's hooks.json: event, group index, handler index.
fn codex_json_ours(ctx: &Context) -> Vec<(String, usize, usize)> {
    let Ok(map) = hooks_claude_code::files::read_settings(&codex_hooks_path(ctx)) else {
        return Vec::new();
    };
    let Some(Value::Object(hooks)) = map.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (ev, groups) in hooks {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (i, h) in handlers.into_iter().flatten().enumerate() {
                if is_ours(h, &ctx.program) {
                    out.push((ev.clone(), g, i));
                }
            }
        }
    }
    out
}

/// The events of Codex's hooks.json that hold this app's handlers (none: not installed).
fn codex_installed(ctx: &Context) -> Vec<String> {
    let mut events: Vec<String> = codex_json_ours(ctx).into_iter().map(|(e, ..)| e).collect();
    events.dedup();
    events
}

/// Whether Codex trusts the Stop entry `install` put in its hooks.json or config.toml: Codex
/// runs a hook only once a person trusted it (its TUI's "Trust all"), recorded in
/// `config.toml` as `[hooks.state."<file>:stop:<group>:<handler>"] trusted_hash = …`, the
/// indexes of the entry in its file (seen with Codex 0.171.0: a person's own trusted Stop
/// hook beside an untrusted one of ours is not taken for ours).
pub fn codex_trusted(ctx: &Context) -> bool {
    let Some(config) = codex_config_text(ctx) else {
        return false;
    };
    let json = codex_json_ours(ctx)
        .into_iter()
        .map(|p| (codex_hooks_path(ctx), p));
    let toml = codex_toml::ours(&config, &ctx.program)
        .into_iter()
        .map(|p| (codex_config_path(ctx), p));
    let stops: Vec<_> = json
        .chain(toml)
        .filter(|(_, (e, ..))| e == "Stop")
        .collect();
    !stops.is_empty()
        && stops.iter().all(|(file, (_, g, i))| {
            codex_toml::trusted(&config, &format!("{}:stop:{g}:{i}", file.display()))
        })
}

/// The settings files that hold this app's handlers, with their events: Claude Code's,
/// and Codex's hooks.json.
pub fn installed_in(ctx: &Context) -> Vec<(std::path::PathBuf, Vec<String>)> {
    let mut found = hooks_claude_code::files::installed_in(&places(ctx));
    let codex = codex_installed(ctx);
    if !codex.is_empty() {
        found.push((codex_hooks_path(ctx), codex));
    }
    let in_toml = codex_toml_installed(ctx);
    if !in_toml.is_empty() {
        found.push((codex_config_path(ctx), in_toml));
    }
    found
}

/// The file `install` and `uninstall` edit for `agent` in `scope`. Codex has one, its
/// user's: another scope is refused.
fn hook_file(ctx: &Context, agent: Agent, scope: Scope) -> AppResult<std::path::PathBuf> {
    match agent {
        Agent::Claude => Ok(settings_path(ctx, scope)),
        Agent::Codex if scope == Scope::User => Ok(codex_hooks_path(ctx)),
        Agent::Codex => Err(AppError::invalid(
            "scope: Codex's hooks are the user's ($CODEX_HOME/hooks.json): use --scope user",
        )),
    }
}

/// The URLs this app's `http` hooks post to, with the file each is in.
pub fn installed_http_urls(ctx: &Context) -> Vec<(std::path::PathBuf, String)> {
    hooks_claude_code::files::installed_http_urls(&places(ctx))
}

/// The command Claude Code runs, `claude-hook` followed by `args`. In the project scope, a
/// file teams commit, it names no path of this machine and does nothing where hooks-app
/// is not installed.
fn command_for(ctx: &Context, scope: Scope, args: &str) -> AppResult<String> {
    if scope != Scope::Project {
        return Ok(format!("{} claude-hook{args}", ctx.self_command()?));
    }
    let mut cmd = ctx.program.clone();
    if ctx.done_marker != hooks_core::DONE_MARKER {
        cmd.push_str(" --done-marker ");
        cmd.push_str(&crate::fsutil::shell_quote(&ctx.done_marker));
    }
    // Where hooks-app is missing, the event on stdin is still read (a hook that exits
    // without reading it leaves Claude Code writing into a closed pipe), and the exit is 0.
    Ok(format!(
        "command -v {} >/dev/null 2>&1 && exec {cmd} claude-hook{args} || cat >/dev/null",
        ctx.program
    ))
}

pub fn install(ctx: &Context, a: &InstallOptions) -> AppResult {
    if a.mcp {
        return mcp::install(ctx, a.dry_run);
    }
    if a.plugin {
        return install_for_plugin(ctx, a);
    }
    let path = hook_file(ctx, a.agent, a.scope)?;
    if a.agent == Agent::Codex && a.transport != Transport::Command {
        return Err(AppError::invalid(
            "transport: Codex runs command hooks; --transport http is for Claude Code",
        ));
    }
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
                hooks_http::HOOK_TOKEN_ENV,
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
    // follow up. Claude Code ignores this hook's output and exit code. Codex has no such
    // event.
    if a.agent == Agent::Claude {
        wanted.push(("StopFailure", handler(false)?));
    }
    if a.agent == Agent::Codex && codex_uses_toml(ctx) {
        let commands: Vec<(&str, String)> = wanted
            .iter()
            .map(|(ev, h)| (*ev, h["command"].as_str().unwrap_or_default().to_owned()))
            .collect();
        return install_codex_toml(ctx, a, &commands);
    }
    let mut expected = s.map.clone();
    strip_ours(&mut expected, &ctx.program);
    for (ev, h) in &wanted {
        add(&mut expected, ev, h.clone());
    }
    // Already installed as wanted, wherever the entries sit: leave the file alone, and
    // still apply the daemon's options given.
    if same_entries(&s.map, &expected, &ctx.program) {
        apply(&s, s.text.as_deref(), a.dry_run, "installed")?;
        return daemon_setup(ctx, a).and_then(|()| queue_after_install(ctx, a));
    }
    let original = s.text.clone().unwrap_or_else(|| "{}".into());
    let (mut text, _) = strip_text(original.clone(), &ctx.program)?;
    let st = jsonedit::style_of(&original, &reparse(&original)?);
    let mut record = Created::load(&ctx.data_dir);
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
        // The hook token, not the API's: Claude Code sends it to whatever holds the port.
        hooks_http::hook_token(&ctx.data_dir).map_err(AppError::runtime)?;
        crate::say!(
            "the http hook sends the hook token from ${0}: put `export {0}=$(cat {1})` where Claude Code's \
             environment comes from. It can only tell hooks-app that a conversation of yours ended \
             (checked against its transcript), never run or read anything, since whoever holds the \
             port while no daemon listens is sent it (`doctor` says when another user holds it). \
             An http hook loses the event when no daemon listens (Claude Code only reports the \
             error), so keep a daemon running (`hooks-app serve --http …`)",
            hooks_http::HOOK_TOKEN_ENV,
            ctx.data_dir.join(hooks_http::HOOK_TOKEN_FILE).display()
        );
    }
    if a.agent == Agent::Codex && !a.dry_run && !codex_trusted(ctx) {
        crate::say!(
            "Codex runs a hook only once you trust it: start `codex` once and choose \"Trust all \
             and continue\" when it says \"Hooks need review\" (`hooks-app doctor` checks it)"
        );
    }
    if a.scope == Scope::Project && !a.dry_run {
        crate::say!(
            "the command is portable: `hooks-app` from PATH, and a quiet no-op where it is not installed; \
             for this machine's path use --scope local"
        );
    }
    daemon_setup(ctx, a)?;
    queue_after_install(ctx, a)
}

/// `install --agent codex` for a person who keeps Codex's hooks in `config.toml`: this
/// app's block appended there (see [`codex_toml`]).
fn install_codex_toml(ctx: &Context, a: &InstallOptions, wanted: &[(&str, String)]) -> AppResult {
    let path = codex_config_path(ctx);
    let original = codex_config_text(ctx).unwrap_or_default();
    let text = codex_toml::with_block(&original, wanted, &ctx.program)
        .map_err(|e| AppError::invalid(format!("{}: {e}; nothing was written", path.display())))?;
    if a.dry_run && text != original {
        // Only the block: the rest of config.toml (keys, tokens) is not repeated.
        let added = text.strip_prefix(original.as_str()).unwrap_or(&text);
        crate::say!("would add to {}:", path.display());
        print!("{}", crate::output::safe(added));
        return Ok(());
    }
    let s = Settings {
        path,
        text: Some(original),
        map: serde_json::Map::new(),
    };
    apply(&s, Some(&text), a.dry_run, "installed")?;
    if !a.dry_run && !codex_trusted(ctx) {
        crate::say!(
            "Codex runs a hook only once you trust it: start `codex` once and choose \"Trust all \
             and continue\" when it says \"Hooks need review\" (`hooks-app doctor` checks it)"
        );
    }
    daemon_setup(ctx, a)?;
    queue_after_install(ctx, a)
}

/// `uninstall --agent codex`'s part in `config.toml`: this app's block taken out, the rest
/// of the file as it is. Whether there was one.
fn uninstall_codex_toml(ctx: &Context, dry_run: bool) -> AppResult<bool> {
    let Some(original) = codex_config_text(ctx) else {
        return Ok(false);
    };
    let (text, found) = codex_toml::strip(&original, &ctx.program);
    if !found {
        return Ok(false);
    }
    if dry_run {
        crate::say!(
            "would take {}'s block out of {}",
            ctx.program,
            codex_config_path(ctx).display()
        );
        return Ok(true);
    }
    let s = Settings {
        path: codex_config_path(ctx),
        text: Some(original),
        map: serde_json::Map::new(),
    };
    apply(&s, Some(&text), dry_run, "uninstalled")?;
    Ok(true)
}

/// `install --plugin`: Claude Code's hooks come from this app's plugin, so no entry is
/// written (one an earlier `install` wrote in the user's settings is taken out, so no event
/// is told twice), and the rest of the set-up is done as `install` does it: the daemon's
/// mode and the environment it starts with, kept from this command, the user's own.
fn install_for_plugin(ctx: &Context, a: &InstallOptions) -> AppResult {
    if a.agent != Agent::Claude || a.transport != Transport::Command {
        return Err(AppError::invalid(
            "plugin: --plugin is for Claude Code's plugin, whose hooks run claude-hook; leave out --agent and --transport",
        ));
    }
    let user = settings_path(ctx, Scope::User);
    if installed_in(ctx).iter().any(|(p, _)| *p == user) {
        take_out(ctx, &user, a.dry_run)?;
    }
    record_for_plugin(ctx, a.dry_run)?;
    match hooks_claude_code::files::plugin_installed(&places(ctx)) {
        Some((file, events)) => crate::say!(
            "hooks: from the Claude Code plugin, {} ({})",
            file.display(),
            events.join(", ")
        ),
        None => crate::say!(
            "hooks: none yet; in Claude Code, `/plugin marketplace add DIR-OR-REPO` (a checkout of hooks-app, or its repository) and `/plugin install hooks-app@hooks-app` put them in"
        ),
    }
    daemon_setup(ctx, a)?;
    queue_after_install(ctx, a)
}

/// Writes, in each of the plugin's data folders, the line that runs this very binary (by
/// its absolute path, with the options a hook command would carry): the plugin runs that
/// and never a `hooks-app` on `PATH`.
fn record_for_plugin(ctx: &Context, dry_run: bool) -> AppResult {
    use hooks_claude_code::files::{PLUGIN_RECORD, plugin_data_dirs};
    let line = format!("exec {} \"$@\"\n", ctx.self_command()?);
    for dir in plugin_data_dirs(&places(ctx)) {
        let file = dir.join(PLUGIN_RECORD);
        if dry_run {
            crate::say!("would write {}: {}", file.display(), line.trim_end());
            continue;
        }
        hooks_platform::files::write_private(&file, &line)
            .map_err(|e| AppError::runtime(format!("cannot write {}: {e}", file.display())))?;
        crate::say!("plugin: runs this hooks-app ({})", file.display());
    }
    Ok(())
}

/// What is queued runs again: a pause uninstall set is lifted, and a daemon started.
fn queue_after_install(ctx: &Context, a: &InstallOptions) -> AppResult {
    if a.dry_run {
        return Ok(());
    }
    queue::after_install(ctx)
}

pub fn uninstall(ctx: &Context, a: &UninstallOptions) -> AppResult {
    if a.mcp {
        return mcp::uninstall(ctx, a.dry_run);
    }
    let path = hook_file(ctx, a.agent, a.scope)?;
    if a.agent == Agent::Codex
        && uninstall_codex_toml(ctx, a.dry_run)?
        && codex_installed(ctx).is_empty()
    {
        return uninstall_rest(ctx, a);
    }
    if take_out(ctx, &path, a.dry_run)? {
        uninstall_rest(ctx, a)
    } else {
        Ok(())
    }
}

/// Takes this app's entries out of the settings file `path`, and what install created for
/// them (an event's list, `hooks`, the file) where nothing else has been put in it since.
/// `false`: there is no such file (uninstalled already), which it says.
fn take_out(ctx: &Context, path: &std::path::Path, dry_run: bool) -> AppResult<bool> {
    let s = load(path)?;
    let Some(original) = s.text.clone() else {
        crate::say!(
            "{}: nothing to change (uninstalled already)",
            path.display()
        );
        return Ok(false);
    };
    let (mut text, emptied) = strip_text(original, &ctx.program)?;
    let mut record = Created::load(&ctx.data_dir);
    let created = record.get(path);
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
    if apply(&s, after, dry_run, "uninstalled")? {
        record.set(path, None)?;
    }
    Ok(true)
}

/// What `uninstall` does once the hook files are edited: where no hook is left, the daemon
/// set-up is taken back and the queue paused or dropped.
fn uninstall_rest(ctx: &Context, a: &UninstallOptions) -> AppResult {
    let still = installed_in(ctx);
    if !still.is_empty() {
        crate::say!(
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
    // Nothing fires after uninstall unless the user asks.
    queue::after_uninstall(ctx, a.drop_queue)?;
    if cfg.mode == DaemonMode::OnDemand {
        // Nothing will start it again: the hook that did is gone.
        crate::daemon::ondemand::DaemonConfig {
            mode: DaemonMode::None,
            before_uninstall: Some(cfg.mode),
            ..cfg
        }
        .write(&ctx.data_dir)?;
    }
    for pid in crate::daemon::ondemand::stop_on_demand(&ctx.data_dir) {
        crate::say!("stopped the on-demand daemon (pid {pid})");
    }
    left_behind(ctx);
    Ok(())
}

/// Shows or writes the new text; `None` removes the file.
fn apply(s: &Settings, after: Option<&str>, dry_run: bool, verb: &str) -> AppResult<bool> {
    if s.text.as_deref() == after {
        crate::say!("{}: nothing to change ({verb} already)", s.path.display());
        return Ok(false);
    }
    if dry_run {
        match after {
            Some(t) => {
                crate::say!("would write {}:", s.path.display());
                print!("{}", crate::output::safe(t));
                if !t.ends_with('\n') {
                    crate::say!("");
                }
            }
            None => crate::say!("would remove {} (install created it)", s.path.display()),
        }
        return Ok(false);
    }
    match after {
        Some(t) => write_text(&s.path, t)?,
        None => std::fs::remove_file(write_target(&s.path)?).map_err(|e| {
            AppError::runtime(format!("could not remove {}: {e}", s.path.display()))
        })?,
    }
    crate::say!("{}: {verb}", s.path.display());
    Ok(true)
}
