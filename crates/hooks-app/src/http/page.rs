//! The web page at `/` (server-rendered HTML, a few lines of plain JavaScript that reload it
//! when the store changes), its forms under `/ui/…`, the Prometheus text at `/metrics`,
//! and the API's OpenAPI document.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use maud::{Markup, PreEscaped};
use std::sync::atomic::Ordering;

use hooks_core::*;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;

use super::state::{ApiError, Caller, HttpState, respond};
use crate::output::count;

/// The API's description (OpenAPI 3.0).
pub const OPENAPI: &str = include_str!("openapi.json");

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px;color:#1b1f24}\
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin:1.4em 0 .4em}\
table{border-collapse:collapse;width:100%;font-size:.92em}td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #e3e6ea;vertical-align:top}\
.chip{display:inline-block;border-radius:10px;padding:0 8px;font-size:.85em;white-space:nowrap}.ok{background:#d7f5dd;color:#0b5d1e}\
.error{background:#fde2e1;color:#8a1c13}.skipped{background:#fff0c2;color:#6b4d00}.none{background:#eceff3;color:#444}\
.why{color:#555;font-size:.85em}.err{color:#b3261e;font-size:.85em;display:block}\
form.inline{display:inline}details{margin:.2em 0}\
form.edit{display:grid;grid-template-columns:repeat(auto-fit,minmax(14em,1fr));gap:.5em 1em;margin:.4em 0}\
form.edit label{display:flex;flex-direction:column;font-size:.9em}form.edit input{width:100%;box-sizing:border-box;font:inherit;padding:3px}\
form.edit button{justify-self:start;align-self:end}\
.paused{background:#fff0c2;color:#6b4d00;padding:6px 10px;border-radius:6px}.muted{color:#666}.num{text-align:right;white-space:nowrap}code{font-size:.92em}\
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}\
svg text{font-size:10px;fill:#555}#chart{max-width:720px;display:block}\
@media(max-width:640px){body{padding:8px}table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%;box-sizing:border-box}\
table.stack tr:first-child{display:none}table.stack tr{border-bottom:1px solid #d5d9de;padding:4px 0}table.stack td{border:0;padding:1px 4px}\
table.stack td[data-label]::before{content:attr(data-label) ': ';color:#666}table.stack td.num{text-align:left}\
svg text{font-size:15px}.hide-s{display:none}}input{box-sizing:border-box}";

/// A whole page around `body`.
fn html(title: &str, body: Markup) -> String {
    maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body { (body) }
        }
    }
    .into_string()
}

pub fn message_page(text: &str) -> String {
    html("hooks-app", maud::html! { h1 { "hooks-app" } p { (text) } })
}

pub fn login_needed() -> Response<Full<Bytes>> {
    respond(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        html(
            "hooks-app",
            maud::html! {
                h1 { "hooks-app" }
                p { "Log in with the one-time link " code { "hooks-app open" } " prints." }
            },
        ),
    )
}

/// A session id short enough for a phone, whole on hover, linking to its lookup.
fn session_link(id: &str) -> Markup {
    let short: String = id.chars().take(8).collect();
    maud::html! {
        a href={ "/?session=" (id) "#lookup" } title=(id) data-session=(id) {
            (short) @if short.len() < id.len() { "…" }
        }
    }
}

/// A time as "3m 20s ago", the absolute time on hover.
fn when(t: stamp::Timestamp, now: stamp::Timestamp) -> Markup {
    let abs = stamp::format(t);
    maud::html! { time datetime=(abs) title=(abs) { (span((t - now).whole_seconds())) } }
}

/// Milliseconds as seconds with one decimal.
fn secs(ms: i128) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// What the page shows of a status: its chip, and why.
fn chip(status: Option<&Status>) -> Markup {
    let (class, word, why) = match status {
        None => ("none", "never ran", None),
        Some(Status::Ok) => ("ok", "ok", None),
        Some(Status::Error(why)) => ("error", "error", Some(why)),
        Some(Status::Skipped(why)) => ("skipped", "skipped", Some(why)),
        Some(Status::Other(s)) => ("none", s.as_str(), None),
    };
    maud::html! {
        span class={ "chip " (class) } { (word) }
        @if let Some(why) = why { " " span.why { (why) } }
    }
}

fn span(secs: i64) -> String {
    let a = secs.abs();
    let t = if a >= 86_400 {
        format!("{}d {}h", a / 86_400, a % 86_400 / 3600)
    } else if a >= 3600 {
        format!("{}h {}m", a / 3600, a % 3600 / 60)
    } else if a >= 60 {
        format!("{}m {}s", a / 60, a % 60)
    } else {
        format!("{a}s")
    };
    if secs < 0 {
        format!("{t} ago")
    } else {
        format!("in {t}")
    }
}

/// Form errors to show next to their fields: (hook id, field) → rule.
pub type FieldErrors = BTreeMap<(String, String), String>;

pub async fn page(
    s: &HttpState,
    caller: &Caller,
    q: &[(String, String)],
    errors: Option<(&FieldErrors, &Value)>,
) -> Result<Response<Full<Bytes>>, ApiError> {
    let csrf = match caller {
        Caller::Page { csrf } => csrf.clone(),
        Caller::Token => String::new(),
    };
    let now = s.svc.now();
    let snap = s.store.snapshot().await?;
    let runs = s.store.runs(&RunFilter::default()).await?;
    let no_errors = FieldErrors::new();
    let (errs, given) = errors.map_or((&no_errors, &Value::Null), |(e, g)| (e, g));
    let asked = q
        .iter()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.trim().to_owned())
        .filter(|a| !a.is_empty());
    let lookup = match &asked {
        None => None,
        Some(sid) => Some(
            match crate::sessions::resolve_session(s.meta.as_ref(), &s.store, sid).await {
                Err(e) => Err(crate::AppError::from(e).message),
                Ok(sid) => {
                    let (v, facts, pending) =
                        crate::sessions::session_view(&s.svc, s.meta.as_ref(), &s.store, &sid)
                            .await?;
                    Ok((
                        sid,
                        crate::sessions::session_lines(&v, &facts, &pending, now),
                    ))
                }
            },
        ),
    };
    let version = version(s).await?;
    let paused = s.svc.paused().await?;
    let body = maud::html! {
        h1 { "hooks-app" }
        p.muted {
            "store " (s.store.signals.location()) " · "
            (count(snap.hooks.len(), "hook", "hooks")) " · "
            (snap.pending.len()) " pending · "
            (count(runs.len(), "run", "runs")) " in the log · this page follows the store · v"
            (env!("CARGO_PKG_VERSION"))
        }
        @if !csrf.is_empty() {
            form.inline method="post" action="/logout" {
                input type="hidden" name="csrf" value=(csrf);
                button { "Log out" }
            }
        }
        @if let Some(p) = &paused {
            p.paused role="status" { "Follow-ups are " (p.reason()) ": nothing starts." }
        }
        @if !csrf.is_empty() {
            form.inline method="post" action="/ui/pause" {
                input type="hidden" name="csrf" value=(csrf);
                @if paused.is_some() {
                    button type="submit" name="pause" data-paused="true" { "Resume follow-ups" }
                } @else {
                    button type="submit" name="pause" data-paused="false" { "Pause all follow-ups" }
                }
            }
        }
        h2 { "Hooks" }
        table.stack {
            tr { th { "hook" } th { "status" } th { "delay" } th { "caps" } th { "on" } }
            @for h in &snap.hooks {
                (hook_rows(h, &csrf, errs, given))
            }
        }
        h2 { "Queue" }
        @if snap.pending.is_empty() {
            p.muted { "nothing queued" }
        } @else {
            table.stack #queue {
                tr { th { "hook" } th { "session" } th { "due" } th { "retries" } th { "state" } }
                @for p in snap.pending.iter().take(200) {
                    (queue_row(p, now))
                }
            }
        }
        h2 { "Recent runs" }
        @if runs.is_empty() {
            p.muted { "no runs yet" }
        } @else {
            table.stack #runs {
                tr {
                    th { "started" } th { "hook" } th { "session" } th { "status" } th { "completed" }
                    th.num { "took" } th.num { "API time" } th.num { "cost" } th.num { "tokens" }
                }
                @for r in runs.iter().rev().take(50) {
                    (run_row(r, now))
                }
            }
        }
        (chart(&runs, now))
        h2 #lookup { "Why was a conversation followed up, or not?" }
        form method="get" action="/#lookup" {
            label.sr for="session-id" { "session id" }
            input #session-id type="text" name="session" placeholder="session id (or its first 8 characters)"
                value=(asked.as_deref().unwrap_or("")) style="width:min(28em,100%)";
            " "
            button type="submit" { "look up" }
        }
        @match &lookup {
            None => {}
            Some(Err(why)) => p.err role="alert" { (why) },
            Some(Ok((sid, lines))) => {
                table #session {
                    @for (label, text) in lines {
                        tr { th { (label) } td { (text) } }
                    }
                }
                @if !csrf.is_empty() {
                    @for h in snap.hooks.iter().filter(|h| h.enabled) {
                        form.inline method="post" action="/ui/run" {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="hook" value=(h.id);
                            input type="hidden" name="session" value=(sid);
                            button type="submit" name="run" value=(h.id) { "Run " (h.id) " now" }
                            " "
                        }
                    }
                }
            },
        }
        // Follow the store: reload when it changed, unless someone is typing.
        script {
            (PreEscaped(format!(
                "(function(){{var v={};setInterval(function(){{var a=document.activeElement;if(a&&a.form)return;\
                 fetch('/api/v1/version',{{credentials:'same-origin'}}).then(function(r){{return r.json()}}).then(function(j){{if(j.version!==v)location.reload()}}).catch(function(){{}})}},2000)}})()",
                serde_json::to_string(&version).unwrap_or_else(|_| "\"\"".into())
            )))
        }
    };
    let status = if errors.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond(
        status,
        "text/html; charset=utf-8",
        html("hooks-app", body),
    ))
}

