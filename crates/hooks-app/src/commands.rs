//! Every command but the hook entry point, the daemon, install and doctor: parse the
//! input into the core's validated types, call the service, print a table or `--json`.

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::Duration;

use hooks_core::ports::Clock;
use hooks_core::service::{NotifyEvent, NotifyOutcome};
use hooks_core::stamp;
use hooks_core::*;
use serde_json::{Value, json};

use crate::cli::{Cli, Command, HooksCmd};
use crate::context::{block_on, service};
use crate::output::{print_json, print_table, seconds, yes};
use crate::sessions::resolve_session;
use crate::sessions::session_lines;
use crate::sessions::session_view;
use crate::{AppError, AppResult, Context, claude_hook, context, daemon, doctor, install, prompts};

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
    let mut ctx = match Context::resolve(&cli.global) {
        Ok(c) => c,
        // Exit 2 from a Claude Code hook would block Claude.
        Err(e) if matches!(cli.command, Command::ClaudeHook(_)) => {
            return Err(AppError::runtime(e.message));
        }
        Err(e) => return Err(e),
    };
    // Commands that only read never create a store: a mistyped --data-dir is an error,
    // not a fresh store seeded with post-task.
    let reads_only = matches!(
        cli.command,
        Command::Hooks(HooksCmd::List(_) | HooksCmd::Show { .. })
            | Command::Pending(_)
            | Command::History { .. }
            | Command::Runs { .. }
            | Command::Session { .. }
            | Command::Status(_)
    );
    if reads_only {
        ctx.require_store()?;
    }
    match cli.command {
        Command::Completions { .. } | Command::Man => {}
        Command::ClaudeHook(a) => return Ok(claude_hook::run(&ctx, a.on)),
        Command::Init => {
            context::record_workspace(&mut ctx)?;
            init(&ctx)?
        }
        Command::Hooks(h) => hooks(&ctx, h).map_err(|e| suggest_hook(&ctx, e))?,
        Command::Pending(j) => pending(&ctx, j.json)?,
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
        Command::Budget(cmd) => crate::spend::budget(&ctx, cmd)?,
        Command::Pause { for_, json } => crate::pause::pause(&ctx, for_.as_deref(), json.json)?,
        Command::Unpause(j) => crate::pause::unpause(&ctx, j.json)?,
        Command::Alerts(a) => match a {
            crate::cli::AlertsCmd::Set { url, on, desktop } => {
                crate::alerts::set(&ctx, url.as_deref(), on.as_deref(), desktop)?
            }
            crate::cli::AlertsCmd::Show(j) => crate::alerts::show(&ctx, j.json)?,
            crate::cli::AlertsCmd::Clear => crate::alerts::clear(&ctx)?,
            crate::cli::AlertsCmd::Test => crate::alerts::test(&ctx)?,
        },
        Command::Session { session, json } => session_cmd(&ctx, &session, json.json)?,
        Command::Notify {
            session,
            event,
            cwd,
            transcript,
            origin,
            json,
        } => notify(&ctx, &session, &event, cwd, transcript, origin, json.json)?,
        Command::Install(a) => {
            if !a.dry_run {
                context::record_workspace(&mut ctx)?;
            }
            install::install(&ctx, &a)?
        }
        Command::Uninstall(a) => install::uninstall(&ctx, &a)?,
        Command::Store(cmd) => crate::storecmd::run(&ctx, cmd)?,
        Command::Prune { older_than } => prune(&ctx, older_than)?,
        Command::Tick(a) => return daemon::tick(&ctx, &a),
        Command::Serve(a) => return daemon::serve(&ctx, &a),
        Command::Status(j) => doctor::status(&ctx, j.json)?,
        Command::Open { no_browser } => open(&ctx, no_browser)?,
        Command::Doctor(j) => return doctor::doctor(&ctx, j.json),
        Command::Trust(a) => crate::trust::command(&ctx, &a)?,
        Command::Prices(j) => crate::prices::command(&ctx, j.json)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn init(ctx: &Context) -> AppResult {
    let existed = ctx.existing_store().is_ok();
    let store = ctx.open_store()?;
    block_on(store.snapshot())??;
    for said in crate::fsutil::tighten_data_dir(&ctx.data_dir) {
        println!("{said}");
    }
    crate::http::token(&ctx.data_dir)?;
    let removed = store.signals.housekeep()?;
    if removed > 0 {
        println!("removed {removed} temp file(s) left by writers that died");
    }
    println!(
        "{} {}",
        if existed {
            "store already there:"
        } else {
            "created the store, seeded with post-task and continue-after-limit (off):"
        },
        store.signals.location()
    );
    // A store from before the failure event gets the second seed, off.
    let (svc, _) = crate::context::service(ctx)?;
    let id = continue_after_limit_id();
    if existed && !block_on(svc.list_hooks())??.iter().any(|h| h.id == id) {
        let h = block_on(svc.create_hook(HookSpec::continue_after_limit()))??;
        println!(
            "added the {} hook (off: `hooks-app hooks enable {}`)",
            h.id, h.id
        );
    }
    let written = prompts::write_default_prompts(&ctx.workspace).map_err(|e| {
        AppError::runtime(format!(
            "could not write the default prompts in {}: {e}",
            ctx.workspace.display()
        ))
    })?;
    for (path, wrote) in written {
        if wrote {
            println!("wrote the default prompt: {}", path.display());
        } else {
            println!("prompt already there: {}", path.display());
        }
    }
    println!(
        "next: `hooks-app install` to add the Claude Code hook (a daemon then starts when something is queued), and `hooks-app doctor`"
    );
    Ok(())
}

fn hook_row(h: &Hook) -> Vec<String> {
    vec![
        h.id.to_string(),
        yes(h.enabled),
        format!("{}s", h.delay.seconds()),
        if h.max_context.k() == 0 {
            "none".into()
        } else {
            format!("{}k", h.max_context.k())
        },
        h.max_cost
            .usd()
            .map_or_else(|| "none".into(), crate::output::usd),
        h.prompt_file.to_string(),
        h.last_status
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
    ]
}

fn hook_id(s: &str) -> AppResult<HookId> {
    Ok(HookId::parse(s)?)
}

fn hooks(ctx: &Context, cmd: HooksCmd) -> AppResult {
    let (svc, _) = service(ctx)?;
    match cmd {
        HooksCmd::List(j) => {
            let hooks = block_on(svc.list_hooks())??;
            if j.json {
                print_json(&Value::Array(
                    hooks.iter().map(crate::shapes::hook).collect(),
                ));
            } else {
                print_table(
                    &[
                        "ID",
                        "ENABLED",
                        "DELAY",
                        "MAX CONTEXT",
                        "MAX COST",
                        "PROMPT",
                        "LAST STATUS",
                    ],
                    &hooks.iter().map(hook_row).collect::<Vec<_>>(),
                );
            }
        }
        HooksCmd::Show { id, json } => {
            let h = block_on(svc.get_hook(&hook_id(&id)?))??;
            if json.json {
                print_json(&crate::shapes::hook(&h));
            } else {
                let rows = [
                    ("id", h.id.to_string()),
                    ("name", h.name.clone()),
                    (
                        "event",
                        match h.event {
                            Event::ConversationFailed => {
                                format!("{} ({})", h.event.as_str(), h.errors)
                            }
                            _ => h.event.as_str().to_owned(),
                        },
                    ),
                    ("enabled", yes(h.enabled)),
                    ("delay", format!("{}s", h.delay.seconds())),
                    ("prompt file", h.prompt_file.to_string()),
                    ("skip cron sessions", yes(h.skip_cron)),
                    ("skip subagents", yes(h.skip_subagents)),
                    (
                        "max context",
                        if h.max_context.k() == 0 {
                            "no cap".into()
                        } else {
                            format!("{}k tokens", h.max_context.k())
                        },
                    ),
                    (
                        "max cost",
                        h.max_cost.usd().map_or_else(
                            || "no cap".into(),
                            |c| format!("{} per follow-up", crate::output::usd(c)),
                        ),
                    ),
                    (
                        "max lateness",
                        h.max_lateness.limit().map_or_else(
                            || "no limit".into(),
                            |l| format!("{} s (a later entry is skipped)", l.whole_seconds()),
                        ),
                    ),
                    (
                        "created",
                        h.created_at
                            .map(stamp::format)
                            .unwrap_or_else(|| "-".into()),
                    ),
                    (
                        "last status",
                        h.last_status
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_else(|| "-".into()),
                    ),
                    ("firings kept", h.history.len().to_string()),
                ];
                for (k, v) in rows {
                    println!("{k:<20}{v}");
                }
            }
        }
        HooksCmd::Create {
            name,
            prompt_file,
            delay,
            event,
            errors,
            max_context_k,
            max_cost_usd,
            max_lateness,
            disabled,
            include_cron,
            include_subagents,
        } => {
            let Some(prompt_file) = prompt_file else {
                return Err(AppError::invalid(format!(
                    "promptFile: --prompt-file is required: a hook's prompt is a Markdown \
                     file in {}/{PROMPT_DIR}/; write it there, then pass \
                     --prompt-file {PROMPT_DIR}/NAME.md",
                    ctx.workspace.display()
                )));
            };
            let mut spec = HookSpec::new(&name, PromptFile::parse(&prompt_file)?)?;
            spec.apply(&HookPatch {
                delay: delay.as_deref().map(Delay::parse).transpose()?,
                event: event.as_deref().map(Event::parse).transpose()?,
                errors: errors.as_deref().map(FailureKinds::parse).transpose()?,
                max_context: max_context_k
                    .as_deref()
                    .map(ContextCap::parse)
                    .transpose()?,
                max_cost: max_cost_usd.as_deref().map(CostCap::parse).transpose()?,
                max_lateness: max_lateness
                    .as_deref()
                    .map(MaxLateness::parse)
                    .transpose()?,
                enabled: Some(!disabled),
                skip_cron: Some(!include_cron),
                skip_subagents: Some(!include_subagents),
                ..HookPatch::default()
            });
            warn_missing_prompt(ctx, &spec.prompt_file);
            let h = block_on(svc.create_hook(spec))??;
            println!("{}", h.id);
        }
        HooksCmd::Update {
            id,
            name,
            prompt_file,
            delay,
            event,
            errors,
            max_context_k,
            max_cost_usd,
            max_lateness,
            enabled,
            disabled,
            include_cron,
            skip_cron,
            include_subagents,
            skip_subagents,
        } => {
            let flag = |on: bool, off: bool| {
                if on {
                    Some(true)
                } else if off {
                    Some(false)
                } else {
                    None
                }
            };
            let patch = HookPatch {
                errors: errors.as_deref().map(FailureKinds::parse).transpose()?,
                name: name.as_deref().map(validate_name).transpose()?,
                event: event.as_deref().map(Event::parse).transpose()?,
                delay: delay.as_deref().map(Delay::parse).transpose()?,
                prompt_file: prompt_file.as_deref().map(PromptFile::parse).transpose()?,
                enabled: flag(enabled, disabled),
                skip_cron: flag(skip_cron, include_cron),
                skip_subagents: flag(skip_subagents, include_subagents),
                max_context: max_context_k
                    .as_deref()
                    .map(ContextCap::parse)
                    .transpose()?,
                max_cost: max_cost_usd.as_deref().map(CostCap::parse).transpose()?,
                max_lateness: max_lateness
                    .as_deref()
                    .map(MaxLateness::parse)
                    .transpose()?,
            };
            if patch.is_empty() {
                return Err(AppError::invalid(
                    "hooks update: nothing to change (give at least one option)",
                ));
            }
            if let Some(p) = &patch.prompt_file {
                warn_missing_prompt(ctx, p);
            }
            let h = block_on(svc.update_hook(&hook_id(&id)?, &patch))??;
            println!("{}", h.id);
        }
        HooksCmd::Enable { id } => {
            block_on(svc.set_enabled(&hook_id(&id)?, true))??;
            println!("{id} enabled");
        }
        HooksCmd::Disable { id } => {
            block_on(svc.set_enabled(&hook_id(&id)?, false))??;
            println!("{id} disabled");
        }
        HooksCmd::Run {
            id,
            session,
            force,
            no_wait,
            json,
        } => crate::runnow::run(ctx, &id, &session, force, no_wait, json.json)?,
        HooksCmd::Delete { id } => {
            let dropped = block_on(svc.delete_hook(&hook_id(&id)?))??;
            println!(
                "{id} deleted ({dropped} queued entr{} dropped)",
                if dropped == 1 { "y" } else { "ies" }
            );
        }
    }
    Ok(())
}

fn warn_missing_prompt(ctx: &Context, p: &PromptFile) {
    let path = ctx.workspace.join(p.as_str());
    if !path.exists() {
        eprintln!(
            "note: {} does not exist yet; it is looked up in each session's project, then in {}",
            p,
            ctx.workspace.display()
        );
    }
}

fn pending(ctx: &Context, json: bool) -> AppResult {
    let store = ctx.open_store()?;
    let snap = block_on(store.snapshot())??;
    if json {
        print_json(&Value::Array(
            snap.pending.iter().map(crate::shapes::pending).collect(),
        ));
        return Ok(());
    }
    let now = time::OffsetDateTime::now_utc();
    let rows: Vec<Vec<String>> = snap
        .pending
        .iter()
        .map(|p| {
            vec![
                p.hook_id.to_string(),
                p.session_id.to_string(),
                p.became_due().to_string(),
                p.retries.to_string(),
                p.state_text(now),
            ]
        })
        .collect();
    print_table(&["HOOK", "SESSION", "DUE AT", "RETRIES", "STATE"], &rows);
    Ok(())
}

fn history(ctx: &Context, id: &str, json: bool) -> AppResult {
    let (svc, store) = service(ctx)?;
    let h = block_on(svc.get_hook(&hook_id(id)?))??;
    // Every ending of the hook's entries is in the run log; firings an older log does not
    // hold come from the hook's own history.
    let runs = block_on(store.runs(&RunFilter {
        hook_id: Some(h.id.clone()),
        ..RunFilter::default()
    }))??;
    let logged: HashSet<&str> = runs.iter().map(|r| r.session_id.as_str()).collect();
    let mut rows: Vec<(Option<stamp::Timestamp>, Value)> = h
        .history
        .entries()
        .iter()
        .filter(|e| !logged.contains(e.session.as_str()))
        .map(|e| (e.at(), json!({"at": e.key, "sessionId": e.session})))
        .collect();
    rows.extend(runs.iter().map(|r| {
        let mut v = json!({
            "at": stamp::format(r.started_at),
            "sessionId": r.session_id.as_str(),
            "status": r.status_text(),
            "costUsd": r.outcome.cost_usd,
        });
        if let Some(d) = r.took() {
            v["tookMs"] = json!(d.whole_milliseconds());
        }
        (Some(r.started_at), v)
    }));
    rows.sort_by_key(|(at, _)| *at);
    if json {
        print_json(&Value::Array(rows.into_iter().map(|(_, v)| v).collect()));
        return Ok(());
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    print_table(
        &["AT", "SESSION", "STATUS", "TOOK", "COST"],
        &rows
            .iter()
            .map(|(_, v)| {
                vec![
                    text(&v["at"]),
                    text(&v["sessionId"]),
                    text(&v["status"]),
                    v["tookMs"]
                        .as_i64()
                        .map_or("-".into(), |ms| seconds(i128::from(ms))),
                    v["costUsd"].as_f64().map_or("-".into(), crate::output::usd),
                ]
            })
            .collect::<Vec<_>>(),
    );
    Ok(())
}

/// An unknown hook id's error, with the ids it is closest to (or the ids there are).
fn suggest_hook(ctx: &Context, e: AppError) -> AppError {
    let Some(id) = e.message.strip_prefix("no hook with id ") else {
        return e;
    };
    let ids: Vec<String> = ctx
        .existing_store()
        .ok()
        .and_then(|store| block_on(store.snapshot()).ok()?.ok())
        .map(|snap| snap.hooks.iter().map(|h| h.id.to_string()).collect())
        .unwrap_or_default();
    let mut near: Vec<(usize, &str)> = ids
        .iter()
        .map(|h| (strsim::levenshtein(id, h), h.as_str()))
        .filter(|(d, _)| *d <= (id.chars().count() / 3).max(2))
        .collect();
    near.sort();
    let hint = match near.first() {
        Some((_, best)) => format!(" (did you mean {best}?)"),
        None if ids.is_empty() => String::new(),
        None => format!(" (the hooks are: {})", ids.join(", ")),
    };
    AppError::invalid(format!("{}{hint}", e.message))
}

fn runs(
    ctx: &Context,
    hook: Option<String>,
    session: Option<String>,
    limit: Option<usize>,
    (summary, by, since): (bool, Option<crate::options::SummaryBy>, Option<String>),
    json: bool,
) -> AppResult {
    let store = ctx.open_store()?;
    let hook_id = hook.as_deref().map(HookId::parse).transpose()?;
    // An id that names no hook is a mistake, not an empty list.
    if let Some(id) = &hook_id
        && block_on(store.get_hook(id))??.is_none()
    {
        return Err(hooks_core::ports::StoreError::HookNotFound(id.clone()).into());
    }
    let filter = RunFilter {
        hook_id,
        session_id: match session.as_deref() {
            None => None,
            Some(s) => {
                SessionId::parse(s)?;
                let meta = ctx.meta(&store);
                Some(block_on(resolve_session(&meta, &store, s))??)
            }
        },
        limit: if summary || since.is_some() {
            None
        } else {
            limit
        },
    };
    let runs = block_on(store.runs(&filter))??;
    let Some(mut runs) =
        crate::spend::runs_summary(ctx, runs, summary, by, since.as_deref(), json)?
    else {
        return Ok(());
    };
    if let Some(n) = limit {
        runs.drain(..runs.len().saturating_sub(n));
    }
    if json {
        print_json(&Value::Array(runs.iter().map(crate::shapes::run).collect()));
        return Ok(());
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let o = &r.outcome;
            let tokens = o.usage.map(|u| {
                let input = u.input_tokens.unwrap_or(0)
                    + u.cache_creation_input_tokens.unwrap_or(0)
                    + u.cache_read_input_tokens.unwrap_or(0);
                format!("{input} in / {} out", u.output_tokens.unwrap_or(0))
            });
            vec![
                stamp::format(r.started_at),
                r.hook_id.to_string(),
                r.session_id.to_string(),
                r.status_text(),
                opt(o.completed.map(yes)),
                opt(o.cost_usd.map(crate::output::usd)),
                opt(r.estimated_cost_usd.map(crate::output::usd)),
                opt(tokens),
                opt(r.took().map(|d| seconds(d.whole_milliseconds()))),
                opt(o.duration_ms.map(|d| seconds(i128::from(d)))),
            ]
        })
        .collect();
    print_table(
        &[
            "STARTED",
            "HOOK",
            "SESSION",
            "STATUS",
            "COMPLETED",
            "COST",
            "ESTIMATED",
            "TOKENS",
            "TOOK",
            "API TIME",
        ],
        &rows,
    );
    Ok(())
}

fn session_cmd(ctx: &Context, session: &str, json: bool) -> AppResult {
    SessionId::parse(session)?;
    let (svc, store) = service(ctx)?;
    let meta = ctx.meta(&store);
    let sid = block_on(resolve_session(&meta, &store, session))??;
    let (v, facts, pending) = block_on(session_view(&svc, &meta, &store, &sid))??;
    if json {
        print_json(&v);
        return Ok(());
    }
    for (label, text) in session_lines(&v, &facts, &pending, time::OffsetDateTime::now_utc()) {
        println!("{label:<16}{text}");
    }
    Ok(())
}

fn notify(
    ctx: &Context,
    session: &str,
    event: &str,
    cwd: Option<String>,
    transcript: Option<String>,
    origin: Option<String>,
    json: bool,
) -> AppResult {
    let ev = NotifyEvent {
        failure: None,
        session: SessionId::parse(session)?,
        event: Event::parse(event)?,
        update: SessionUpdate {
            cwd: cwd.map(|c| {
                std::path::absolute(&c)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or(c)
            }),
            transcript_path: transcript.map(|t| {
                std::path::absolute(&t)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or(t)
            }),
            origin: origin.as_deref().map(Origin::parse).transpose()?,
        },
        subagent: false,
    };
    let (svc, _) = service(ctx)?;
    let reports = block_on(svc.notify(&ev))??;
    if json {
        print_json(&Value::Array(
            reports
                .iter()
                .map(|r| match &r.outcome {
                    NotifyOutcome::Queued { due_at } => json!({"hookId": r.hook_id.as_str(), "outcome": "queued", "reason": null, "dueAt": stamp::format(*due_at)}),
                    NotifyOutcome::Skipped(why) => json!({"hookId": r.hook_id.as_str(), "outcome": "skipped", "reason": why.to_string(), "dueAt": null}),
                })
                .collect(),
        ));
    } else {
        for r in &reports {
            match &r.outcome {
                NotifyOutcome::Queued { due_at } => {
                    println!("{}: queued, due {}", r.hook_id, stamp::format(*due_at))
                }
                NotifyOutcome::Skipped(why) => println!("{}: skipped ({why})", r.hook_id),
            }
        }
        if reports.is_empty() {
            println!("no hook listens to {event}");
        }
    }
    Ok(())
}

/// Starts the on-demand daemon where `install --http` asked it to serve HTTP, and waits
/// for it to listen; else says how to get a daemon that serves HTTP.
fn start_http_daemon(ctx: &Context) -> AppResult<String> {
    let cfg = crate::ondemand::DaemonConfig::read(&ctx.data_dir);
    let how = "`hooks-app install --http 127.0.0.1:PORT` makes the on-demand daemon serve the \
               page, or run `hooks-app serve --http 127.0.0.1:PORT`";
    let Some(addr) = cfg.http else {
        return Err(AppError::runtime(format!(
            "no daemon serves HTTP for this data folder: {how}"
        )));
    };
    if cfg.mode == crate::options::DaemonMode::OnDemand && crate::ondemand::ensure_running(ctx)? {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(15) {
            if let Some(url) = crate::ondemand::http_url(&ctx.data_dir) {
                return Ok(url);
            }
            // Polling a file the new daemon writes once it listens; nothing to wait on.
            std::thread::sleep(Duration::from_millis(50));
        }
        return Err(AppError::runtime(format!(
            "started the daemon to serve http://{addr}, but it is not listening after 15 s: see {}",
            ctx.data_dir.join(crate::ondemand::LOG_FILE).display()
        )));
    }
    Err(AppError::runtime(format!(
        "no daemon serves HTTP for this data folder: a daemon runs that was started without \
         it (it serves http://{addr} from its next start; `hooks-app status` shows it), or the \
         daemon mode is not on demand; {how}"
    )))
}

/// `open`: the page's address with a one-time login token.
fn open(ctx: &Context, no_browser: bool) -> AppResult {
    let url = match crate::ondemand::http_url(&ctx.data_dir) {
        Some(url) => url,
        None => start_http_daemon(ctx)?,
    };
    let login = format!(
        "{url}/login?token={}",
        crate::http::one_time_login(&ctx.data_dir)?
    );
    println!("{login}");
    eprintln!(
        "(the link works once, within {} minutes)",
        crate::http::LOGIN_TTL_SECS / 60
    );
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !no_browser && (graphical || cfg!(target_os = "macos")) {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        // The browser gets a file only this user can read, which sends it on: a token on
        // the opener's command line would be in /proc/*/cmdline for every local user.
        let page = ctx.data_dir.join("open.html");
        let url_attr = login.replace('&', "&amp;").replace('"', "&quot;");
        crate::fsutil::write_private(
            &page,
            &format!(
                "<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>\
                 <meta http-equiv=refresh content=\"0;url={url_attr}\">\
                 <title>hooks-app</title><p><a href=\"{url_attr}\">Open hooks-app</a></p>\n"
            ),
        )?;
        let _ = std::process::Command::new(opener)
            .arg(format!("file://{}", page.display()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    Ok(())
}

fn prune(ctx: &Context, days: u64) -> AppResult {
    let store = ctx.open_store()?;
    let keep: HashSet<SessionId> = block_on(store.snapshot())??
        .pending
        .into_iter()
        .map(|p| p.session_id)
        .collect();
    let before = context::SystemClock.now() - time::Duration::days(days.min(1_000_000) as i64);
    let removed = block_on(store.sessions.prune(before, &keep))?
        .map_err(|e| AppError::runtime(e.to_string()))?;
    println!(
        "removed {} session{} not changed for {days} days",
        removed.len(),
        if removed.len() == 1 { "" } else { "s" }
    );
    Ok(())
}
