//! `hooks-app mcp`: a Model Context Protocol server on stdio, through which an agent
//! schedules a follow-up in its own conversation ("check back in 20 minutes and …"),
//! lists the ones it has queued and cancels one.
//!
//! This crate is the protocol only, through the official SDK (`rmcp`): the tools, their
//! schemas and the stdio transport. What a tool does is the [`Backend`]'s, which the
//! composition root implements over the core. The conversation is the backend's to know
//! (from the process that started the server), never a tool's argument: an agent cannot
//! name another conversation.

#![deny(missing_docs)]

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

/// The server's name, as clients list it (Claude Code names its tools
/// `mcp__hooks-app__<tool>`).
pub const SERVER_NAME: &str = "hooks-app";

/// The tools' names.
pub const TOOLS: [&str; 3] = ["schedule_follow_up", "list_follow_ups", "cancel_follow_up"];

/// What an agent asks a follow-up to be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct ScheduleArgs {
    /// What the follow-up says to you when it comes: the task to pick up then.
    #[schemars(
        description = "What the follow-up will say to you when it comes, e.g. \"Check whether the CI run for this branch passed and fix it if not\"."
    )]
    pub prompt: String,
    /// How long from now.
    #[schemars(description = "How long from now: 90s, 20m, 2h, 1d, 1h30m.")]
    pub after: String,
    /// Repeat at this interval (with `times`).
    #[schemars(
        description = "Repeat at this interval (5m, 2h, 1d; at least a minute). Leave out for once."
    )]
    #[serde(default)]
    pub every: Option<String>,
    /// How many times, with `every`.
    #[schemars(description = "How many times in all, with every (the person's limits apply).")]
    #[serde(default)]
    pub times: Option<u32>,
}

/// Which follow-up to cancel.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
pub struct CancelArgs {
    /// The id `schedule_follow_up` or `list_follow_ups` gave.
    #[schemars(
        description = "The follow-up's id, as schedule_follow_up or list_follow_ups gave it."
    )]
    pub id: String,
}

/// What the tools do, for the one conversation the server serves. Each answer is text the
/// agent reads; an `Err` is a tool error (the agent sees it and the call failed), saying
/// which argument broke which rule.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Queues a follow-up in the conversation.
    async fn schedule(&self, args: ScheduleArgs) -> Result<String, String>;
    /// The follow-ups queued in the conversation by any means, with their ids and times.
    async fn list(&self) -> Result<String, String>;
    /// Cancels one of them; one of another conversation is no follow-up of this one.
    async fn cancel(&self, id: &str) -> Result<String, String>;
}

/// The MCP server over a [`Backend`].
#[derive(Clone)]
pub struct Server {
    backend: Arc<dyn Backend>,
    #[allow(dead_code)] // read by the code `tool_handler` writes
    tool_router: ToolRouter<Self>,
}

fn answer(r: Result<String, String>) -> Result<CallToolResult, ErrorData> {
    Ok(match r {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
    })
}

#[tool_router]
impl Server {
    /// A server whose tools `backend` carries out.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Schedule a follow-up in this very conversation: after the given time, hooks-app sends you the prompt here (into the open session, or by resuming it once it is closed), once, or `times` times `every` interval. Use it to check back later on something that takes time (CI, a deploy, a long job) instead of waiting. The person sees it in `hooks-app pending` and can cancel it."
    )]
    async fn schedule_follow_up(
        &self,
        Parameters(args): Parameters<ScheduleArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.backend.schedule(args).await)
    }

    #[tool(
        description = "List the follow-ups queued in this conversation, with their ids and when each comes."
    )]
    async fn list_follow_ups(&self) -> Result<CallToolResult, ErrorData> {
        answer(self.backend.list().await)
    }

    #[tool(description = "Cancel a follow-up queued in this conversation, by its id.")]
    async fn cancel_follow_up(
        &self,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.backend.cancel(&args.id).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "hooks-app: schedule a follow-up prompt in this conversation for later (schedule_follow_up), list them, cancel one.",
        )
    }
}

/// Serves `backend` on this process's stdin and stdout until the client closes them.
pub async fn serve_stdio(backend: Arc<dyn Backend>) -> Result<(), String> {
    serve(backend, rmcp::transport::stdio()).await
}

/// Serves `backend` over `io` (stdio, or a pipe in a test) until the client closes it.
pub async fn serve<T, E, A>(backend: Arc<dyn Backend>, io: T) -> Result<(), String>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = Server::new(backend)
        .serve(io)
        .await
        .map_err(|e| format!("the MCP client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP session ended on an error: {e}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl Backend for Recorder {
        async fn schedule(&self, args: ScheduleArgs) -> Result<String, String> {
            self.0.lock().unwrap().push(format!("{args:?}"));
            if args.after == "never" {
                return Err("after: must be a length of time".into());
            }
            Ok(format!("queued after-1 in {}", args.after))
        }
        async fn list(&self) -> Result<String, String> {
            Ok("after-1".into())
        }
        async fn cancel(&self, id: &str) -> Result<String, String> {
            Err(format!("id: no follow-up {id} in this conversation"))
        }
    }

    /// A client's session over a pipe: the tools are listed with their schemas, a call
    /// reaches the backend with its arguments, and a backend's `Err` is a tool error.
    #[tokio::test]
    async fn the_tools_are_listed_and_called_through_the_protocol() {
        let backend = Arc::new(Recorder::default());
        let (client, server) = tokio::io::duplex(64 * 1024);
        let task = tokio::spawn(serve(backend.clone(), server));
        let (r, mut w) = tokio::io::split(client);
        let mut lines = BufReader::new(r).lines();
        let mut ask = async |msg: Value| -> Option<Value> {
            w.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
            msg.get("id")?;
            let line = lines.next_line().await.unwrap().unwrap();
            Some(serde_json::from_str(&line).unwrap())
        };
        let init = ask(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await
        .unwrap();
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let list = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await
            .unwrap();
        let tools = list["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names.len(), 3, "{list}");
        for name in TOOLS {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
        let schedule = tools
            .iter()
            .find(|t| t["name"] == "schedule_follow_up")
            .unwrap();
        let required = schedule["inputSchema"]["required"].to_string();
        assert!(
            required.contains("prompt") && required.contains("after"),
            "{schedule}"
        );
        let call = |id: u32, name: &str, args: Value| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args}})
        };
        let ok = ask(call(
            3,
            "schedule_follow_up",
            json!({"prompt": "check CI", "after": "20m"}),
        ))
        .await
        .unwrap();
        assert_eq!(ok["result"]["isError"], false, "{ok}");
        assert!(
            ok["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("20m")
        );
        let bad = ask(call(
            4,
            "schedule_follow_up",
            json!({"prompt": "x", "after": "never"}),
        ))
        .await
        .unwrap();
        assert_eq!(bad["result"]["isError"], true, "{bad}");
        let gone = ask(call(5, "cancel_follow_up", json!({"id": "every-2"})))
            .await
            .unwrap();
        assert!(
            gone["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("every-2")
        );
        assert_eq!(
            backend.0.lock().unwrap().len(),
            2,
            "both schedule calls reached the backend"
        );
        task.abort();
    }
}
