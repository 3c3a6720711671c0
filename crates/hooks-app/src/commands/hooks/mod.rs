//! `hooks list|show|create|update|enable|disable|delete|run`.

use hooks_core::stamp;
use hooks_core::*;
use serde_json::Value;

use crate::cli::{HookValues, HooksCmd};
use crate::commands::ids::hook_id;
use crate::compose::{block_on, service};
use crate::output::{print_json, print_table};
use crate::{AppError, AppResult, Context};
use hooks_shapes::text::yes;

mod run;

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
            .map_or_else(|| "none".into(), hooks_shapes::text::usd),
        h.prompt_file.to_string(),
        h.last_status
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
    ]
}

pub fn hooks(ctx: &Context, cmd: HooksCmd) -> AppResult {
    let (svc, _) = service(ctx)?;
    match cmd {
        HooksCmd::List(j) => {
            let hooks = block_on(svc.list_hooks())??;
            if j.json {
                print_json(&Value::Array(
                    hooks.iter().map(hooks_shapes::json::hook).collect(),
                ));
            } else {
                // A follow-up at a time (`after`, `every`) is one queued entry, not a rule
                // a person keeps: `pending` and `runs` show it.
                let (at_a_time, hooks): (Vec<_>, Vec<_>) =
                    hooks.iter().partition(|h| h.event == Event::Scheduled);
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
                    &hooks.into_iter().map(hook_row).collect::<Vec<_>>(),
                );
                if !at_a_time.is_empty() {
                    crate::say!(
                        "and {} follow-up{} at a time (`hooks-app after`, `every`): `hooks-app pending` lists those queued, `hooks-app runs` those run",
                        at_a_time.len(),
                        if at_a_time.len() == 1 { "" } else { "s" }
                    );
                }
            }
        }
        HooksCmd::Show { id, json } => {
            let h = block_on(svc.get_hook(&hook_id(&id)?))??;
            if json.json {
                print_json(&hooks_shapes::json::hook(&h));
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
                            |c| format!("{} per follow-up", hooks_shapes::text::usd(c)),
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
                        "deliver",
                        match h.deliver {
                            Delivery::Auto => "auto (into the open conversation where it can)",
                            Delivery::Closed => "closed (resumed after the close)",
                        }
                        .into(),
                    ),
                    ("agent", h.agent.as_str().to_owned()),
                    (
                        "repeat",
                        match h.repeat {
                            Repeat::Once => "once (a conversation is followed up once)",
                            Repeat::EachTask => "each-task (every task of a conversation)",
                        }
                        .into(),
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
                    crate::say!("{k:<20}{v}");
                }
            }
        }
        HooksCmd::Create {
            name,
            prompt_file,
            values,
            disabled,
            include_cron,
            include_subagents,
            another,
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
            spec.apply(&{
                let mut o = patch_of(&values)?;
                o.enabled = Some(!disabled);
                o.skip_cron = Some(!include_cron);
                o.skip_subagents = Some(!include_subagents);
                o
            });
            warn_missing_prompt(ctx, &spec.prompt_file);
            check_for_agent(ctx, &spec.agent, &spec.prompt_file, spec.max_cost)?;
            let h = if another {
                block_on(svc.create_another_hook(spec))??
            } else {
                block_on(svc.create_hook(spec))??
            };
            crate::say!("{}", h.id);
        }
        HooksCmd::Update {
            id,
            name,
            prompt_file,
            values,
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
            let patch = {
                let mut o = patch_of(&values)?;
                o.name = name.as_deref().map(validate_name).transpose()?;
                o.prompt_file = prompt_file.as_deref().map(PromptFile::parse).transpose()?;
                o.enabled = flag(enabled, disabled);
                o.skip_cron = flag(skip_cron, include_cron);
                o.skip_subagents = flag(skip_subagents, include_subagents);
                o
            };
            if patch.is_empty() {
                return Err(AppError::invalid(
                    "hooks update: nothing to change (give at least one option)",
                ));
            }
            if let Some(p) = &patch.prompt_file {
                warn_missing_prompt(ctx, p);
            }
            let id = hook_id(&id)?;
            if patch.agent.is_some() || patch.prompt_file.is_some() || patch.max_cost.is_some() {
                let mut after = block_on(svc.get_hook(&id))??;
                patch.apply(&mut after);
                check_for_agent(ctx, &after.agent, &after.prompt_file, after.max_cost)?;
            }
            let h = block_on(svc.update_hook(&id, &patch))??;
            crate::say!("{}", h.id);
        }
        HooksCmd::Enable { id } => {
            block_on(svc.set_enabled(&hook_id(&id)?, true))??;
            crate::say!("{id} enabled");
        }
        HooksCmd::Disable { id } => {
            block_on(svc.set_enabled(&hook_id(&id)?, false))??;
            crate::say!("{id} disabled");
        }
        HooksCmd::Run {
            id,
            session,
            force,
            no_wait,
            json,
        } => run::run(ctx, &id, &session, force, no_wait, json.json)?,
        HooksCmd::Delete { ids } => {
            // Every id is checked before any is deleted: a typo deletes nothing.
            let mut checked = Vec::new();
            for id in &ids {
                let id = hook_id(id)?;
                block_on(svc.get_hook(&id))??;
                checked.push(id);
            }
            for id in checked {
                let dropped = block_on(svc.delete_hook(&id))??;
                crate::say!(
                    "{id} deleted ({dropped} queued entr{} dropped)",
                    if dropped == 1 { "y" } else { "ies" }
                );
            }
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

/// A hook for Codex conversations only whose prompt file (in the workspace) sets a run
/// option Codex has no flag for is refused, naming the option; a hook for every agent gets
/// a note, since its Codex follow-ups would be refused when they start. A cost cap is one
/// such option (Codex cannot hold one).
fn check_for_agent(
    ctx: &Context,
    agent: &AgentScope,
    file: &PromptFile,
    cap: hooks_core::CostCap,
) -> AppResult {
    if let AgentScope::Only(a) = agent
        && !["claude", "codex"].contains(&a.as_str())
    {
        eprintln!(
            "note: agent {a}: hooks-app resumes claude and codex conversations itself; \
             another agent's need a runner that knows it"
        );
    }
    if !agent.covers(Some("codex")) {
        return Ok(());
    }
    let mut options = std::fs::read_to_string(ctx.workspace.join(file.as_str()))
        .ok()
        .and_then(|text| hooks_core::prompt::parse_prompt(&text).ok())
        .map(|p| p.options)
        .unwrap_or_default();
    options.max_budget = cap;
    match (hooks_runner_codex::check_options(&options), agent) {
        (Ok(()), _) => Ok(()),
        (Err(e), AgentScope::Only(_)) => Err(AppError::invalid(format!(
            "agent: a hook for codex conversations cannot run {file}: {e}"
        ))),
        (Err(e), AgentScope::All) => {
            eprintln!(
                "note: {file} {e}; its follow-ups of Codex conversations will be refused \
                 (use --agent claude for a hook for Claude Code only)"
            );
            Ok(())
        }
    }
}

/// The values `hooks create` and `hooks update` share, checked: each error names its field.
fn patch_of(v: &HookValues) -> AppResult<HookPatch> {
    Ok({
        let mut o = HookPatch::default();
        o.delay = v.delay.as_deref().map(Delay::parse).transpose()?;
        o.event = v.event.as_deref().map(Event::parse).transpose()?;
        o.errors = v.errors.as_deref().map(FailureKinds::parse).transpose()?;
        o.max_context = v
            .max_context_k
            .as_deref()
            .map(ContextCap::parse)
            .transpose()?;
        o.max_cost = v.max_cost_usd.as_deref().map(CostCap::parse).transpose()?;
        o.max_lateness = v
            .max_lateness
            .as_deref()
            .map(MaxLateness::parse)
            .transpose()?;
        o.deliver = v.deliver.as_deref().map(Delivery::parse).transpose()?;
        o.agent = v.agent.as_deref().map(AgentScope::parse).transpose()?;
        o.repeat = v.repeat.as_deref().map(Repeat::parse).transpose()?;
        o
    })
}
