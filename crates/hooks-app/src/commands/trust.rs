//! `hooks-app trust [DIR] [--list | --revoke]`: approve a project's prompt files by their
//! bytes, list the approvals, or take a folder's back.

use std::path::Path;

use hooks_prompts::trust::*;

use crate::cli::TrustArgs;
use crate::{AppError, AppResult, Context};

/// `hooks-app trust [DIR] [--list | --revoke]`.
pub fn run(ctx: &Context, a: &TrustArgs) -> AppResult {
    let mut list = TrustList::load(&ctx.data_dir).map_err(AppError::runtime)?;
    if a.list {
        if list.files.is_empty() {
            crate::say!("no project prompt files are approved");
        }
        for (path, approval) in &list.files {
            let state = match read_prompt_file(
                Path::new(path).parent().unwrap_or(Path::new("/")),
                Path::new(path)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or(""),
                MAX_PROMPT_BYTES,
            ) {
                Ok(Some((_, b))) if hash(&b) == approval.sha256 => "approved".to_owned(),
                Ok(Some(_)) => "changed since it was approved (not used)".to_owned(),
                Ok(None) => "gone".to_owned(),
                Err(e) => format!("unreadable: {e}"),
            };
            crate::say!("{path}  {state}  (approved {})", approval.approved_at);
        }
        return Ok(());
    }
    let project = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| AppError::runtime(format!("current directory: {e}")))?,
    };
    let project = std::fs::canonicalize(&project).map_err(|e| {
        AppError::invalid(format!(
            "dir: must be a folder that exists ({}: {e})",
            project.display()
        ))
    })?;
    let dir = prompt_dir(&project);
    if a.revoke {
        let before = list.files.len();
        list.files
            .retain(|p, _| Path::new(p).parent() != Some(dir.as_path()));
        let removed = before - list.files.len();
        list.save(&ctx.data_dir).map_err(AppError::runtime)?;
        crate::say!(
            "revoked {removed} approval{} in {}",
            if removed == 1 { "" } else { "s" },
            dir.display()
        );
        return Ok(());
    }
    let dir = project_prompt_dir(&project).map_err(AppError::invalid)?;
    let names = project_prompt_names(&project);
    if names.is_empty() {
        return Err(AppError::invalid(format!(
            "dir: {} has no prompt files (*.md in {})",
            project.display(),
            hooks_core::PROMPT_DIR
        )));
    }
    // Everything is read and checked first: one bad file approves nothing.
    let mut read = Vec::new();
    for name in &names {
        match read_prompt_file(&dir, name, MAX_PROMPT_BYTES) {
            Ok(Some((real, bytes))) => {
                let text = std::str::from_utf8(&bytes).map_err(|_| {
                    AppError::invalid(format!(
                        "{}: is not UTF-8 text; nothing was approved",
                        real.display()
                    ))
                })?;
                let prompt = hooks_core::prompt::parse_prompt(text).map_err(|e| {
                    AppError::invalid(format!("{}: {e}; nothing was approved", real.display()))
                })?;
                codex_can_run(ctx, name, &prompt.options).map_err(|e| {
                    AppError::invalid(format!(
                        "{}: {}; nothing was approved",
                        real.display(),
                        e.message
                    ))
                })?;
                read.push((real, hash(&bytes), prompt));
            }
            Ok(None) => {}
            Err(e) => return Err(AppError::invalid(format!("{e}; nothing was approved"))),
        }
    }
    let now = hooks_core::stamp::format(time::OffsetDateTime::now_utc());
    for (real, sha, prompt) in &read {
        let o = &prompt.options;
        let mut widens = Vec::new();
        if let Some(m) = &o.permission_mode {
            widens.push(format!("permission-mode {m}"));
        }
        if !o.allowed_tools.is_empty() {
            widens.push(format!("allowed-tools {}", o.allowed_tools.join(",")));
        }
        if o.append_system_prompt.is_some() {
            widens.push("append-system-prompt".to_owned());
        }
        crate::say!(
            "approved {}  sha256 {}{}",
            real.display(),
            &sha[..12],
            if widens.is_empty() {
                String::new()
            } else {
                format!("  (it sets {})", widens.join("; "))
            }
        );
        list.files.insert(
            real.to_string_lossy().into_owned(),
            Approval {
                sha256: sha.clone(),
                approved_at: now.clone(),
            },
        );
    }
    list.save(&ctx.data_dir).map_err(AppError::runtime)?;
    crate::say!("a file changed from now on needs `hooks-app trust` again");
    Ok(())
}

/// A prompt file a hook for Codex conversations only would run (by its name) must set no
/// run option Codex has no flag for: approving it would only approve a run that is refused
/// when it starts. A hook for every agent gets a note instead.
fn codex_can_run(ctx: &Context, name: &str, o: &hooks_core::prompt::RunOptions) -> AppResult {
    let Err(e) = hooks_runner_codex::check_options(o) else {
        return Ok(());
    };
    let Ok(store) = ctx.existing_store() else {
        return Ok(());
    };
    let hooks = crate::compose::block_on(store.snapshot())??.hooks;
    let uses = |h: &&hooks_core::Hook| {
        Path::new(h.prompt_file.as_str()).file_name() == Some(std::ffi::OsStr::new(name))
    };
    let mut note = false;
    for h in hooks.iter().filter(uses) {
        match &h.agent {
            hooks_core::AgentScope::Only(a) if a == "codex" => {
                return Err(AppError::invalid(format!(
                    "agent: hook {} is for codex conversations, and {e}",
                    h.id
                )));
            }
            hooks_core::AgentScope::All => note = true,
            hooks_core::AgentScope::Only(_) => {}
        }
    }
    if note {
        eprintln!(
            "note: {name}: {e}; the follow-ups of Codex conversations that run it will be refused"
        );
    }
    Ok(())
}