/// A hook's row and, below it, its edit form (open when the form was refused).
fn hook_rows(h: &Hook, csrf: &str, errs: &FieldErrors, given: &Value) -> Markup {
    let id = h.id.as_str();
    let refused = errs.keys().any(|(hid, _)| hid == id);
    let err = |f: &str| -> Markup {
        maud::html! {
            @if let Some(r) = errs.get(&(id.to_owned(), f.to_owned())) {
                span.err role="alert" data-field=(f) { (r) }
            }
        }
    };
    // A refused form keeps what was typed.
    let val = |f: &str, current: String| -> String {
        if refused {
            given
                .get(f)
                .and_then(Value::as_str)
                .map_or(current, str::to_owned)
        } else {
            current
        }
    };
    let caps = format!(
        "{}{}",
        if h.max_context.k() == 0 {
            "no context cap".to_owned()
        } else {
            format!("context ≤ {}k", h.max_context.k())
        },
        h.max_cost
            .usd()
            .map(|c| format!(", cost ≤ {}", crate::output::usd(c)))
            .unwrap_or_default()
    );
    let field = |name: &str, label: &str, value: String| -> Markup {
        maud::html! {
            label { (label) input type="text" name=(name) value=(val(name, value)); (err(name)) }
        }
    };
    maud::html! {
        tr id={ "hook-" (id) } {
            td data-label="hook" { b { (h.name) } br; span.muted { (id) } }
            td data-label="status" data-status { (chip(h.last_status.as_ref())) }
            td data-label="delay" { (h.delay.seconds()) " s" }
            td data-label="caps" { (caps) }
            td {
                form.inline method="post" action={ "/ui/hooks/" (id) "/toggle" } {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" name="toggle" data-enabled=(h.enabled) {
                        @if h.enabled { "disable" } @else { "enable" }
                    }
                }
            }
        }
        tr {
            td colspan="5" {
                details open[refused] {
                    summary { "edit" }
                    form.edit method="post" action={ "/ui/hooks/" (id) "/edit" } {
                        input type="hidden" name="csrf" value=(csrf);
                        (field("name", "name", h.name.clone()))
                        (field("delaySeconds", "delay (s)", h.delay.seconds().to_string()))
                        (field("maxContextK", "max context (k)", h.max_context.k().to_string()))
                        (field("maxCostUsd", "max cost (USD)", h.max_cost.usd().map_or("0".into(), |c| c.to_string())))
                        (field("promptFile", "prompt file", h.prompt_file.to_string()))
                        button type="submit" { "save" }
                    }
                }
            }
        }
    }
}

