//! The runner contract, on fake `claude` programs that do what each check needs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hooks_core::ProcessRef;
use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::RunOptions;
use hooks_core::testing::runner_contract::{AgentScript, HungChild, RunnerFixture};
use hooks_testkit::{ClaudeEnv, MockApi, write_script};

use super::*;

struct Fixture {
    _api: MockApi,
    env: ClaudeEnv,
    work: PathBuf,
    n: AtomicUsize,
}

fn fixture() -> Fixture {
    let api = MockApi::start();
    let env = ClaudeEnv::new(&api);
    let work = env.workdir("w");
    Fixture {
        _api: api,
        env,
        work,
        n: AtomicUsize::new(0),
    }
}

/// One line of `claude -p --output-format json`, quoted for the shell.
fn result_line(v: &serde_json::Value) -> String {
    let line = v.to_string();
    assert!(!line.contains('\''), "a test value without quotes");
    format!("printf '%s\\n' '{line}'")
}

impl RunnerFixture for Fixture {
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner> {
        let seen = self.work.join("seen");
        let body = match script {
            AgentScript::Reply(text) => format!(
                "echo \"$HOOKS_APP_FOLLOW_UP\" > '{}'; cat >/dev/null; {}",
                seen.display(),
                result_line(&serde_json::json!({"type": "result", "subtype": "success",
                    "is_error": false, "result": text, "num_turns": 1, "session_id": "abc-123"}))
            ),
            AgentScript::Fail => format!(
                "cat >/dev/null; {}; exit 1",
                result_line(
                    &serde_json::json!({"type": "result", "subtype": "error_during_execution",
                    "is_error": true, "result": "boom", "session_id": "abc-123"})
                )
            ),
            AgentScript::RateLimited => format!(
                "cat >/dev/null; {}; exit 1",
                result_line(&serde_json::json!({"type": "result", "subtype": "success",
                    "is_error": true, "api_error_status": 429,
                    "result": "API Error: Request rejected (429)", "session_id": "abc-123"}))
            ),
            AgentScript::Hang => format!(
                "sleep 100000 & echo $! > '{}'; exec sleep 100000",
                self.work.join("child").display()
            ),
            other => panic!("no fake claude for {other:?}"),
        };
        let path = self.env.dir.path().join(format!(
            "fake-claude-{}",
            self.n.fetch_add(1, Ordering::SeqCst)
        ));
        write_script(&path, &format!("#!/bin/sh\n{body}\n"));
        Arc::new(runner_for(&self.env, &path, timeout))
    }

    fn request(&self, body: &str) -> RunRequest {
        request("abc-123", &self.work, body, RunOptions::default())
    }

    fn is_alive(&self, p: &ProcessRef) -> bool {
        hooks_platform::process::is_alive(p.pid, p.start)
    }

    fn follow_up_seen(&self) -> Option<Option<String>> {
        Some(
            std::fs::read_to_string(self.work.join("seen"))
                .ok()
                .map(|s| s.trim().to_owned()),
        )
    }

    fn hung_child(&self) -> HungChild {
        HungChild::recorded(hooks_platform::process::recorded_child_outlives(
            &self.work.join("child"),
            Duration::from_secs(10),
        ))
    }
}

hooks_core::runner_contract!(fixture);
