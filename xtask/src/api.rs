//! `cargo xtask api [--bless]`: the public items of every crate a team builds on, against a
//! recorded baseline (`docs/api/<crate>.txt`), so a change to the public face is seen.
//!
//! The items are read from the API docs `cargo doc` wrote (each crate's `all.html`: every
//! public struct, enum, trait, function, macro, constant and type by its path and kind);
//! hidden items are not in it. A removed or renamed item breaks teams' code: the step fails
//! naming it. An added item fails too, so the baseline stays exact: `--bless` records the
//! new face after a review. Signatures are not compared: a changed method shows only in
//! review of the docs.

use std::collections::BTreeSet;
use std::path::Path;

/// The crates a team builds on: their public faces are recorded.
pub const CRATES: &[&str] = &[
    "hooks_core",
    "hooks_platform",
    "hooks_claude_code",
    "hooks_meta",
    "hooks_store_json",
    "hooks_store_postgres",
    "hooks_runner_claude",
    "hooks_runner_codex",
    "hooks_runner_webhook",
    "hooks_prompts",
    "hooks_alerts",
    "hooks_shapes",
    "hooks_http",
    "hooks_mcp",
    "hooks_runtime",
    "hooks_app",
];

/// `kind path` lines from a crate's `all.html` (e.g. `struct model::Hook`).
pub fn items(all_html: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for part in all_html.split("<a href=\"").skip(1) {
        let Some((href, rest)) = part.split_once("\">") else {
            continue;
        };
        let Some((name, _)) = rest.split_once("</a>") else {
            continue;
        };
        let file = href.rsplit('/').next().unwrap_or(href);
        let Some((kind, _)) = file.split_once('.') else {
            continue;
        };
        if href.ends_with(".html") && !href.starts_with("..") && !name.contains('<') {
            out.insert(format!("{kind} {name}"));
        }
    }
    out
}

/// Compares (or with `bless`, records) every crate's public items; the docs must have been
/// built (`cargo doc --workspace --no-deps --features hooks-app-core/mocks`).
pub fn run(root: &Path, bless: bool) -> Result<(), String> {
    let mut problems = Vec::new();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    for krate in CRATES {
        let html = target.join(format!("doc/{krate}/all.html"));
        let text = std::fs::read_to_string(&html).map_err(|e| {
            format!(
                "{}: {e} (build the docs first: cargo doc --workspace --no-deps --features hooks-app-core/mocks)",
                html.display()
            )
        })?;
        let now = items(&text);
        let file = root.join(format!("docs/api/{krate}.txt"));
        if bless {
            std::fs::create_dir_all(root.join("docs/api")).map_err(|e| e.to_string())?;
            let body: String = now.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&file, body).map_err(|e| format!("{}: {e}", file.display()))?;
            continue;
        }
        let before: BTreeSet<String> = std::fs::read_to_string(&file)
            .map_err(|e| {
                format!(
                    "{}: {e} (record it: cargo xtask api --bless)",
                    file.display()
                )
            })?
            .lines()
            .map(str::to_owned)
            .collect();
        for gone in before.difference(&now) {
            problems.push(format!("{krate}: removed {gone} (breaks code built on it)"));
        }
        for new in now.difference(&before) {
            problems.push(format!("{krate}: added {new}"));
        }
    }
    if bless {
        eprintln!("xtask: recorded the public items in docs/api/");
        return Ok(());
    }
    if problems.is_empty() {
        eprintln!("xtask: the public items are as recorded in docs/api/");
        Ok(())
    } else {
        Err(format!(
            "the public items differ from docs/api/ (review, bump versions where something was removed, then cargo xtask api --bless):\n  {}",
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_read_by_kind_and_path_and_a_removal_is_seen() {
        let page = r#"<ul class="all-items"><li><a href="model/struct.Hook.html">model::Hook</a></li><li><a href="macro.runner_contract.html">runner_contract</a></li><li><a href="../other/index.html">x</a></li></ul>"#;
        let got = items(page);
        assert_eq!(
            got.iter().map(String::as_str).collect::<Vec<_>>(),
            ["macro runner_contract", "struct model::Hook"]
        );
        let fewer = items(r#"<a href="model/struct.Hook.html">model::Hook</a>"#);
        assert_eq!(got.difference(&fewer).count(), 1);
    }
}
