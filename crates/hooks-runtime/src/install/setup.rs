//! The daemon's set-up that goes with install and uninstall: the mode, the service unit,
//! stopping what runs, and what is left behind.

use std::path::Path;

use super::options::InstallOptions;
use crate::options::DaemonMode;

use crate::{AppError, AppResult, Context};

/// Keeps the daemon mode for claude-hook and doctor, and writes the service unit.
pub fn daemon_setup(ctx: &Context, a: &InstallOptions) -> AppResult {
    use crate::daemon::ondemand::{self, DaemonConfig};
    // What is given changes; what is not is kept as it was set.
    let before = ctx
        .data_dir
        .join("daemon.json")
        .exists()
        .then(|| DaemonConfig::read(&ctx.data_dir));
    let cfg = DaemonConfig {
        // After uninstall, the mode it had before (uninstall only set `none` because the
        // hook that started daemons was gone).
        mode: a
            .daemon
            .or(before.map(|b| b.before_uninstall.unwrap_or(b.mode)))
            .unwrap_or(DaemonMode::OnDemand),
        idle_exit: a
            .idle_exit
            .or(before.map(|b| b.idle_exit))
            .unwrap_or(crate::options::DEFAULT_IDLE_EXIT),
        http: a.http.unwrap_or(before.and_then(|b| b.http)),
        before_uninstall: None,
    };
    if let Some(b) = before {
        let mut changed = Vec::new();
        if b.mode != cfg.mode {
            changed.push(format!(
                "daemon {} → {}",
                ondemand::mode_name(b.mode),
                ondemand::mode_name(cfg.mode)
            ));
        }
        if b.idle_exit != cfg.idle_exit {
            changed.push(format!("idle exit {} s → {} s", b.idle_exit, cfg.idle_exit));
        }
        if b.http != cfg.http {
            let http = |h: Option<std::net::SocketAddr>| h.map_or("none".into(), |h| h.to_string());
            changed.push(format!("http {} → {}", http(b.http), http(cfg.http)));
        }
        if !changed.is_empty() {
            crate::say!(
                "{}: {}",
                if a.dry_run { "would change" } else { "changed" },
                changed.join(", ")
            );
        }
    }
    if let Some(addr) = cfg.http {
        hooks_http::check_options(&hooks_http::HttpOptions {
            addr,
            no_auth: false,
            allow_insecure: false,
        })
        .map_err(AppError::invalid)?;
        if cfg.mode == DaemonMode::None {
            return Err(AppError::invalid(
                "http: --http needs a daemon to serve it: --daemon on-demand (the default) or service",
            ));
        }
    }
    let unit = ondemand::unit_path();
    if a.dry_run {
        crate::say!(
            "would set the daemon mode to {}",
            ondemand::mode_name(cfg.mode)
        );
        if cfg.mode == DaemonMode::Service {
            crate::say!(
                "would write {}:\n{}",
                unit.display(),
                ondemand::unit_text(ctx)?
            );
        }
        return Ok(());
    }
    let mut changed = false;
    if DaemonConfig::read(&ctx.data_dir) != cfg || !ctx.data_dir.join("daemon.json").exists() {
        cfg.write(&ctx.data_dir)?;
        changed = true;
    }
    // The environment a daemon started from a hook gets: this command's, the user's own.
    let env = crate::daemon::environment::DaemonEnvironment::capture(ctx);
    if crate::daemon::environment::DaemonEnvironment::read(&ctx.data_dir).as_ref() != Some(&env) {
        env.write(&ctx.data_dir)?;
        changed = true;
    }
    if changed {
        restart_on_demand(ctx, cfg.mode)?;
    }
    if std::env::var_os("CLAUDECODE").is_some() {
        crate::say!(
            "warning: install ran inside a Claude Code session, whose environment (a project's settings `env` among it) the daemon now gets; run `hooks-app install` again from your own shell"
        );
    }
    match cfg.mode {
        DaemonMode::OnDemand => crate::say!(
            "daemon: on demand (claude-hook starts `serve` when it queues something; it exits after {} s with nothing pending; log: {}){}",
            cfg.idle_exit,
            ctx.data_dir.join(ondemand::LOG_FILE).display(),
            cfg.http
                .map(|h| format!("; while it runs it serves http://{h} (`hooks-app open`)"))
                .unwrap_or_default()
        ),
        DaemonMode::None => {
            crate::say!("daemon: none (run `hooks-app serve`, or `hooks-app tick` from cron)");
        }
        DaemonMode::Service => {
            let text = ondemand::unit_text(ctx)?;
            let current =
                hooks_platform::read_regular(&unit, hooks_platform::ReadLimit::bytes(1024 * 1024))
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
            if current.as_deref() != Some(text.as_str()) {
                if let Some(dir) = unit.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        AppError::runtime(format!("could not create {}: {e}", dir.display()))
                    })?;
                }
                // Written whole by rename: a FIFO put in its place is replaced, never waited on.
                crate::fsutil::write_private(&unit, &text)?;
            }
            crate::say!(
                "daemon: service, {}; turn it on with: {}",
                unit.display(),
                ondemand::enable_command(&unit)
            );
        }
    }
    Ok(())
}

