//! The runner contract, on fake `codex` programs that print what each check needs as
//! `codex exec --json` events.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::testing::runner_contract::{AgentScript, HungChild, RunnerFixture};
use hooks_core::{HookId, ProcessRef, SessionId};
use hooks_runner_codex::{CodexConfig, CodexRunner};
use hooks_testkit::write_script;

struct Fixture {
    dir: tempfile::TempDir,
    n: AtomicUsize,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj")).unwrap();
    Fixture {
        dir,
        n: AtomicUsize::new(0),
    }
}

/// `codex exec --json` events, printed by the shell.
fn events(lines: &[serde_json::Value]) -> String {
    lines
        .iter()
        .map(|v| {
            let l = v.to_string();
            assert!(!l.contains('\''), "a test value without quotes");
            format!("printf '%s\\n' '{l}'")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl RunnerFixture for Fixture {
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner> {
        let seen = self.dir.path().join("seen");
        let thread = serde_json::json!({"type": "thread.started", "thread_id": "0199-t"});
        let body = match script {
            AgentScript::Reply(text) => format!(
                "echo \"$HOOKS_APP_FOLLOW_UP\" > '{}'; cat >/dev/null; {}",
                seen.display(),
                events(&[
                    thread,
                    serde_json::json!({"type": "turn.started"}),
                    serde_json::json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}}),
                    serde_json::json!({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}}),
                ])
            ),
            AgentScript::Fail => format!(
                "cat >/dev/null; {}; exit 1",
                events(&[
                    thread,
                    serde_json::json!({"type": "error", "message": "stream disconnected"})
                ])
            ),
            AgentScript::RateLimited => format!(
                "cat >/dev/null; {}; exit 1",
                events(&[
                    thread,
                    serde_json::json!({"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"}}),
                ])
            ),
            AgentScript::Hang => format!(
                "sleep 100000 & echo $! > '{}'; exec sleep 100000",
                self.dir.path().join("child").display()
            ),
            other => panic!("no fake codex for {other:?}"),
        };
        let path = self.dir.path().join(format!(
            "fake-codex-{}",
            self.n.fetch_add(1, Ordering::SeqCst)
        ));
        write_script(&path, &format!("#!/bin/sh\n{body}\n"));
        Arc::new(CodexRunner::new(CodexConfig {
            program: path,
            timeout,
            grace: Duration::from_secs(1),
            codex_home: Some(self.dir.path().join("codex-home")),
            ..CodexConfig::default()
        }))
    }

    fn request(&self, body: &str) -> RunRequest {
        let mut r = RunRequest::new(
            HookId::parse("post-task").unwrap(),
            SessionId::parse("0199-t").unwrap(),
            self.dir.path().join("proj").to_string_lossy().into_owned(),
            Prompt::new(body.to_owned(), RunOptions::default()),
        );
        r.agent = Some("codex".into());
        r
    }

    fn is_alive(&self, p: &ProcessRef) -> bool {
        hooks_platform::process::is_alive(p.pid, p.start)
    }

    fn follow_up_seen(&self) -> Option<Option<String>> {
        Some(
            std::fs::read_to_string(self.dir.path().join("seen"))
                .ok()
                .map(|s| s.trim().to_owned()),
        )
    }

    fn hung_child(&self) -> HungChild {
        HungChild::recorded(hooks_platform::process::recorded_child_outlives(
            &self.dir.path().join("child"),
            Duration::from_secs(10),
        ))
    }
}

hooks_core::runner_contract!(fixture);