fn queue_row(p: &PendingEntry, now: stamp::Timestamp) -> Markup {
    let due = match p.gives_up_at() {
        Some(t) => format!("when closed (gives up {})", span((t - now).whole_seconds())),
        None => p
            .due_at
            .time()
            .map_or_else(|| p.due_at.to_string(), |t| span((t - now).whole_seconds())),
    };
    let state = match (&p.claim, &p.waiting) {
        (Some(c), _) if c.expires_at > now => {
            format!("running or starting: claimed by {}", c.owner)
        }
        (_, Some(w)) if w.open => format!("waits until the conversation is closed: {}", w.reason),
        (_, Some(w)) => format!("waits: {}", w.reason),
        _ if p.due_at.is_due(now) => "due".into(),
        _ => "waits for its delay".into(),
    };
    maud::html! {
        tr {
            td data-label="hook" { (p.hook_id) }
            td data-label="session" { (session_link(p.session_id.as_str())) }
            td data-label="due" { (due) }
            td data-label="retries" { (p.retries) }
            td data-label="state" { (state) }
        }
    }
}

fn run_row(r: &RunRecord, now: stamp::Timestamp) -> Markup {
    let o = &r.outcome;
    let tokens = o.usage.map(|u| {
        [
            u.input_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
            u.output_tokens,
        ]
        .iter()
        .flatten()
        .sum::<u64>()
    });
    let status = if r.finished_at.is_none() && o.status.is_none() {
        chip(Some(&Status::Other("running".into())))
    } else {
        chip(Some(&o.status()))
    };
    let dash = "–".to_owned();
    maud::html! {
        tr {
            td data-label="started" { (when(r.started_at, now)) }
            td data-label="hook" { (r.hook_id) }
            td data-label="session" { (session_link(r.session_id.as_str())) }
            td data-label="status" { (status) }
            td data-label="completed" {
                @match o.completed { Some(true) => "yes", Some(false) => "no", None => "–" }
            }
            td.num data-label="took" { (r.took().map_or(dash.clone(), |d| secs(d.whole_milliseconds()))) }
            td.num data-label="API time" { (o.duration_ms.map_or(dash.clone(), |d| secs(i128::from(d)))) }
            td.num data-label="cost" { (o.cost_usd.map_or(dash.clone(), crate::output::usd)) }
            td.num data-label="tokens" { (tokens.map_or(dash, |t| t.to_string())) }
        }
    }
}