/// A running on-demand daemon was started with what `install` just changed (its HTTP
/// address, idle exit, mode or environment): it is stopped (SIGTERM: it finishes or hands
/// back what it runs) and, still on demand, started again, saying so, so the change holds
/// now rather than after it happens to go idle.
fn restart_on_demand(ctx: &Context, mode: DaemonMode) -> AppResult {
    let ondemand = crate::daemon::ondemand::stop_on_demand(&ctx.data_dir);
    let Some(pids) = (!ondemand.is_empty()).then(|| {
        ondemand
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }) else {
        return Ok(());
    };
    if mode != DaemonMode::OnDemand {
        crate::say!("stopped the on-demand daemon (pid {pids}): the daemon is no longer on demand");
    } else if crate::daemon::ondemand::ensure_running(ctx, false)? {
        crate::say!(
            "restarted the on-demand daemon (pid {pids} stopped) so it runs with this change"
        );
    } else {
        crate::say!(
            "asked the on-demand daemon (pid {pids}) to stop: it is finishing a run, and the next one runs with this change"
        );
    }
    Ok(())
}

/// `hooks-app restart`: the daemon runs with the set-up as it is now. On demand, the
/// running daemon is stopped (SIGTERM: it finishes or hands back what it runs) and a new
/// one started; none running, one is started. A service is restarted by its manager (the
/// command is said); a `serve` the person started is theirs to restart.
pub fn restart(ctx: &Context) -> AppResult {
    let cfg = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir);
    match cfg.mode {
        DaemonMode::OnDemand => {
            let stopped = crate::daemon::ondemand::stop_on_demand(&ctx.data_dir);
            let pids = stopped
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let started = crate::daemon::ondemand::ensure_running(ctx, false)?;
            match (stopped.is_empty(), started) {
                (false, true) => crate::say!("restarted the on-demand daemon (pid {pids} stopped)"),
                (true, true) => crate::say!("no daemon was running: started one (on demand)"),
                (false, false) => crate::say!(
                    "asked the on-demand daemon (pid {pids}) to stop: it is finishing a run, and the next one starts with the set-up as it is now"
                ),
                (true, false) => {
                    return Err(AppError::runtime(
                        "a daemon that was not started on demand serves this data folder (`hooks-app status` names it): restart it where it was started",
                    ));
                }
            }
        }
        DaemonMode::Service => crate::say!(
            "the daemon runs as a user service: restart it with `{}`",
            crate::daemon::ondemand::restart_command(&crate::daemon::ondemand::unit_path())
        ),
        DaemonMode::None => {
            return Err(AppError::invalid(
                "restart: no daemon is set up here (`hooks-app install` sets one up, started on demand); a `hooks-app serve` you started is restarted where you started it",
            ));
        }
    }
    Ok(())
}

