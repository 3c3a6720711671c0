//! The runner against the real `claude` CLI on a loopback mock API, and against small fake
//! scripts for what the real CLI won't do on demand.

/// The runner contract, one test a rule.
mod contract;
mod fake;
mod real;

use std::path::Path;
use std::time::Duration;

use hooks_core::ports::RunRequest;
use hooks_core::prompt::{Prompt, RunOptions};
use hooks_core::{HookId, SessionId};
use hooks_runner_claude::{ClaudeRunner, RunnerConfig};
use hooks_testkit::ClaudeEnv;

fn request(session: &str, cwd: &Path, body: &str, options: RunOptions) -> RunRequest {
    RunRequest::new(
        HookId::parse("post-task").unwrap(),
        SessionId::parse(session).unwrap(),
        cwd.to_string_lossy().into_owned(),
        Prompt::new(body.to_owned(), options),
    )
}

fn runner_for(env: &ClaudeEnv, program: &Path, timeout: Duration) -> ClaudeRunner {
    ClaudeRunner::new(RunnerConfig {
        program: program.to_owned(),
        timeout,
        grace: Duration::from_secs(1),
        env: env.vars(),
        env_remove: [
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "HOOKS_APP_ORIGIN",
            "CLAUDECODE",
        ]
        .map(String::from)
        .to_vec(),
        ..RunnerConfig::default()
    })
}