/// The last 30 days' cost and runs per day (UTC): an SVG bar chart with a y-axis and each
/// day's figures on hover, and the same figures as a table for screen readers.
fn chart(runs: &[RunRecord], now: stamp::Timestamp) -> Markup {
    let today = now.date();
    let mut days: BTreeMap<time::Date, (f64, usize)> = BTreeMap::new();
    for i in 0..30 {
        days.insert(today - time::Duration::days(i), (0.0, 0));
    }
    for r in runs.iter().filter(|r| r.started()) {
        if let Some(d) = days.get_mut(&r.started_at.to_offset(time::UtcOffset::UTC).date()) {
            d.0 += r.outcome.cost_usd.unwrap_or(0.0);
            d.1 += 1;
        }
    }
    let max = days.values().map(|d| d.0).fold(0.0_f64, f64::max);
    let total: f64 = days.values().map(|d| d.0).sum();
    let n: usize = days.values().map(|d| d.1).sum();
    // The axis goes to a round figure at or above the dearest day.
    let top = nice_ceiling(max);
    // `pad` above the top line keeps its label inside the picture.
    let (left, w, h, pad) = (74.0, 600.0, 120.0, 8.0);
    let bw = (w - left) / 30.0;
    let ticks = [0.0, top / 2.0, top];
    maud::html! {
        h2 { "Last 30 days" }
        p.muted { (count(n, "run", "runs")) ", " (crate::output::usd(total)) " in all (UTC days)" }
        svg #chart viewBox={ "0 " (-pad) " " (w) " " (h + 16.0 + pad) } width="100%" role="img"
            aria-label={ "cost per day over the last 30 days, up to " (crate::output::usd(max)) } {
            @for t in ticks {
                @let y = h - if top > 0.0 { t / top * h } else { 0.0 };
                line x1=(left) x2=(w) y1=(y) y2=(y) stroke="#e3e6ea" {}
                text x=(left - 4.0) y=(y + 3.0) text-anchor="end" { (crate::output::usd(t)) }
            }
            @for (i, (day, (cost, runs))) in days.iter().enumerate() {
                @let bh = if top > 0.0 { cost / top * h } else { 0.0 };
                rect x=(format!("{:.1}", left + i as f64 * bw + 1.0)) y=(format!("{:.1}", h - bh))
                    width=(format!("{:.1}", bw - 2.0)) height=(format!("{bh:.1}")) fill="#4a78c2" {
                    title { (day) ": " (crate::output::usd(*cost)) " over " (count(*runs, "run", "runs")) }
                }
            }
            text x=(left) y=(h + 13.0) { (today - time::Duration::days(29)) }
            text x=(w) y=(h + 13.0) text-anchor="end" { (today) }
        }
        table.sr #chart-table {
            caption { "Cost and runs per day, last 30 days" }
            tr { th { "day" } th { "cost" } th { "runs" } }
            @for (day, (cost, runs)) in days.iter().rev() {
                tr { td { (day) } td { (crate::output::usd(*cost)) } td { (runs) } }
            }
        }
    }
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `x` (0 for 0).
fn nice_ceiling(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= x * 0.999_999)
        .unwrap_or(10.0 * p)
}

