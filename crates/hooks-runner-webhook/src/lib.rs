//! The `Runner` port over HTTP, for agent backends that run Claude themselves.
//!
//! A run is one `POST` of the follow-up to the configured URL, as JSON:
//!
//! ```json
//! {"hookId": "post-task", "sessionId": "…", "cwd": "/work/proj", "prompt": "…",
//!  "options": {"model": "sonnet", "permissionMode": null, "maxTurns": 5,
//!              "allowedTools": [], "appendSystemPrompt": null, "maxBudgetUsd": 0.5}}
//! ```
//!
//! with `Authorization: Bearer <token>` when a token is configured. The backend answers
//! when the run is over (within the run timeout) with the run log's outcome shape:
//!
//! ```json
//! {"status": "ok", "exitCode": 0, "completed": true, "numTurns": 3, "costUsd": 0.12,
//!  "usage": {"inputTokens": 10, "cacheCreationInputTokens": 2000,
//!            "cacheReadInputTokens": 30000, "outputTokens": 400},
//!  "durationMs": 41000, "reply": "Tidied up the branch.\nCOMPLETED"}
//! ```
//!
//! `reply` is the follow-up's last reply, kept in the run log (bounded); `apiErrorStatus`
//! the HTTP status of an API error the backend's agent stopped on (429: a rate limit, the
//! entry waits for its reset), as does a `429` answer of the backend's own. Only `status`
//! is required (`ok`, `error: why`, `skipped: why`). A timeout, a refused or
//! broken connection, an answer other than 2xx, a body that is not such an object, or one
//! over [`MAX_BODY`] each become an `error: …` status that says which; the run is recorded
//! like any other. A run has no local process, so there is nothing left over to end.

use std::time::Duration;

use async_trait::async_trait;
use hooks_core::ports::{RunHandle, RunRequest, Runner, RunnerError};
use hooks_core::{ProcessRef, RunOutcome, Status, Usage};
use serde::{Deserialize, Serialize};

/// The most of an answer that is read.
pub const MAX_BODY: u64 = 1024 * 1024;

/// Where and how to send runs.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// `http://` or `https://` (TLS through rustls, the web's root certificates).
    pub url: String,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
    /// How long one run may take, the answer included.
    pub timeout: Duration,
}

/// The webhook runner.
#[derive(Debug, Clone)]
pub struct WebhookRunner {
    config: WebhookConfig,
}

impl WebhookRunner {
    /// Checks the URL's form; nothing is sent.
    pub fn new(config: WebhookConfig) -> Result<Self, hooks_core::ValidationError> {
        let ok = ["http://", "https://"]
            .iter()
            .any(|s| config.url.starts_with(s) && config.url.len() > s.len());
        if !ok || config.url.contains(char::is_whitespace) {
            return Err(hooks_core::ValidationError::new(
                "runnerUrl",
                format!("must be an http:// or https:// URL (got {:?})", config.url),
            ));
        }
        Ok(Self { config })
    }

