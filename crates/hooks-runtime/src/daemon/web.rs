//! The daemon's HTTP side, set up: the listener bound (with who holds a taken port), and
//! the [`hooks_http::Backend`] this program gives the server: Claude Code's hook input
//! read as `claude-hook` reads it, and the store's folder checked for the health check.

use std::path::Path;
use std::sync::Arc;

use hooks_core::service::{NotifyReport, Service};
use hooks_http::{ApiError, HttpOptions};

use crate::compose::{Store, StoreChoice};
use crate::options::HookTrigger;
use crate::{AppError, Context};

/// How long an event that came with the hook token waits for its transcript to show it.
const TRANSCRIPT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Binds the address (so a bad one fails before anything starts) and says where it is.
pub async fn bind(o: &HttpOptions, data_dir: &Path) -> Result<tokio::net::TcpListener, AppError> {
    tokio::net::TcpListener::bind(o.addr).await.map_err(|e| {
        let holder = if e.kind() == std::io::ErrorKind::AddrInUse {
            let ours = super::ondemand::running(data_dir).into_iter().find(|d| {
                d["http"]
                    .as_str()
                    .is_some_and(|u| u.trim_start_matches("http://") == o.addr.to_string())
            });
            match ours {
                Some(d) => format!(
                    "; this data folder's daemon (pid {}) serves there: `hooks-app open` finds it",
                    d["pid"]
                ),
                None => format!(
                    "; another program holds it (`ss -ltnp 'sport = :{0}'` or `lsof -i :{0}` \
                     names it): choose another port",
                    o.addr.port()
                ),
            }
        } else {
            String::new()
        };
        AppError::runtime(format!("http: could not listen on {}: {e}{holder}", o.addr))
    })
}

/// What the server asks of this program.
pub struct Web {
    pub ctx: Context,
    pub svc: Arc<Service>,
    pub store: Store,
    /// The checked hook inputs that may wait for their transcript at once.
    pub catch_up: tokio::sync::Semaphore,
}

/// How many checked hook inputs wait for their transcript at once (see `hook_input`).
pub const CATCH_UP_AT_ONCE: usize = 4;

fn api_error(e: AppError) -> ApiError {
    if e.code == 2 {
        let (field, rule) = e
            .message
            .split_once(": ")
            .map_or(("", e.message.as_str()), |(f, r)| (f, r));
        ApiError::bad(field, rule)
    } else {
        ApiError::unavailable(e.message)
    }
}

#[async_trait::async_trait]
impl hooks_http::Backend for Web {
    fn store_location(&self) -> String {
        self.store.signals.location()
    }

    /// A store in the data folder needs that folder still there.
    async fn health(&self) -> Result<(), String> {
        match &self.ctx.store {
            StoreChoice::Json { dir, .. } if !dir.is_dir() => {
                Err(format!("the store's folder {} is gone", dir.display()))
            }
            _ => Ok(()),
        }
    }

    async fn hook_input(
        &self,
        body: &[u8],
        on_session_end: bool,
        checked: bool,
    ) -> Result<Vec<NotifyReport>, ApiError> {
        let on = on_session_end.then_some(HookTrigger::SessionEnd);
        if checked {
            // Claude Code may post before its transcript is written: give it a moment
            // (a true event catches up in milliseconds; a false one costs one read of the
            // user's own transcript, and a few at a time: past that, none is waited for).
            if let Ok(_turn) = self.catch_up.try_acquire() {
                crate::claude_hook::await_transcript(&self.ctx, body, TRANSCRIPT_WAIT).await;
            }
        }
        match crate::claude_hook::plan(&self.ctx, body, on, "body", checked).map_err(api_error)? {
            None => Ok(Vec::new()),
            Some(p) => Ok(crate::claude_hook::carry_out(&self.svc, &p).await?.0),
        }
    }
}