/// A value that changes whenever what the page shows changes.
pub async fn version(s: &HttpState) -> Result<String, ApiError> {
    let snap = s.store.snapshot().await?;
    let runs = s.store.runs(&RunFilter::default()).await?;
    let mut v = format!("pause:{:?};", s.store.pause().await?);
    for h in &snap.hooks {
        let _ = write!(
            v,
            "{}:{}:{}:{}:{}:{:?};",
            h.id,
            h.enabled,
            h.delay.seconds(),
            h.name,
            h.history.len(),
            h.last_status
        );
    }
    for p in &snap.pending {
        let _ = write!(
            v,
            "{}/{}:{}:{}:{};",
            p.hook_id,
            p.session_id,
            p.due_at,
            p.claim.is_some(),
            p.waiting.is_some()
        );
    }
    let last = runs
        .last()
        .map(|r| format!("{:?}{:?}", r.run_id, r.finished_at))
        .unwrap_or_default();
    let _ = write!(v, "runs:{}:{last}", runs.len());
    // Short and stable: FNV-1a.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Ok(format!("{hash:016x}"))
}

/// `POST /ui/hooks/{id}/toggle|edit`: the page's forms. The form carries the CSRF token.
pub async fn form(
    s: &HttpState,
    caller: &Caller,
    req: Request<Incoming>,
    rest: &[String],
) -> Result<Response<Full<Bytes>>, ApiError> {
    let Caller::Page { csrf } = caller else {
        return Err(ApiError::not_found(
            "path",
            "the page's forms are for the page",
        ));
    };
    let headers_ok = super::state::origin_ok(&req);
    let bytes = super::state::read_body(req).await?;
    let fields = super::state::form_fields(&bytes);
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
    if !headers_ok
        || !get("csrf").is_some_and(|t| super::state::same(t.as_bytes(), csrf.as_bytes()))
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
            s.svc.run_now(&hook, &sid, false).await?;
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

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn status_class(s: &Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Error(_) => "error",
        Status::Skipped(_) => "skipped",
        Status::Other(_) => "other",
    }
}

