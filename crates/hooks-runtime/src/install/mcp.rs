//! `install --mcp` / `uninstall --mcp`: `hooks-app mcp` as an MCP server of Claude Code's
//! user configuration, `mcpServers.hooks-app` in `~/.claude.json` (or
//! `$CLAUDE_CONFIG_DIR/.claude.json`: where `claude mcp add --scope user` writes, measured
//! with 2.1.332). The member is inserted in the file's own style and nothing else changes;
//! `uninstall --mcp` takes it out again, with the `mcpServers` object when install made it,
//! so the file comes back byte for byte.

use std::path::PathBuf;

use hooks_claude_code::files::{Created, load, write_text};
use hooks_claude_code::jsonedit;
use serde_json::{Value, json};

use crate::{AppError, AppResult, Context};

/// The server's name in Claude Code (its tools are `mcp__hooks-app__…`).
pub const NAME: &str = hooks_mcp::SERVER_NAME;

/// Claude Code's user configuration file: `.claude.json` beside `~/.claude`, or inside a
/// `CLAUDE_CONFIG_DIR`.
pub fn config_path(ctx: &Context) -> PathBuf {
    // As Claude Code decides it: `$HOME/.claude.json`, unless `CLAUDE_CONFIG_DIR` is set
    // (to any folder, `~/.claude` too), which then holds the file.
    let set = std::env::var_os("CLAUDE_CONFIG_DIR").is_some_and(|v| !v.is_empty());
    let home_folder = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude"));
    match home_folder {
        Some(h) if h == ctx.claude_home && !set => h.with_file_name(".claude.json"),
        _ => ctx.claude_home.join(".claude.json"),
    }
}

/// The server entry: this binary by its absolute path, with the options a hook command
/// would carry (the data folder, Claude Code's folder, the store), then `mcp`.
fn entry(ctx: &Context) -> AppResult<Value> {
    // Refuses a store whose password would go on the command line.
    ctx.self_command()?;
    let exe = std::env::current_exe()
        .map_err(|e| AppError::runtime(format!("cannot find this program's path: {e}")))?;
    let mut args = vec![
        "--data-dir".to_owned(),
        ctx.data_dir.to_string_lossy().into_owned(),
        "--claude-home".to_owned(),
        ctx.claude_home.to_string_lossy().into_owned(),
    ];
    args.extend(ctx.child_args());
    args.push("mcp".into());
    Ok(json!({"type": "stdio", "command": exe.to_string_lossy(), "args": args, "env": {}}))
}

/// Adds (or brings up to date) the server entry.
pub fn install(ctx: &Context, dry_run: bool) -> AppResult {
    let path = config_path(ctx);
    let s = load(&path)?;
    let wanted = entry(ctx)?;
    let original = s.text.clone().unwrap_or_else(|| "{}".into());
    let root = jsonedit::parse(&original)
        .ok_or_else(|| AppError::invalid(format!("{}: is not a JSON object", path.display())))?;
    let st = jsonedit::style_of(&original, &root);
    let mut made = Vec::new();
    let text = match root.member("mcpServers") {
        Some(servers) if servers.member(NAME).is_some() => {
            if s.map.get("mcpServers").and_then(|m| m.get(NAME)) == Some(&wanted) {
                crate::say!("{}: the MCP server {NAME} is there already", path.display());
                return Ok(());
            }
            let without = jsonedit::remove_member(&original, servers, NAME);
            let root = jsonedit::parse(&without)
                .ok_or_else(|| AppError::runtime("internal: an edit broke the JSON"))?;
            let servers = root
                .member("mcpServers")
                .ok_or_else(|| AppError::runtime("internal: mcpServers went"))?;
            jsonedit::push_member(&without, servers, NAME, &wanted, &st)
        }
        Some(servers) => jsonedit::push_member(&original, servers, NAME, &wanted, &st),
        None => {
            made.push("mcpServers".to_owned());
            jsonedit::push_member(&original, &root, "mcpServers", &json!({NAME: wanted}), &st)
        }
    };
    let mut text = text;
    if s.text.is_none() {
        made.push("file".to_owned());
        text.push('\n');
    }
    let parsed: Value = serde_json::from_str(&text).map_err(|e| {
        AppError::runtime(format!(
            "internal: the edit does not parse ({e}); nothing was written"
        ))
    })?;
    if parsed["mcpServers"][NAME] != wanted {
        return Err(AppError::runtime(
            "internal: the edit differs from what was meant; nothing was written",
        ));
    }
    if dry_run {
        crate::say!("would write {}:", path.display());
        print!("{}", crate::output::safe(&text));
        return Ok(());
    }
    write_text(&path, &text)?;
    let mut record = Created::load(&ctx.data_dir);
    let mut created = record.get(&path).unwrap_or_default();
    for m in made {
        if !created.contains(&m) {
            created.push(m);
        }
    }
    record.set(&path, Some(created))?;
    crate::say!(
        "{}: the MCP server {NAME} is in (Claude Code starts it in each conversation; its tools are mcp__{NAME}__schedule_follow_up, list_follow_ups and cancel_follow_up)",
        path.display()
    );
    Ok(())
}

/// Takes the server entry out, and what install made for it.
pub fn uninstall(ctx: &Context, dry_run: bool) -> AppResult {
    let path = config_path(ctx);
    let s = load(&path)?;
    let Some(original) = s.text.clone() else {
        crate::say!("{}: no MCP server {NAME} (no such file)", path.display());
        return Ok(());
    };
    let root = jsonedit::parse(&original)
        .ok_or_else(|| AppError::invalid(format!("{}: is not a JSON object", path.display())))?;
    let Some(servers) = root
        .member("mcpServers")
        .filter(|m| m.member(NAME).is_some())
    else {
        crate::say!("{}: no MCP server {NAME}", path.display());
        return Ok(());
    };
    let mut record = Created::load(&ctx.data_dir);
    let created = record.get(&path).unwrap_or_default();
    let mut text = jsonedit::remove_member(&original, servers, NAME);
    let root = jsonedit::parse(&text)
        .ok_or_else(|| AppError::runtime("internal: an edit broke the JSON"))?;
    if created.iter().any(|c| c == "mcpServers")
        && root
            .member("mcpServers")
            .is_some_and(|m| m.is_empty_container())
    {
        text = jsonedit::remove_member(&text, &root, "mcpServers");
    }
    if dry_run {
        crate::say!("would write {}:", path.display());
        print!("{}", crate::output::safe(&text));
        return Ok(());
    }
    if created.iter().any(|c| c == "file") && text.trim() == "{}" {
        std::fs::remove_file(hooks_claude_code::files::write_target(&path)?)
            .map_err(|e| AppError::runtime(format!("could not remove {}: {e}", path.display())))?;
    } else {
        write_text(&path, &text)?;
    }
    let rest: Vec<String> = created
        .into_iter()
        .filter(|c| c != "mcpServers" && c != "file")
        .collect();
    record.set(&path, (!rest.is_empty()).then_some(rest))?;
    crate::say!("{}: the MCP server {NAME} is out", path.display());
    Ok(())
}
