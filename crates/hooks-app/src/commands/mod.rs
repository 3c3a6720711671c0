//! Every command but the hook entry point, the daemon and install: parse the
//! input into the core's validated types, call the service, print a table or `--json`.

use std::process::ExitCode;

use crate::cli::{Cli, Command, HooksCmd};
use crate::{AppError, AppResult, Context, claude_hook, compose, daemon, install};

mod alerts;
mod budget;
mod convert;
mod doctor;
mod history;
mod hooks;
mod ids;
mod init;
mod notify;
mod open;
mod pause;
mod pending;
mod prune;
mod runs;
mod schedule;
mod session;
mod status;
mod store;
mod trust;

use self::history::history;
use self::hooks::hooks;
use self::ids::suggest_hook;
use self::init::init;
use self::notify::notify;
use self::open::open;
use self::pending::pending;
use self::prune::prune;
use self::runs::runs;
use self::session::session_cmd;

pub fn dispatch(cli: Cli) -> AppResult<ExitCode> {
    // These describe the program itself: no data folder, no settings.
    match cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "hooks-app", &mut std::io::stdout());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .map_err(|e| AppError::runtime(format!("could not write the man page: {e}")))?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let mut ctx = match Context::resolve(&convert::flags(&cli.global)) {
        Ok(c) => c,
        // Exit 2 from a Claude Code hook would block Claude.
        Err(e) if matches!(cli.command, Command::ClaudeHook(_)) => {
            return Err(AppError::runtime(e.message));
        }
        Err(e) => return Err(e),
    };
    // A data folder someone else owns (made beforehand by another user) is never used:
    // doctor says so, every other command refuses.
    if !matches!(cli.command, Command::Doctor(_))
        && let Some(why) = crate::fsutil::foreign_owner(
            &ctx.data_dir,
            matches!(cli.command, Command::ClaudeHook(_)),
        )
    {
        return Err(AppError::runtime(why));
    }
    // Commands that only read never create a store: a mistyped --data-dir is an error,
    // not a fresh store seeded with post-task.
    let reads_only = matches!(
        cli.command,
        Command::Hooks(HooksCmd::List(_) | HooksCmd::Show { .. })
            | Command::Pending { action: None, .. }
            | Command::History { .. }
            | Command::Runs { .. }
            | Command::Session { .. }
            | Command::Status(_)
    );
    if reads_only {
        ctx.read_only = true;
        ctx.require_store()?;
    }
    match cli.command {
        Command::Completions { .. } | Command::Man => {}
        Command::ClaudeHook(a) => return Ok(claude_hook::run(&ctx, a.on)),
        Command::Init => {
            say_kept_workspace(compose::record_workspace(&mut ctx)?);
            init(&ctx)?
        }
        Command::Hooks(h) => hooks(&ctx, h).map_err(|e| suggest_hook(&ctx, e))?,
        Command::Pending { action: None, json } => pending(&ctx, json.json)?,
        Command::Pending {
            action:
                Some(crate::cli::PendingCmd::Drop {
                    hook,
                    session,
                    json,
                }),
            ..
        } => pending::drop(&ctx, &hook, &session, json.json).map_err(|e| suggest_hook(&ctx, e))?,
        Command::History { id, json } => {
            history(&ctx, &id, json.json).map_err(|e| suggest_hook(&ctx, e))?
        }
        Command::Runs {
            hook,
            session,
            limit,
            summary,
            by,
            since,
            json,
        } => runs(&ctx, hook, session, limit, (summary, by, since), json.json)
            .map_err(|e| suggest_hook(&ctx, e))?,
        Command::Budget(cmd) => budget::budget(&ctx, cmd)?,
        Command::Pause { for_, json } => pause::pause(&ctx, for_.as_deref(), json.json)?,
        Command::Unpause(j) => pause::unpause(&ctx, j.json)?,
        Command::Alerts(a) => match a {
            crate::cli::AlertsCmd::Set {
                url,
                no_url,
                on,
                desktop,
                no_desktop,
            } => {
                let url = match (url.as_deref(), no_url) {
                    (_, true) => alerts::Change::Clear,
                    (Some(u), false) => alerts::Change::To(u),
                    (None, false) => alerts::Change::Keep,
                };
                let desktop = match (desktop, no_desktop) {
                    (_, true) => Some(false),
                    (true, false) => Some(true),
                    (false, false) => None,
                };
                alerts::set(&ctx, url, on.as_deref(), desktop)?
            }
            crate::cli::AlertsCmd::Show(j) => alerts::show(&ctx, j.json)?,
            crate::cli::AlertsCmd::Clear => alerts::clear(&ctx)?,
            crate::cli::AlertsCmd::Test => alerts::test(&ctx)?,
        },
        Command::Session { session, json } => session_cmd(&ctx, &session, json.json)?,
        Command::Send {
            session,
            prompt,
            key,
            json,
        } => schedule::send(&ctx, &session, &prompt, key.as_deref(), json.json)?,
        Command::Mcp {
            max_queued,
            max_ahead,
            max_cost_usd,
        } => schedule::mcp(&ctx, max_queued, &max_ahead, max_cost_usd)?,
        Command::After {
            after,
            prompt,
            session,
            json,
        } => schedule::after(&ctx, &after, &prompt, session.as_deref(), json.json)?,
        Command::Every {
            every,
            prompt,
            session,
            times,
            until,
            json,
        } => schedule::every(
            &ctx,
            &every,
            &prompt,
            session.as_deref(),
            (times, until.as_deref()),
            json.json,
        )?,
        Command::Notify {
            session,
            event,
            cwd,
            transcript,
            origin,
            json,
        } => notify(&ctx, &session, &event, cwd, transcript, origin, json.json)?,
        Command::Install(a) if a.mcp => install::install(&ctx, &convert::install(&a))?,
        Command::Install(a) => {
            if !a.dry_run {
                say_kept_workspace(compose::record_workspace(&mut ctx)?);
            }
            ctx.keep_runner_url(a.dry_run)?;
            install::install(&ctx, &convert::install(&a))?
        }
        Command::Uninstall(a) => install::uninstall(&ctx, &convert::uninstall(&a))?,
        Command::Store(cmd) => store::run(&ctx, cmd)?,
        Command::Prune { older_than } => prune(&ctx, older_than)?,
        Command::Tick(a) => return daemon::tick(&ctx, &convert::run(&a)),
        Command::Serve(a) => return daemon::serve(&ctx, &convert::serve(&a)),
        Command::Restart => install::restart(&ctx)?,
        Command::Status(j) => status::status(&ctx, j.json)?,
        Command::Open { no_browser } => open(&ctx, no_browser)?,
        Command::Doctor(j) => return doctor::doctor(&ctx, j.json),
        Command::Trust(a) => trust::run(&ctx, &a)?,
        Command::Prices(j) => crate::prices::command(&ctx, j.json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Says that `init` or `install`, run outside the workspace, kept it.
fn say_kept_workspace(kept: Option<std::path::PathBuf>) {
    if let Some(w) = kept {
        crate::say!(
            "the workspace stays {} (prompts come from there; --workspace DIR moves it)",
            w.display()
        );
    }
}