/// The Prometheus text: counters of this process's HTTP events; runs, cost and tokens from
/// the run log; the lateness of what this daemon fired; the queue and the runs going on now.
pub async fn metrics(s: &HttpState) -> Result<String, ApiError> {
    let m = &s.metrics;
    let now = s.svc.now();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# HELP hooks_app_events_total Conversation events received over HTTP by this daemon.\n# TYPE hooks_app_events_total counter\nhooks_app_events_total {}",
        m.events.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_queued_total Follow-ups queued by events received over HTTP.\n# TYPE hooks_app_queued_total counter\nhooks_app_queued_total {}",
        m.queued.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_skipped_total Hooks not queued for an event received over HTTP, by reason.\n# TYPE hooks_app_skipped_total counter"
    );
    for (reason, n) in m.skipped.lock().map(|g| g.clone()).unwrap_or_default() {
        let _ = writeln!(
            t,
            "hooks_app_skipped_total{{reason=\"{}\"}} {n}",
            label(&reason)
        );
    }
    let runs = s.store.runs(&RunFilter::default()).await?;
    let mut by: BTreeMap<(String, &'static str), u64> = BTreeMap::new();
    let mut cost: BTreeMap<String, f64> = BTreeMap::new();
    let mut tokens: BTreeMap<(String, &'static str), u64> = BTreeMap::new();
    let mut duration = super::state::Histogram::default();
    for r in runs
        .iter()
        .filter(|r| r.finished_at.is_some() || r.outcome.status.is_some())
    {
        let hook = r.hook_id.to_string();
        *by.entry((hook.clone(), status_class(&r.outcome.status())))
            .or_default() += 1;
        *cost.entry(hook.clone()).or_default() += r.outcome.cost_usd.unwrap_or(0.0);
        if let Some(u) = r.outcome.usage {
            for (kind, v) in [
                ("input", u.input_tokens),
                ("cache_creation_input", u.cache_creation_input_tokens),
                ("cache_read_input", u.cache_read_input_tokens),
                ("output", u.output_tokens),
            ] {
                *tokens.entry((hook.clone(), kind)).or_default() += v.unwrap_or(0);
            }
        }
        if let Some(ms) = r.outcome.duration_ms {
            duration.observe(super::state::DURATION_BUCKETS, ms as f64 / 1000.0);
        }
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_runs_total Finished follow-up runs in the run log, by hook and status.\n# TYPE hooks_app_runs_total counter"
    );
    for ((hook, status), n) in &by {
        let _ = writeln!(
            t,
            "hooks_app_runs_total{{hook=\"{}\",status=\"{status}\"}} {n}",
            label(hook)
        );
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_cost_usd_total What follow-up runs cost, as Claude reported it, by hook.\n# TYPE hooks_app_cost_usd_total counter"
    );
    for (hook, c) in &cost {
        let _ = writeln!(
            t,
            "hooks_app_cost_usd_total{{hook=\"{}\"}} {c}",
            label(hook)
        );
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_tokens_total Tokens of follow-up runs, by hook and kind.\n# TYPE hooks_app_tokens_total counter"
    );
    for ((hook, kind), n) in &tokens {
        let _ = writeln!(
            t,
            "hooks_app_tokens_total{{hook=\"{}\",kind=\"{kind}\"}} {n}",
            label(hook)
        );
    }
    histogram(
        &mut t,
        "hooks_app_run_duration_seconds",
        "How long follow-up runs took.",
        super::state::DURATION_BUCKETS,
        &duration,
    );
    let late = m.lateness.lock().map(|g| g.clone()).unwrap_or_default();
    histogram(
        &mut t,
        "hooks_app_lateness_seconds",
        "How late this daemon started follow-ups (start - due).",
        super::state::LATENESS_BUCKETS,
        &late,
    );
    let snap = s.store.snapshot().await?;
    let mut states: BTreeMap<&str, u64> =
        [("claimed", 0), ("waiting", 0), ("due", 0), ("scheduled", 0)].into();
    for p in &snap.pending {
        let st = if p.is_claimed(now) {
            "claimed"
        } else if p.waiting.is_some() {
            "waiting"
        } else if p.due_at.is_due(now) {
            "due"
        } else {
            "scheduled"
        };
        *states.entry(st).or_default() += 1;
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_pending Queued follow-ups, by state.\n# TYPE hooks_app_pending gauge"
    );
    for (st, n) in states {
        let _ = writeln!(t, "hooks_app_pending{{state=\"{st}\"}} {n}");
    }
    let _ = writeln!(
        t,
        "# HELP hooks_app_paused Whether follow-ups are paused (hooks-app pause), for every daemon sharing the store.\n# TYPE hooks_app_paused gauge\nhooks_app_paused {}",
        u8::from(s.svc.paused().await?.is_some())
    );
    let _ = writeln!(
        t,
        "# HELP hooks_app_runs_in_progress Follow-ups this daemon is running now.\n# TYPE hooks_app_runs_in_progress gauge\nhooks_app_runs_in_progress {}",
        s.svc.running_leases().len()
    );
    Ok(t)
}

fn histogram(t: &mut String, name: &str, help: &str, buckets: &[f64], h: &super::state::Histogram) {
    let _ = writeln!(t, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (i, b) in buckets.iter().enumerate() {
        let _ = writeln!(
            t,
            "{name}_bucket{{le=\"{b}\"}} {}",
            h.counts.get(i).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(
        t,
        "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}",
        h.count, h.sum, h.count
    );
}

#[cfg(test)]
mod chart_tests {
    use super::*;

    #[test]
    fn the_axis_tops_at_a_round_figure_and_plurals_agree() {
        for (x, want) in [
            (0.0, 0.0),
            (0.01, 0.01),
            (0.011, 0.02),
            (0.42, 0.5),
            (3.0, 5.0),
            (7.5, 10.0),
        ] {
            assert!(
                (nice_ceiling(x) - want).abs() < 1e-9,
                "{x} → {}",
                nice_ceiling(x)
            );
        }
        assert_eq!(count(1, "hook", "hooks"), "1 hook");
        assert_eq!(count(0, "run", "runs"), "0 runs");
        assert_eq!(count(2, "run", "runs"), "2 runs");
    }

    #[test]
    fn a_long_session_id_is_cut_for_the_eye_but_linked_whole() {
        let id = "ad18d5d3-1111-4222-8333-444455556666";
        let html = session_link(id).into_string();
        assert!(html.contains(">ad18d5d3…<"), "{html}");
        assert!(
            html.contains(&format!("href=\"/?session={id}#lookup\"")),
            "{html}"
        );
        assert!(html.contains(&format!("title=\"{id}\"")), "{html}");
    }
}
