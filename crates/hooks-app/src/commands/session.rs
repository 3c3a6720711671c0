//! `session S`: what is known about one conversation.

use hooks_core::*;

use crate::compose::{block_on, service};
use crate::output::print_json;
use crate::{AppResult, Context};
use hooks_shapes::text::session_lines;

pub fn session_cmd(ctx: &Context, session: &str, json: bool) -> AppResult {
    SessionId::parse(session)?;
    let (svc, _) = service(ctx)?;
    let sid = block_on(svc.find_session(session))??;
    let report = block_on(svc.session_report(&sid))??;
    if json {
        print_json(&hooks_shapes::json::session(&report));
        return Ok(());
    }
    for (label, text) in session_lines(&report) {
        crate::say!("{label:<16}{text}");
    }
    Ok(())
}
