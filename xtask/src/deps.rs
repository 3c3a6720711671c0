//! Which workspace crates each crate may depend on: the crate graph's allow-list. A crate
//! not on the list, or an arrow the list does not allow, fails `cargo xtask layering`.

use std::path::Path;

/// Each crate and the workspace crates its normal dependencies may name.
pub const ALLOWED: &[(&str, &[&str])] = &[
    // The pure core and the platform below the adapters: leaves. Claude Code's formats and
    // settings files, over the platform.
    ("hooks-core", &[]),
    ("hooks-platform", &[]),
    ("hooks-claude-code", &["hooks-platform"]),
    // Driven adapters: the core (and the platform), never each other.
    ("hooks-store-json", &["hooks-core", "hooks-platform"]),
    ("hooks-store-postgres", &["hooks-core"]),
    ("hooks-meta", &["hooks-core", "hooks-platform"]),
    ("hooks-runner-claude", &["hooks-core", "hooks-platform"]),
    ("hooks-runner-codex", &["hooks-core", "hooks-platform"]),
    ("hooks-runner-webhook", &["hooks-core"]),
    ("hooks-prompts", &["hooks-core", "hooks-platform"]),
    ("hooks-alerts", &["hooks-core", "hooks-platform"]),
    // What the CLI and the API both print: the core's values as documents and text.
    ("hooks-shapes", &["hooks-core"]),
    // The driving HTTP adapter: the core, the shapes, the platform's private files; never
    // a store, a runner or Claude Code's formats (the root implements its Backend).
    (
        "hooks-http",
        &["hooks-core", "hooks-platform", "hooks-shapes"],
    ),
    // The driving MCP adapter: the protocol only (the root implements its Backend).
    ("hooks-mcp", &[]),
    // Test support: no production crate.
    ("hooks-testkit", &[]),
    // The composition root, the daemon and the hook entry point: everything but the test
    // support; the command line's crate adds the clap types and the commands over it.
    (
        "hooks-runtime",
        &[
            "hooks-core",
            "hooks-platform",
            "hooks-claude-code",
            "hooks-shapes",
            "hooks-http",
            "hooks-mcp",
            "hooks-prompts",
            "hooks-alerts",
            "hooks-store-json",
            "hooks-store-postgres",
            "hooks-meta",
            "hooks-runner-claude",
            "hooks-runner-codex",
            "hooks-runner-webhook",
        ],
    ),
    (
        "hooks-app",
        &[
            "hooks-runtime",
            "hooks-core",
            "hooks-platform",
            "hooks-claude-code",
            "hooks-shapes",
            "hooks-http",
            "hooks-mcp",
            "hooks-prompts",
            "hooks-alerts",
            "hooks-store-json",
            "hooks-store-postgres",
            "hooks-meta",
            "hooks-runner-claude",
            "hooks-runner-codex",
            "hooks-runner-webhook",
        ],
    ),
];

/// The workspace crates named in a manifest's `[dependencies]` (not dev or build ones).
pub fn normal_deps(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]";
            continue;
        }
        if in_deps
            && let Some(name) = l.split(['=', '.', ' ']).next()
            && name.starts_with("hooks-")
        {
            out.push(name.to_owned());
        }
    }
    out
}

/// What breaks the allow-list, for crates given as (name, manifest text).
pub fn violations(crates: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, manifest) in crates {
        let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| n == name) else {
            out.push(format!(
                "{name} is not in xtask/src/deps.rs: say which crates it may depend on"
            ));
            continue;
        };
        for d in normal_deps(manifest) {
            if !allowed.contains(&d.as_str()) {
                out.push(format!(
                    "{name} depends on {d}, which its allow-list does not name"
                ));
            }
        }
    }
    out
}

/// The workspace's crates under `crates/`, with their manifests.
pub fn read(root: &Path) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let dir = root.join("crates");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let m = e.path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&m) {
            out.push((e.file_name().to_string_lossy().into_owned(), text));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_keeps_its_allow_list_and_a_forbidden_arrow_is_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut crates = read(&root).unwrap();
        assert!(crates.iter().any(|(n, _)| n == "hooks-claude-code"));
        assert_eq!(violations(&crates), Vec::<String>::new());
        // An adapter naming another adapter, and a crate nobody listed.
        let meta = crates.iter_mut().find(|(n, _)| n == "hooks-meta").unwrap();
        meta.1 = meta.1.replace(
            "[dependencies]\n",
            "[dependencies]\nhooks-store-json.workspace = true\n",
        );
        crates.push(("hooks-new".into(), "[dependencies]\n".into()));
        assert_eq!(
            violations(&crates),
            [
                "hooks-meta depends on hooks-store-json, which its allow-list does not name",
                "hooks-new is not in xtask/src/deps.rs: say which crates it may depend on",
            ]
        );
        // Dev-dependencies are not the crate graph.
        assert!(normal_deps("[dev-dependencies]\nhooks-testkit.workspace = true\n").is_empty());
    }
}
