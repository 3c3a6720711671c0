//! `hooks-app mcp`: the MCP server's [`hooks_mcp::Backend`], over the core, for the one
//! conversation whose Claude Code process started the server.

use std::sync::Arc;

use hooks_core::model::{CostCap, HookId};
use hooks_core::schedule::{Ask, Schedule};
use hooks_core::service::Service;
use hooks_core::{SessionId, stamp};
use hooks_mcp::ScheduleArgs;
use time::Duration;

use crate::compose::{block_on, service};
use crate::{AppResult, Context};

/// How an entry an agent cancels ends.
pub const CANCELLED: &str = "cancelled by the agent";

/// What one conversation's agent may schedule through the server: the person's, set on
/// the server's command line (which `install --mcp` writes), never the agent's.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How many it may have queued at once, and how far ahead: held by the core where
    /// they are queued.
    pub queue: hooks_core::schedule::Limits,
    /// The most each may cost.
    pub max_cost: CostCap,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            queue: hooks_core::schedule::Limits {
                max_queued: 10,
                max_ahead: Duration::days(7),
            },
            max_cost: CostCap::NONE,
        }
    }
}

struct Backend {
    ctx: Context,
    svc: Service,
    /// The conversation, once found: at the first call, not at the start, since Claude
    /// Code may start its MCP servers before it writes its own session file (measured
    /// with 2.1.197). Once found it stays: the server serves one conversation.
    session: std::sync::OnceLock<(SessionId, hooks_core::SessionUpdate)>,
    limits: Limits,
}

/// Serves the MCP tools on stdio until the client closes them. The conversation is the one
/// whose Claude Code process runs this server (its own `sessions/<pid>.json`): with none,
/// every tool says so and nothing is queued.
pub fn serve(ctx: &Context, limits: Limits) -> AppResult {
    let (svc, _) = service(ctx)?;
    let backend = Backend {
        ctx: ctx.clone(),
        svc,
        session: std::sync::OnceLock::new(),
        limits,
    };
    block_on(hooks_mcp::serve_stdio(Arc::new(backend)))?.map_err(crate::AppError::runtime)
}

impl Backend {
    fn session(&self) -> Result<&(SessionId, hooks_core::SessionUpdate), String> {
        if let Some(s) = self.session.get() {
            return Ok(s);
        }
        let t = crate::schedule::target_calling(&self.ctx).ok_or_else(|| {
            format!(
                "hooks-app mcp serves the Claude Code conversation that starts it, and none started it here (no session file of a parent process in {}): it schedules nothing",
                self.ctx.claude_home.join("sessions").display()
            )
        })?;
        Ok(self.session.get_or_init(|| (t.session, t.update)))
    }
}

fn rule(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[async_trait::async_trait]
impl hooks_mcp::Backend for Backend {
    async fn schedule(&self, a: ScheduleArgs) -> Result<String, String> {
        let (session, update) = self.session()?;
        let now = self.svc.now();
        let ask = Ask {
            after: Some(&a.after),
            every: a.every.as_deref(),
            times: a.times,
            until: None,
        };
        let schedule = Schedule::parse(&ask, now)
            .map_err(rule)?
            .max_cost(self.limits.max_cost);
        let done = self
            .svc
            .schedule_within(session, update, &schedule, &a.prompt, &self.limits.queue)
            .await
            .map_err(rule)?;
        // Run by an agent: the daemon starts only with the environment `install` kept.
        let daemon = match crate::daemon::ondemand::ensure_running(&self.ctx, true) {
            Ok(started) => started || crate::daemon::ondemand::daemon_running(&self.ctx.data_dir),
            Err(_) => false,
        };
        let mut text: Vec<String> = done
            .occurrences
            .iter()
            .map(|(h, t)| format!("queued {h}: due at {}", stamp::format(*t)))
            .collect();
        if !daemon {
            text.push(
                "note: no hooks-app daemon is running, so it comes only once one runs".into(),
            );
        }
        Ok(text.join("\n"))
    }

    async fn list(&self) -> Result<String, String> {
        let (session, _) = self.session()?;
        let queued = self.svc.scheduled_for(session).await.map_err(rule)?;
        if queued.is_empty() {
            return Ok("no follow-ups are queued in this conversation".into());
        }
        Ok(queued
            .iter()
            .map(|p| format!("{}: due at {}", p.hook_id, p.became_due()))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    async fn cancel(&self, id: &str) -> Result<String, String> {
        let (session, _) = self.session()?;
        let hook = HookId::parse(id).map_err(rule)?;
        self.svc
            .cancel_scheduled(session, &hook, CANCELLED)
            .await
            .map_err(rule)?;
        Ok(format!("cancelled {hook}"))
    }
}