/// Turns the service off (best effort, with the command to run where that fails) and
/// removes its unit file.
pub fn stop_service(unit: &Path, dry_run: bool) -> AppResult {
    let off = crate::daemon::ondemand::disable_command(unit);
    if dry_run {
        crate::say!("would run `{off}` and remove {}", unit.display());
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
        Some(Ok(o)) if o.status.success() => crate::say!("turned the service off: {off}"),
        Some(Ok(o)) => crate::say!(
            "could not turn the service off ({}): run `{off}` yourself",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        _ => crate::say!("could not run `{off}`: run it yourself if the service runs"),
    }
    std::fs::remove_file(unit)
        .map_err(|e| AppError::runtime(format!("could not remove {}: {e}", unit.display())))?;
    crate::say!("{}: removed", unit.display());
    Ok(())
}

/// The file, in the data folder, that lists the prompt files `init` wrote, in whichever
/// folder it ran: what `uninstall` says it leaves.
pub const WRITTEN_PROMPTS_FILE: &str = "prompts-written.json";

/// The prompt files `init` wrote, as recorded (none when the record is missing or damaged:
/// it only ever adds to what uninstall says).
fn written_prompts(data_dir: &Path) -> Vec<std::path::PathBuf> {
    hooks_platform::read_regular(
        &data_dir.join(WRITTEN_PROMPTS_FILE),
        hooks_platform::ReadLimit::bytes(1024 * 1024),
    )
    .ok()
    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    .and_then(|v| {
        v.get("files")?.as_array().map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(std::path::PathBuf::from))
                .collect()
        })
    })
    .unwrap_or_default()
}

/// Adds `files` (absolute paths `init` just wrote) to the record of the prompt files it
/// wrote.
pub fn record_written_prompts(data_dir: &Path, files: &[std::path::PathBuf]) -> AppResult {
    if files.is_empty() {
        return Ok(());
    }
    let mut all = written_prompts(data_dir);
    all.extend(files.iter().cloned());
    all.sort();
    all.dedup();
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "files": all.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
    }))
    .map_err(|e| AppError::runtime(e.to_string()))?;
    let file = data_dir.join(WRITTEN_PROMPTS_FILE);
    hooks_platform::files::write_private(&file, &format!("{text}\n"))
        .map_err(|e| AppError::runtime(format!("could not write {}: {e}", file.display())))
}

/// Says what uninstall leaves, and how to remove it: the data folder, and the prompt files
/// in the workspace and in every folder `init` wrote them into, by folder.
pub fn left_behind(ctx: &Context) {
    if ctx.data_dir.is_dir() {
        crate::say!(
            "left: the data folder {} (hooks, queue, run log); remove it with: rm -r {}",
            ctx.data_dir.display(),
            crate::fsutil::shell_quote(&ctx.data_dir.to_string_lossy())
        );
    }
    let prompts = ctx.workspace.join(hooks_core::PROMPT_DIR);
    let mut by_dir: std::collections::BTreeMap<std::path::PathBuf, Vec<String>> =
        std::collections::BTreeMap::new();
    for e in std::fs::read_dir(&prompts).into_iter().flatten().flatten() {
        if let Some(n) = e.file_name().to_str().filter(|n| n.ends_with(".md")) {
            by_dir
                .entry(prompts.clone())
                .or_default()
                .push(n.to_owned());
        }
    }
    for f in written_prompts(&ctx.data_dir) {
        let (Some(dir), Some(name)) = (f.parent(), f.file_name().and_then(|n| n.to_str())) else {
            continue;
        };
        if f.is_file() {
            by_dir
                .entry(dir.to_path_buf())
                .or_default()
                .push(name.to_owned());
        }
    }
    for (dir, mut files) in by_dir {
        files.sort();
        files.dedup();
        crate::say!(
            "left: the prompt files in {} ({}); they are yours to keep or delete",
            dir.display(),
            files.join(", ")
        );
    }
}
