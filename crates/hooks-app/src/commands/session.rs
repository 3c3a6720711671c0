//! `session S`: what is known about one conversation.

use hooks_core::*;

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::sessions::resolve_session;
use crate::sessions::session_view;
use crate::{AppResult, Context};
use hooks_shapes::text::session_lines;

pub fn session_cmd(ctx: &Context, session: &str, json: bool) -> AppResult {
    SessionId::parse(session)?;
    let (svc, store) = service(ctx)?;
    let meta = ctx.meta(&store);
    let sid = block_on(resolve_session(&meta, &store, session))??;
    let (v, facts, pending) = block_on(session_view(&svc, &meta, &store, &sid))??;
    if json {
        print_json(&v);
        return Ok(());
    }
    for (label, text) in session_lines(&v, &facts, &pending, time::OffsetDateTime::now_utc()) {
        println!("{label:<16}{text}");
    }
    Ok(())
}
