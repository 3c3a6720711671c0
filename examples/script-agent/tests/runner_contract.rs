//! The script runner is held to the runner contract like any other, one test a rule.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hooks_app::RunnerMake;
use hooks_core::ports::{RunRequest, Runner};
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::testing::runner_contract::{AgentScript, HungChild, RunnerFixture};
use hooks_core::{HookId, ProcessRef, SessionId};
use hooks_example_script_agent::script_runner;

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

impl RunnerFixture for Fixture {
    fn runner(&self, script: &AgentScript, timeout: Duration) -> Arc<dyn Runner> {
        let seen = self.dir.path().join("seen");
        let body = match script {
            AgentScript::Reply(text) => format!(
                "echo \"$HOOKS_APP_FOLLOW_UP\" > '{}'\ncat >/dev/null\ncat <<'EOT'\n{text}\nEOT",
                seen.display()
            ),
            AgentScript::Fail => "cat >/dev/null; echo boom >&2; exit 3".to_owned(),
            AgentScript::RateLimited => "cat >/dev/null; exit 75".to_owned(),
            AgentScript::Hang => format!(
                "sleep 100000 & echo $! > '{}'; exec sleep 100000",
                self.dir.path().join("child").display()
            ),
            other => panic!("no script for {other:?}"),
        };
        let path = self.dir.path().join(format!(
            "agent-{}.sh",
            self.n.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let program = path.to_string_lossy().into_owned();
        script_runner(&RunnerMake::new(Some(&program), timeout)).unwrap()
    }

    fn request(&self, body: &str) -> RunRequest {
        RunRequest::new(
            HookId::parse("post-task").unwrap(),
            SessionId::parse("s-1").unwrap(),
            self.dir.path().join("proj").to_string_lossy().into_owned(),
            Prompt::new(body.to_owned(), RunOptions::default()),
        )
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
