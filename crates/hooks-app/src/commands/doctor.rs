//! `doctor`: checks of the set-up, each problem (and warning) with the command that
//! fixes it.

use std::process::ExitCode;

use hooks_core::*;
use serde_json::{Value, json};

use crate::compose::block_on;
use crate::daemon::ondemand::daemon_running;
use crate::output::print_json;
use crate::{AppResult, Context, install};

/// One check. One that passes but still has a fix is a warning: it works, not as meant.
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
    fix: Option<String>,
}

impl Check {
    fn is_warning(&self) -> bool {
        self.ok && self.fix.is_some()
    }
}

pub fn doctor(ctx: &Context, as_json: bool) -> AppResult<ExitCode> {
    let mut checks = Vec::new();
    data_folder(ctx, &mut checks)?;

    runner(ctx, &mut checks)?;

    hooks(ctx, &mut checks)?;

    let snapshot = store(ctx, &mut checks)?;

    prices(ctx, &mut checks, &snapshot)?;

    project_prompts(ctx, &mut checks, &snapshot)?;

    daemon(ctx, &mut checks, &snapshot)?;

    let problems = checks.iter().filter(|c| !c.ok).count();
    if as_json {
        print_json(&Value::Array(
            checks
                .iter()
                .map(|c| json!({"check": c.name, "ok": c.ok, "warning": c.is_warning(), "detail": c.detail, "fix": c.fix}))
                .collect(),
        ));
    } else {
        for c in &checks {
            crate::say!(
                "{} {:<18} {}",
                match (c.ok, c.is_warning()) {
                    (true, false) => "ok  ",
                    (true, true) => "warn",
                    (false, _) => "FAIL",
                },
                c.name,
                c.detail
            );
            if let Some(f) = &c.fix {
                crate::say!("     {:<18} fix: {f}", "");
            }
        }
        crate::say!(
            "{}",
            if problems == 0 {
                match checks.iter().filter(|c| c.is_warning()).count() {
                    0 => "all good".to_owned(),
                    1 => "all good, 1 warning".to_owned(),
                    n => format!("all good, {n} warnings"),
                }
            } else {
                format!(
                    "{problems} problem{} found",
                    if problems == 1 { "" } else { "s" }
                )
            }
        );
    }
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Whether the data folder is the user's own and private.
fn data_folder(ctx: &Context, checks: &mut Vec<Check>) -> AppResult {
    let data = ctx.data_dir.display().to_string();
    let loose = crate::fsutil::loose_dirs(&ctx.data_dir);
    if let Some(why) = crate::fsutil::foreign_owner(&ctx.data_dir, false) {
        checks.push(Check {
            name: "data folder",
            ok: false,
            detail: why,
            fix: Some(format!(
                "remove {data} (it is not yours) and run hooks-app init, or pass --data-dir"
            )),
        });
    } else if ctx.data_dir.is_dir() {
        checks.push(if loose.is_empty() {
            Check {
                name: "data folder",
                ok: true,
                detail: format!("{data} is private to you"),
                fix: None,
            }
        } else {
            Check {
                name: "data folder",
                ok: false,
                detail: format!(
                    "others on this machine can read {}: it holds the API token and login links",
                    loose
                        .iter()
                        .map(|(d, m)| format!("{} ({m:04o})", d.display()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                fix: Some(format!("chmod 700 {data} (hooks-app init does it)")),
            }
        });
    }
    Ok(())
}

/// Whether the runner the options name can run.
fn runner(ctx: &Context, checks: &mut Vec<Check>) -> AppResult {
    if let crate::compose::RunnerChoice::Webhook {
        url, token_file, ..
    } = &ctx.runner
    {
        let valid = ctx.runner(std::time::Duration::from_secs(1));
        let from = match (token_file, std::env::var_os("HOOKS_RUNNER_TOKEN")) {
            (Some(f), _) => format!("token from {}", f.display()),
            (None, Some(_)) => "token from HOOKS_RUNNER_TOKEN".to_owned(),
            (None, None) => "no token".to_owned(),
        };
        checks.push(match valid {
            Ok(_) => Check {
                name: "runner",
                ok: true,
                detail: format!("webhook {url} ({from})"),
                fix: None,
            },
            Err(e) => Check {
                name: "runner",
                ok: false,
                detail: e.message,
                fix: Some(
                    "pass --runner-url http(s)://… (HOOKS_RUNNER_URL) and a readable --runner-token-file"
                        .into(),
                ),
            },
        });
    } else if matches!(ctx.runner, crate::compose::RunnerChoice::Codex) {
        checks.push(codex_check(ctx));
    } else if let Some((name, checked)) = ctx.check_custom_runner() {
        checks.push(match checked {
            Ok(detail) => Check {
                name: "runner",
                ok: true,
                detail: format!("{name} (added by this build): {detail}"),
                fix: None,
            },
            Err(e) => Check {
                name: "runner",
                ok: false,
                detail: format!("runner {name}: {e}"),
                fix: Some(format!("see what the {name} runner needs (--runner-url)")),
            },
        });
    } else {
        let claude = block_on(
            ctx.claude_runner(std::time::Duration::from_secs(1))
                .version(),
        )?;
        checks.push(match claude {
            Ok(v) => Check { name: "claude", ok: true, detail: format!("{} ({v}; {})", ctx.claude_bin.display(), hooks_claude_code::versions::tested_range(&v)), fix: None },
            Err(e) => Check {
                name: "claude",
                ok: false,
                detail: format!("{} does not run: {e}", ctx.claude_bin.display()),
                fix: Some("npm install -g @anthropic-ai/claude-code, or pass --claude-bin PATH (HOOKS_CLAUDE_BIN)".into()),
            },
        });
    }
    Ok(())
}

/// Whether the hooks are installed where each agent reads them, trusted, and reachable.
fn hooks(ctx: &Context, checks: &mut Vec<Check>) -> AppResult {
    let installed = install::installed_in(ctx);
    checks.push(if installed.is_empty() {
        Check {
            name: "hook installed",
            ok: false,
            detail: format!(
                "no claude-hook entry in {}, {} or {}",
                install::settings_path(ctx, crate::options::Scope::User).display(),
                install::settings_path(ctx, crate::options::Scope::Project).display(),
                install::settings_path(ctx, crate::options::Scope::Local).display()
            ),
            fix: Some("hooks-app install --scope user".into()),
        }
    } else {
        let where_: Vec<String> = installed
            .iter()
            .map(|(p, ev)| format!("{} ({})", p.display(), ev.join(", ")))
            .collect();
        Check {
            name: "hook installed",
            ok: true,
            detail: where_.join("; "),
            fix: None,
        }
    });

    // Codex skips a hook nobody trusted, without a word.
    let codex_files = install::codex_hook_files(ctx);
    let codex_hooks = installed
        .iter()
        .map(|(p, _)| p.clone())
        .find(|p| codex_files.contains(p));
    if let Some(codex_hooks) = &codex_hooks {
        checks.push(if install::codex_trusted(ctx) {
            Check {
                name: "codex hook trusted",
                ok: true,
                detail: format!(
                    "{} trusts the Stop entry of {}",
                    ctx.codex_home.join("config.toml").display(),
                    codex_hooks.display()
                ),
                fix: None,
            }
        } else {
            Check {
                name: "codex hook trusted",
                ok: false,
                detail: format!(
                    "Codex has not trusted the entry in {}: it skips it, and no Codex conversation is followed up",
                    codex_hooks.display()
                ),
                fix: Some(
                    "start `codex` once and choose \"Trust all and continue\" at \"Hooks need review\""
                        .into(),
                ),
            }
        });
    }

    // Codex conversations are resumed with codex, whatever the runner named.
    if codex_hooks.is_some() && matches!(ctx.runner, crate::compose::RunnerChoice::Claude) {
        checks.push(codex_check(ctx));
    }

    // An http hook loses every event while no daemon listens where it posts.
    let http_hooks = install::installed_http_urls(ctx);
    if !http_hooks.is_empty() {
        let serving = crate::daemon::ondemand::http_url(&ctx.data_dir);
        let stray: Vec<String> = http_hooks
            .iter()
            .filter(|(_, u)| {
                serving
                    .as_ref()
                    .is_none_or(|s| !u.starts_with(&format!("{s}/")))
            })
            .map(|(p, u)| format!("{u} (in {})", p.display()))
            .collect();
        checks.push(Check {
            name: "http hook",
            ok: stray.is_empty(),
            detail: match (&serving, stray.is_empty()) {
                (Some(s), true) => format!("posts to the daemon at {s}"),
                (Some(s), false) => format!(
                    "posts to {}, but the daemon serves {s}: those events are lost",
                    stray.join(", ")
                ),
                (None, _) => format!(
                    "posts to {}, but no daemon serves HTTP: those events are lost",
                    stray.join(", ")
                ),
            },
            fix: (!stray.is_empty()).then(|| {
                "start `hooks-app serve --http ADDR` at that address, or `hooks-app install --transport http --http-url URL` for the one it serves (or `--transport command`)".into()
            }),
        });
        // Claude Code sends the hook token and every event to whatever holds the port.
        let me = hooks_platform::account::uid();
        let foreign: Vec<String> = http_hooks
            .iter()
            .filter_map(|(_, u)| {
                let addr: std::net::SocketAddr = u
                    .trim_start_matches("http://")
                    .split('/')
                    .next()?
                    .parse()
                    .ok()?;
                let uid = hooks_platform::net::listener_uid(addr)?;
                (uid != me).then(|| {
                    format!(
                        "{addr} is held by a process of user {}",
                        hooks_platform::account::name_of(uid)
                    )
                })
            })
            .collect();
        if !foreign.is_empty() {
            checks.push(Check {
                name: "http hook port",
                ok: false,
                detail: format!(
                    "{}: Claude Code would send it your conversations' events and the hook token",
                    foreign.join("; ")
                ),
                fix: Some(
                    "hooks-app install --transport command (or serve --http on a port of yours and install --http-url it)"
                        .into(),
                ),
            });
        }
    }
    Ok(())
}

/// Whether the data folder takes writes, the store reads, and the failure entry is there.
fn store(
    ctx: &Context,
    checks: &mut Vec<Check>,
) -> AppResult<Result<hooks_core::ports::Snapshot, String>> {
    let data = ctx.data_dir.display().to_string();
    // Probe without changing anything: in the folder if it exists, else in the nearest
    // parent that does (where `init` would create it).
    let probe_dir = ctx
        .data_dir
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(&ctx.data_dir)
        .to_owned();
    let writable = crate::fsutil::can_write_in(&probe_dir);
    let exists = ctx.data_dir.is_dir();
    checks.push(match writable {
        Ok(()) => Check {
            name: "data dir writable",
            ok: true,
            detail: if exists {
                data.clone()
            } else {
                format!(
                    "{data} (not created yet; {} is writable)",
                    probe_dir.display()
                )
            },
            fix: None,
        },
        Err(e) => Check {
            name: "data dir writable",
            ok: false,
            detail: format!("{}: {e}", probe_dir.display()),
            fix: Some(format!(
                "mkdir -p '{data}' && chmod 700 '{data}', or pass --data-dir DIR (HOOKS_DATA_DIR)"
            )),
        },
    });

    // The store only if it exists: doctor creates nothing.
    let opened = ctx.existing_store();
    let snapshot = match &opened {
        Ok(s) => block_on(s.snapshot())?.map_err(|e| e.to_string()),
        Err(e) => Err(e.message.clone()),
    };
    checks.push(match (&opened, &snapshot) {
        (Ok(store), Ok(s)) => Check {
            name: "store readable",
            ok: true,
            detail: format!(
                "{} ({} hooks, {} pending)",
                store.signals.location(),
                s.hooks.len(),
                s.pending.len()
            ),
            fix: None,
        },
        (Err(e), _) => Check {
            name: "store readable",
            ok: false,
            detail: e.message.clone(),
            fix: Some("hooks-app init".into()),
        },
        (Ok(store), Err(e)) => Check {
            name: "store readable",
            ok: false,
            detail: e.clone(),
            fix: Some(match store.signals.restore_hint() {
                Some(cmd) => format!("fix it by hand, or put back the last good copy: {cmd}"),
                None => "fix it by hand".into(),
            }),
        },
    });

    // A conversation-failed hook hears of nothing without Claude Code's StopFailure entry,
    // which an install from before that event did not add.
    if let Ok(s) = &snapshot {
        let failed: Vec<&str> = s
            .hooks
            .iter()
            .filter(|h| h.enabled && h.event == hooks_core::Event::ConversationFailed)
            .map(|h| h.id.as_str())
            .collect();
        let installed = install::installed_in(ctx);
        if !failed.is_empty() && !installed.is_empty() {
            let has = installed
                .iter()
                .any(|(_, ev)| ev.iter().any(|e| e == "StopFailure"));
            checks.push(Check {
                name: "failure hook",
                ok: true,
                detail: if has {
                    format!("StopFailure installed for {}", failed.join(", "))
                } else {
                    format!(
                        "{} follow failed conversations up, but no StopFailure entry tells them of one",
                        failed.join(", ")
                    )
                },
                fix: (!has).then(|| "hooks-app install (again: it adds the StopFailure entry)".into()),
            });
        }
    }
    Ok(snapshot)
}

/// Whether the prices read, and every capped hook's model has one.
fn prices(
    ctx: &Context,
    checks: &mut Vec<Check>,
    snapshot: &Result<hooks_core::ports::Snapshot, String>,
) -> AppResult {
    // Prices: a bad prices.json stops every capped hook, so it is a problem, not a warning.
    let prices_path = ctx.data_dir.join(crate::prices::PRICES_FILE);
    let prices = crate::prices::load(&ctx.data_dir);
    checks.push(match &prices {
        Ok(t) => Check {
            name: "prices",
            ok: true,
            detail: format!(
                "{} models, built in (taken {}){}",
                t.models().count(),
                hooks_core::cost::PRICES_TAKEN,
                if prices_path.exists() {
                    format!(", with {}", prices_path.display())
                } else {
                    String::new()
                }
            ),
            fix: None,
        },
        Err(e) => Check {
            name: "prices",
            ok: false,
            detail: e.message.clone(),
            fix: Some(format!(
                "fix {} (or remove it to use the built-in prices)",
                prices_path.display()
            )),
        },
    });
    // A capped hook whose prompt file names a model without a price would always be skipped.
    if let (Ok(s), Ok(table)) = (&snapshot, &prices) {
        let prompts = ctx.prompts();
        for h in s
            .hooks
            .iter()
            .filter(|h| h.enabled && h.max_cost.usd().is_some())
        {
            let model = prompts
                .candidates(&h.prompt_file, None)
                .into_iter()
                .find(|p| p.is_file())
                .and_then(|p| {
                    hooks_platform::read_regular(&p, hooks_platform::ReadLimit::bytes(1024 * 1024))
                        .ok()
                })
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| prompt::parse_prompt(&t).ok())
                .and_then(|p| p.options.model);
            if let Some(m) = model.filter(|m| table.lookup(m).is_none()) {
                checks.push(Check {
                    name: "prices",
                    ok: false,
                    detail: format!("{}: its prompt file names model {m}, which has no price, so its cost cap skips every follow-up", h.id),
                    fix: Some(format!("add {m} to {}", prices_path.display())),
                });
            }
        }
    }
    Ok(())
}

/// The prompt files this project brings, and whether they are approved.
fn project_prompts(
    ctx: &Context,
    checks: &mut Vec<Check>,
    snapshot: &Result<hooks_core::ports::Snapshot, String>,
) -> AppResult {
    // Prompt files this project brings: used only once approved.
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    if canon(&ctx.here) != canon(&ctx.workspace) {
        let trust = hooks_prompts::trust::TrustList::load(&ctx.data_dir).unwrap_or_default();
        let dir = hooks_prompts::trust::prompt_dir(&ctx.here);
        let waiting: Vec<String> = hooks_prompts::trust::project_prompt_names(&ctx.here)
            .into_iter()
            .filter(|n| {
                !matches!(
                    hooks_prompts::trust::read_prompt_file(&dir, n, hooks_prompts::trust::MAX_PROMPT_BYTES),
                    Ok(Some((real, bytes))) if hooks_prompts::runs_as_approved(&trust, &real, n, &bytes)
                )
            })
            .collect();
        if !waiting.is_empty() {
            checks.push(Check {
                name: "project prompts",
                ok: false,
                detail: format!(
                    "{} has prompt files that wait for approval ({}): its follow-ups use the workspace's files of those names, or are skipped",
                    ctx.here.display(),
                    waiting.join(", ")
                ),
                fix: Some(format!(
                    "review them, then hooks-app trust {}",
                    crate::fsutil::shell_quote(&ctx.here.to_string_lossy())
                )),
            });
        }
    }

    if let Ok(s) = &snapshot {
        let prompts = ctx.prompts();
        for h in s.hooks.iter().filter(|h| h.enabled) {
            let found = prompts
                .candidates(&h.prompt_file, None)
                .into_iter()
                .find(|p| p.is_file());
            let parsed = found.as_ref().map(|p| {
                hooks_platform::read_regular(p, hooks_platform::ReadLimit::bytes(1024 * 1024))
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        prompt::parse_prompt(&t)
                            .map(|_| prompt::reads_as_subagent(&t))
                            .map_err(|e| e.to_string())
                    })
            });
            checks.push(match (found, parsed) {
                (Some(p), Some(Ok(true))) => Check {
                    name: "prompt file",
                    ok: true,
                    detail: format!(
                        "{}: {} has both `name` and `description` in its frontmatter: Claude Code lists it as a subagent of its own",
                        h.id,
                        p.display()
                    ),
                    fix: Some(format!("remove the `description` line from {}", p.display())),
                },
                (Some(p), Some(Ok(false))) => Check { name: "prompt file", ok: true, detail: format!("{}: {}", h.id, p.display()), fix: None },
                (Some(p), Some(Err(e))) => Check { name: "prompt file", ok: false, detail: format!("{}: {}: {e}", h.id, p.display()), fix: Some(format!("edit {}", p.display())) },
                _ => Check {
                    name: "prompt file",
                    ok: false,
                    detail: format!("{}: {} not found in {}", h.id, h.prompt_file, ctx.workspace.display()),
                    fix: Some(if h.id == post_task_id() {
                        "hooks-app init (writes the default post-task prompt here), or run from your workspace".into()
                    } else {
                        format!("create {} in the workspace or in each project", h.prompt_file)
                    }),
                },
            });
        }
    }
    Ok(())
}

/// Whether a daemon will take what is due, and with which environment.
fn daemon(
    ctx: &Context,
    checks: &mut Vec<Check>,
    snapshot: &Result<hooks_core::ports::Snapshot, String>,
) -> AppResult {
    let running = daemon_running(&ctx.data_dir);
    let daemon_cfg = crate::daemon::ondemand::DaemonConfig::read(&ctx.data_dir);
    let mode = daemon_cfg.mode;
    let mode_name = crate::daemon::ondemand::mode_name(mode);
    // On demand, no daemon is fine until something is due and none was started for it.
    let due_now = snapshot.as_ref().is_ok_and(|s| {
        let now = time::OffsetDateTime::now_utc();
        s.pending
            .iter()
            .any(|p| p.due_at.is_due(now) && p.waiting.is_none())
    });
    // Uninstalled: no daemon is what was asked for, and the way back is install.
    let uninstalled =
        mode == crate::options::DaemonMode::None && daemon_cfg.before_uninstall.is_some();
    let ok = running || (mode == crate::options::DaemonMode::OnDemand && !due_now) || uninstalled;
    checks.push(Check {
        name: "daemon",
        ok,
        detail: match (running, mode) {
            (true, _) => format!("running ({mode_name})"),
            (false, crate::options::DaemonMode::OnDemand) if !due_now => {
                "on demand: none runs now; claude-hook starts one when it queues something".into()
            }
            (false, crate::options::DaemonMode::OnDemand) => {
                "on demand, but follow-ups are due and no daemon runs".into()
            }
            (false, _) if uninstalled => {
                "none runs: uninstalled (`hooks-app install` puts the hooks and the daemon back)"
                    .into()
            }
            (false, _) => format!("no hooks-app serve is running on this data dir ({mode_name})"),
        },
        fix: (!ok).then(|| match mode {
            crate::options::DaemonMode::Service => {
                crate::daemon::ondemand::enable_command(&crate::daemon::ondemand::unit_path())
            }
            crate::options::DaemonMode::OnDemand => format!(
                "hooks-app serve, and see {} for why the on-demand one did not start",
                ctx.data_dir
                    .join(crate::daemon::ondemand::LOG_FILE)
                    .display()
            ),
            // Install never ran here: it is the next step, and the daemon then starts on
            // demand.
            crate::options::DaemonMode::None if !ctx.data_dir.join("daemon.json").exists() => {
                "hooks-app init && hooks-app install (a daemon then starts on demand)".into()
            }
            crate::options::DaemonMode::None => {
                "hooks-app serve (or `hooks-app tick` from cron)".into()
            }
        }),
    });
    if mode == crate::options::DaemonMode::OnDemand {
        // A daemon a hook starts gets the environment install kept, never the hook's.
        let kept = crate::daemon::environment::DaemonEnvironment::read(&ctx.data_dir);
        checks.push(Check {
            name: "daemon environment",
            ok: kept.is_some(),
            detail: match &kept {
                Some(env) => format!(
                    "a daemon started on demand gets the environment of your last install ({} variables: {}; claude: {})",
                    env.vars.len(),
                    env.names().join(", "),
                    env.claude_bin.display()
                ),
                None => format!(
                    "{} is missing: a hook starts no daemon, since a hook's environment is partly the repository's",
                    ctx.data_dir
                        .join(crate::daemon::environment::FILE)
                        .display()
                ),
            },
            fix: kept
                .is_none()
                .then(|| "hooks-app install (from your own shell)".into()),
        });
    }
    Ok(())
}

/// Whether the codex program runs, and its version.
fn codex_check(ctx: &Context) -> Check {
    let bin = ctx
        .codex_bin
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("codex"));
    let version = std::process::Command::new(&bin)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    match version {
        Ok(o) if o.status.success() => Check {
            name: "codex",
            ok: true,
            detail: format!(
                "{} ({})",
                bin.display(),
                String::from_utf8_lossy(&o.stdout).trim()
            ),
            fix: None,
        },
        Ok(o) => Check {
            name: "codex",
            ok: false,
            detail: format!("{} --version failed: {}", bin.display(), o.status),
            fix: Some(
                "npm install -g @openai/codex, or pass --codex-bin PATH (HOOKS_CODEX_BIN)".into(),
            ),
        },
        Err(e) => Check {
            name: "codex",
            ok: false,
            detail: format!("{} does not run: {e}", bin.display()),
            fix: Some(
                "npm install -g @openai/codex, or pass --codex-bin PATH (HOOKS_CODEX_BIN)".into(),
            ),
        },
    }
}
