//! Conformance with outside material: the original Python module (read in place from the
//! shared reference folder beside the project, `$HOOKS_SHARED` or `../shared`) loading what
//! this store writes. Run by `cargo xtask conformance`; needs the `conformance` feature.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use hooks_core::ports::*;
use hooks_core::*;
use hooks_store_json::{JsonStore, STORE_FILE};
use serde_json::Value;
use time::Duration;

#[allow(dead_code)]
#[path = "it/support.rs"]
mod support;

use support::*;

fn shared() -> PathBuf {
    let p = std::env::var_os("HOOKS_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    assert!(
        p.join("reference").is_dir(),
        "the shared reference folder is missing: expected {} (set HOOKS_SHARED)",
        p.display()
    );
    p
}

/// Runs the original module on `dir`'s store file and
/// prints what it sees. The module imports a sibling `cron` module; a minimal stand-in
/// gives it the two names it reads at import time.
fn original_module_reads(dir: &Path) -> Value {
    let seed = shared().join("reference/seed-hooks.py.txt");
    assert!(seed.exists(), "{} is missing", seed.display());
    let script = r#"
import json, sys, types
cron = types.ModuleType("cron")
cron.PROMPT_DIR = ".claude/agents"
for n in ("strip_frontmatter", "run_config", "frontmatter_block", "slugify"):
    setattr(cron, n, lambda *a, **k: None)
sys.modules["cron"] = cron
src = open(sys.argv[1], encoding="utf-8").read().split("\n", 1)[1]
mod = types.ModuleType("hooks")
exec(compile(src, "hooks.py", "exec"), mod.__dict__)
store = mod.HookStore(sys.argv[2])
print(json.dumps({"hooks": sorted(h["id"] for h in store.list()),
                  "delays": {h["id"]: h["delaySeconds"] for h in store.list()},
                  "pending": [p["sessionId"] for p in store.pending()],
                  "due": [p["sessionId"] for p in store.due_entries()]}))
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            script,
            seed.to_str().unwrap(),
            dir.join(STORE_FILE).to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the original module failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn the_original_module_loads_what_this_store_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let spec = HookSpec::new(
        "Second Hook",
        PromptFile::parse(".claude/agents/hooks/second.md").unwrap(),
    )
    .unwrap();
    store.create_hook(spec, now()).await.unwrap();
    let entries = ["a1", "b2"].iter().map(|s| due_entry(s, now())).collect();
    store.enqueue(entries).await.unwrap();
    // A claim adds fields the original must ignore.
    store
        .claim_due(now(), "me", Duration::seconds(60), 1)
        .await
        .unwrap();
    let seen = original_module_reads(dir.path());
    // Both seeds (continue-after-limit is off and on the failure event, which the original
    // module never fires on) and the hook made here.
    assert_eq!(
        seen["hooks"],
        serde_json::json!(["continue-after-limit", "post-task", "second-hook"])
    );
    assert_eq!(seen["delays"]["post-task"], 10);
    assert_eq!(seen["pending"], serde_json::json!(["a1", "b2"]));
    assert_eq!(
        seen["due"],
        serde_json::json!(["a1", "b2"]),
        "our timestamps parse in the original"
    );
}

#[tokio::test]
async fn the_original_module_and_this_store_agree_on_a_file_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(fixture("original-v1.json"), dir.path().join(STORE_FILE)).unwrap();
    let seen = original_module_reads(dir.path());
    let store = JsonStore::open(dir.path(), now()).unwrap();
    let snap = store.snapshot().await.unwrap();
    for h in &snap.hooks {
        assert_eq!(
            seen["delays"][h.id.as_str()],
            h.delay.seconds(),
            "delay of {}",
            h.id
        );
    }
}