    pub fn url(&self) -> &str {
        &self.config.url
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunBody<'a> {
    hook_id: &'a str,
    session_id: &'a str,
    cwd: &'a str,
    prompt: &'a str,
    options: OptionsBody<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OptionsBody<'a> {
    model: Option<&'a str>,
    permission_mode: Option<&'a str>,
    max_turns: Option<u32>,
    allowed_tools: &'a [String],
    append_system_prompt: Option<&'a str>,
    max_budget_usd: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutcomeBody {
    status: String,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    completed: Option<bool>,
    #[serde(default)]
    num_turns: Option<u64>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    usage: Option<UsageBody>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    reply: Option<String>,
    /// The HTTP status of the API error the backend's agent stopped on (429: a rate
    /// limit, requeued until it resets).
    #[serde(default)]
    api_error_status: Option<u16>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageBody {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

fn failed(why: String) -> RunOutcome {
    RunOutcome::new(Status::error(why))
}

fn first_line(text: &str) -> &str {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(200) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

/// The outcome of a 2xx answer's body.
fn outcome(body: &[u8]) -> RunOutcome {
    let o: OutcomeBody = match serde_json::from_slice(body) {
        Ok(o) => o,
        Err(e) => {
            return failed(format!(
                "webhook: the answer is not a run outcome ({e}): {}",
                first_line(&String::from_utf8_lossy(body))
            ));
        }
    };
    if let Some(c) = o.cost_usd
        && !(c.is_finite() && (0.0..=hooks_core::MAX_RUN_COST_USD).contains(&c))
    {
        return failed(format!(
            "webhook: the answer's costUsd must be a number from 0 to {} (got {c})",
            hooks_core::MAX_RUN_COST_USD
        ));
    }
    let status = match Status::parse(o.status.trim()) {
        // `requeued: …` is the queue's word for an entry it put back, never a run's.
        Status::Other(_) | Status::Requeued(_) => Status::error(format!(
            "webhook: the answer's status must be ok, error: … or skipped: … (got {:?}); a backend that met a limit says apiErrorStatus: 429",
            o.status.trim()
        )),
        s => s,
    };
    {
        let mut out = RunOutcome::new(status);
        out.api_error_status = o.api_error_status;
        out.exit_code = o.exit_code;
        out.completed = o.completed;
        out.num_turns = o.num_turns;
        out.cost_usd = o.cost_usd;
        out.usage = o.usage.map(|u| {
            let mut o = Usage::default();
            o.input_tokens = u.input_tokens;
            o.cache_creation_input_tokens = u.cache_creation_input_tokens;
            o.cache_read_input_tokens = u.cache_read_input_tokens;
            o.output_tokens = u.output_tokens;
            o
        });
        out.duration_ms = o.duration_ms;
        out.session_id = None;
        out.result_text = o.reply;
        out
    }
}

/// One run, start to end, on a blocking thread.
fn post(config: &WebhookConfig, body: Vec<u8>) -> RunOutcome {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(config.timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let mut request = agent
        .post(&config.url)
        .header("Content-Type", "application/json");
    if let Some(t) = &config.token {
        request = request.header("Authorization", format!("Bearer {t}"));
    }
    let url = &config.url;
    let response = match request.send(&body[..]) {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => {
            return failed(format!(
                "webhook: no answer from {url} within {}s",
                config.timeout.as_secs()
            ));
        }
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
            return failed(format!(
                "webhook: no answer from {url} within {}s",
                config.timeout.as_secs()
            ));
        }
        Err(e) => return failed(format!("webhook: could not reach {url}: {e}")),
    };
    let status = response.status();
    let read = response
        .into_body()
        .with_config()
        .limit(MAX_BODY)
        .read_to_vec();
    let bytes = match read {
        Ok(b) => b,
        Err(ureq::Error::BodyExceedsLimit(_)) => {
            return failed(format!("webhook: the answer is over {MAX_BODY} bytes"));
        }
        Err(ureq::Error::Timeout(_)) => {
            return failed(format!(
                "webhook: the answer from {url} did not end within {}s",
                config.timeout.as_secs()
            ));
        }
        Err(e) => return failed(format!("webhook: could not read the answer: {e}")),
    };
    if !status.is_success() {
        let mut o = failed(format!(
            "webhook answered {status}: {}",
            first_line(&String::from_utf8_lossy(&bytes))
        ));
        // A backend that is rate limited (or whose agent is) says so with a 429: the
        // follow-up waits for the limit, as Claude's own 429 does.
        if status.as_u16() == 429 {
            o.api_error_status = Some(429);
        }
        return o;
    }
    outcome(&bytes)
}

/// A run in flight.
struct Handle(tokio::task::JoinHandle<RunOutcome>);

#[async_trait]
impl RunHandle for Handle {
    fn process(&self) -> Option<ProcessRef> {
        None
    }

    async fn wait(self: Box<Self>) -> RunOutcome {
        self.0
            .await
            .unwrap_or_else(|e| failed(format!("webhook: the request failed: {e}")))
    }
}

#[async_trait]
impl Runner for WebhookRunner {
    async fn start(&self, request: &RunRequest) -> Result<Box<dyn RunHandle>, RunnerError> {
        let o = &request.prompt.options;
        let body = serde_json::to_vec(&RunBody {
            hook_id: request.hook_id.as_str(),
            session_id: request.session_id.as_str(),
            cwd: &request.cwd,
            prompt: &request.prompt.body,
            options: OptionsBody {
                model: o.model.as_deref(),
                permission_mode: o.permission_mode.as_deref(),
                max_turns: o.max_turns,
                allowed_tools: &o.allowed_tools,
                append_system_prompt: o.append_system_prompt.as_deref(),
                max_budget_usd: o.max_budget.usd(),
            },
        })
        .map_err(|e| RunnerError::Spawn {
            program: self.config.url.clone(),
            message: format!("could not write the request: {e}"),
        })?;
        let config = self.config.clone();
        Ok(Box::new(Handle(tokio::task::spawn_blocking(move || {
            post(&config, body)
        }))))
    }

    async fn end_leftovers(&self, _group: &ProcessRef) -> usize {
        0
    }
}
