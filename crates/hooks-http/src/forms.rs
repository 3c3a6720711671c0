//! The page's forms: a hook's fields, enabling and running hooks, checked as the API checks
//! them and answered with the page (and the fields' errors).

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::response::Response;
use hooks_core::*;
use serde_json::Value;

use crate::page::{FieldErrors, page};
use crate::state::{ApiError, Body, Caller, HttpState, respond};

/// `POST /ui/hooks/{id}/toggle|edit`: the page's forms. The form carries the CSRF token.
pub async fn form(
    State(s): State<Arc<HttpState>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(rest): Path<String>,
    Body(bytes): Body,
) -> Result<Response, ApiError> {
    let s = &*s;
    let caller = &caller;
    let rest: Vec<String> = rest.split('/').map(str::to_owned).collect();
    let Caller::Page { csrf } = caller else {
        return Err(ApiError::not_found(
            "path",
            "the page's forms are for the page",
        ));
    };
    let headers_ok = crate::state::origin_ok(&headers);
    let fields = crate::state::form_fields(&bytes);
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
    if !headers_ok
        || !get("csrf").is_some_and(|t| crate::state::same(t.as_bytes(), csrf.as_bytes()))
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            "must be the page's token, sent from the page's own origin",
        ));
    }
    let id = match rest.first().map(|s| s.as_str()) {
        Some("hooks") => rest.get(1).cloned().unwrap_or_default(),
        // Run a hook now on the looked-up conversation, through every usual check.
        Some("run") if rest.len() == 1 => {
            let hook = HookId::parse(get("hook").unwrap_or_default())
                .map_err(|e| ApiError::bad("hook", e.rule))?;
            let sid = SessionId::parse(get("session").unwrap_or_default())
                .map_err(|e| ApiError::bad("session", e.rule))?;
            let force = match get("force") {
                None => false,
                Some("1") => true,
                Some(_) => return Err(ApiError::bad("force", "must be 1, or absent")),
            };
            s.svc.run_now(&hook, &sid, force).await?;
            let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "queued");
            let to = format!("/?session={}#lookup", sid.as_str());
            r.headers_mut().insert(
                header::LOCATION,
                HeaderValue::from_str(&to).unwrap_or(HeaderValue::from_static("/")),
            );
            return Ok(r);
        }
        // The kill switch: pause until unpaused, or unpause.
        Some("pause") if rest.len() == 1 => {
            if s.svc.paused().await?.is_some() {
                s.svc.unpause().await?;
            } else {
                s.svc.pause(None, "the web page").await?;
            }
            let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "saved");
            r.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/"));
            return Ok(r);
        }
        _ => return Err(ApiError::not_found("path", "no such form")),
    };
    let id = HookId::parse(&id).map_err(|e| ApiError::not_found("id", e.rule))?;
    match rest.get(2).map(String::as_str) {
        Some("toggle") => {
            let h = s.svc.get_hook(&id).await?;
            s.svc.set_enabled(&id, !h.enabled).await?;
        }
        Some("edit") => {
            // Each field on its own, so every error is shown next to its field.
            let mut errors = FieldErrors::new();
            let mut given = serde_json::Map::new();
            let mut patch = HookPatch::default();
            for (k, v) in &fields {
                if k == "csrf" {
                    continue;
                }
                given.insert(k.clone(), Value::String(v.clone()));
                let one = match k.as_str() {
                    "name" => validate_name(v).map(|n| patch.name = Some(n)),
                    "delaySeconds" => Delay::parse(v).map(|d| patch.delay = Some(d)),
                    "maxContextK" => ContextCap::parse(v).map(|c| patch.max_context = Some(c)),
                    "maxCostUsd" => CostCap::parse(v).map(|c| patch.max_cost = Some(c)),
                    "promptFile" => PromptFile::parse(v).map(|p| patch.prompt_file = Some(p)),
                    "deliver" => Delivery::parse(v).map(|d| patch.deliver = Some(d)),
                    "repeat" => Repeat::parse(v).map(|r| patch.repeat = Some(r)),
                    "agent" => AgentScope::parse(v).map(|a| patch.agent = Some(a)),
                    _ => Ok(()),
                };
                if let Err(e) = one {
                    errors.insert((id.to_string(), k.clone()), e.rule);
                }
            }
            if !errors.is_empty() {
                return page(s, caller, &[], Some((&errors, &Value::Object(given)))).await;
            }
            s.svc.update_hook(&id, &patch).await?;
        }
        _ => return Err(ApiError::not_found("path", "no such form")),
    }
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "saved");
    r.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&format!("/#hook-{id}")).unwrap_or(HeaderValue::from_static("/")),
    );
    Ok(r)
}
