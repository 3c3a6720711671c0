//! The web page at `/` (server-rendered HTML, a few lines of plain JavaScript that reload it
//! when the store changes), its forms under `/ui/…`, the Prometheus text at `/metrics`,
//! and the API's OpenAPI document.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use hooks_core::*;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;

use crate::http::{ApiError, Caller, HttpState, respond};

/// The API's description (OpenAPI 3.0).
pub const OPENAPI: &str = include_str!("openapi.json");

/// `%xx` and `+` decoded; invalid sequences kept as they are.
pub fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 3 <= b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(())
                {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px;color:#1b1f24}\
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin:1.4em 0 .4em}\
table{border-collapse:collapse;width:100%;font-size:.92em}td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #e3e6ea;vertical-align:top}\
.chip{display:inline-block;border-radius:10px;padding:0 8px;font-size:.85em;white-space:nowrap}.ok{background:#d7f5dd;color:#0b5d1e}\
.error{background:#fde2e1;color:#8a1c13}.skipped{background:#fff0c2;color:#6b4d00}.none{background:#eceff3;color:#444}\
.why{color:#555;font-size:.85em}.err{color:#b3261e;font-size:.85em;display:block}\
form.inline{display:inline}input[type=text],input[type=number]{width:7em}details{margin:.2em 0}\
.muted{color:#666}.wrap{overflow-x:auto}@media(max-width:640px){td,th{padding:3px}.hide-s{display:none}}";

fn html(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        esc(title)
    )
}

pub fn message_page(text: &str) -> String {
    html(
        "hooks-app",
        &format!("<h1>hooks-app</h1><p>{}</p>", esc(text)),
    )
}

pub fn login_needed() -> Response<Full<Bytes>> {
    respond(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        message_page("Log in with the one-time link `hooks-app open` prints."),
    )
}

/// What the page shows of a status: its chip, and why.
fn chip(status: Option<&Status>) -> String {
    match status {
        None => "<span class=\"chip none\">never ran</span>".into(),
        Some(Status::Ok) => "<span class=\"chip ok\">ok</span>".into(),
        Some(Status::Error(why)) => format!(
            "<span class=\"chip error\">error</span> <span class=why>{}</span>",
            esc(why)
        ),
        Some(Status::Skipped(why)) => format!(
            "<span class=\"chip skipped\">skipped</span> <span class=why>{}</span>",
            esc(why)
        ),
        Some(Status::Other(s)) => format!("<span class=\"chip none\">{}</span>", esc(s)),
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
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>hooks-app</h1><p class=muted>store {} · {} hook(s) · {} pending · {} run(s) in the log · this page follows the store</p>",
        esc(&s.store.signals.location()),
        snap.hooks.len(),
        snap.pending.len(),
        runs.len()
    );
    if !csrf.is_empty() {
        let _ = write!(
            b,
            "<form class=inline method=post action=\"/logout\"><input type=hidden name=csrf value=\"{}\"><button>Log out</button></form>",
            esc(&csrf)
        );
    }
    // Hooks.
    b.push_str("<h2>Hooks</h2><div class=wrap><table><tr><th>hook</th><th>status</th><th>delay</th><th class=hide-s>caps</th><th>on</th></tr>");
    let no_errors = FieldErrors::new();
    let (errs, given) = errors.map_or((&no_errors, &Value::Null), |(e, g)| (e, g));
    for h in &snap.hooks {
        let id = esc(h.id.as_str());
        let err = |f: &str| {
            errs.get(&(h.id.to_string(), f.to_owned()))
                .map(|r| {
                    format!(
                        "<span class=err role=alert data-field=\"{f}\">{}</span>",
                        esc(r)
                    )
                })
                .unwrap_or_default()
        };
        // A refused form keeps what was typed.
        let val = |f: &str, current: String| -> String {
            if errs.keys().any(|(hid, _)| hid == h.id.as_str()) {
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
                .map(|c| format!(", cost ≤ {}", crate::doctor::usd(c)))
                .unwrap_or_default()
        );
        let open = errs.keys().any(|(hid, _)| hid == h.id.as_str());
        let _ = write!(
            b,
            "<tr id=\"hook-{id}\"><td><b>{}</b><br><span class=muted>{id}</span></td><td data-status>{}</td><td>{}s</td><td class=hide-s>{}</td>\
             <td><form class=inline method=post action=\"/ui/hooks/{id}/toggle\"><input type=hidden name=csrf value=\"{csrf}\">\
             <button type=submit name=toggle data-enabled=\"{}\">{}</button></form></td></tr>\
             <tr><td colspan=5><details{}><summary>edit</summary><form method=post action=\"/ui/hooks/{id}/edit\">\
             <input type=hidden name=csrf value=\"{csrf}\">\
             <label>name <input type=text name=name value=\"{}\"></label>{}\
             <label> delay (s) <input type=text name=delaySeconds value=\"{}\"></label>{}\
             <label> max context (k) <input type=text name=maxContextK value=\"{}\"></label>{}\
             <label> max cost (USD) <input type=text name=maxCostUsd value=\"{}\"></label>{}\
             <label> prompt file <input type=text name=promptFile style=\"width:18em\" value=\"{}\"></label>{}\
             <button type=submit>save</button></form></details></td></tr>",
            esc(&h.name),
            chip(h.last_status.as_ref()),
            h.delay.seconds(),
            esc(&caps),
            h.enabled,
            if h.enabled { "disable" } else { "enable" },
            if open { " open" } else { "" },
            esc(&val("name", h.name.clone())),
            err("name"),
            esc(&val("delaySeconds", h.delay.seconds().to_string())),
            err("delaySeconds"),
            esc(&val("maxContextK", h.max_context.k().to_string())),
            err("maxContextK"),
            esc(&val(
                "maxCostUsd",
                h.max_cost.usd().map_or("0".into(), |c| c.to_string())
            )),
            err("maxCostUsd"),
            esc(&val("promptFile", h.prompt_file.to_string())),
            err("promptFile"),
        );
    }
    b.push_str("</table></div>");
    // The queue.
    b.push_str("<h2>Queue</h2>");
    if snap.pending.is_empty() {
        b.push_str("<p class=muted>nothing queued</p>");
    } else {
        b.push_str("<div class=wrap><table><tr><th>hook</th><th>session</th><th>due</th><th>retries</th><th>state</th></tr>");
        for p in snap.pending.iter().take(200) {
            let due = match p.gives_up_at() {
                Some(t) => format!(
                    "when closed (gives up in {})",
                    span((t - now).whole_seconds())
                ),
                None => p
                    .due_at
                    .time()
                    .map_or_else(|| p.due_at.to_string(), |t| span((t - now).whole_seconds())),
            };
            let state = match (&p.claim, &p.waiting) {
                (Some(c), _) if c.expires_at > now => {
                    format!("running or starting: claimed by {}", esc(&c.owner))
                }
                (_, Some(w)) if w.open => {
                    format!("waits until the conversation is closed: {}", esc(&w.reason))
                }
                (_, Some(w)) => format!("waits: {}", esc(&w.reason)),
                _ if p.due_at.is_due(now) => "due".into(),
                _ => "waits for its delay".into(),
            };
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{due}</td><td>{}</td><td>{state}</td></tr>",
                esc(p.hook_id.as_str()),
                esc(p.session_id.as_str()),
                p.retries
            );
        }
        b.push_str("</table></div>");
    }
    // Recent runs.
    b.push_str("<h2>Recent runs</h2>");
    if runs.is_empty() {
        b.push_str("<p class=muted>no runs yet</p>");
    } else {
        b.push_str("<div class=wrap><table id=runs><tr><th>hook</th><th>session</th><th>status</th><th>COMPLETED</th><th>cost</th><th class=hide-s>tokens</th><th class=hide-s>duration</th></tr>");
        for r in runs.iter().rev().take(50) {
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
                "<span class=\"chip none\">running</span>".to_owned()
            } else {
                chip(Some(&o.status()))
            };
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{status}</td><td>{}</td><td>{}</td><td class=hide-s>{}</td><td class=hide-s>{}</td></tr>",
                esc(r.hook_id.as_str()),
                esc(r.session_id.as_str()),
                match o.completed {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "–",
                },
                o.cost_usd.map_or("–".into(), crate::doctor::usd),
                tokens.map_or("–".into(), |t| t.to_string()),
                o.duration_ms
                    .map_or("–".into(), |d| format!("{:.1} s", d as f64 / 1000.0)),
            );
        }
        b.push_str("</table></div>");
    }
    b.push_str(&chart(&runs, now));
    // Session lookup.
    let asked = q
        .iter()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.trim().to_owned());
    let _ = write!(
        b,
        "<h2>Why was a conversation followed up, or not?</h2><form method=get action=\"/\"><input type=text name=session style=\"width:22em\" placeholder=\"session id\" value=\"{}\"> <button type=submit>look up</button></form>",
        esc(asked.as_deref().unwrap_or(""))
    );
    if let Some(sid) = asked.filter(|a| !a.is_empty()) {
        match crate::commands::resolve_session(s.meta.as_ref(), &s.store, &sid).await {
            Err(e) => {
                let _ = write!(
                    b,
                    "<p class=err>{}</p>",
                    esc(&crate::AppError::from(e).message)
                );
            }
            Ok(sid) => {
                let (v, facts, pending) =
                    crate::commands::session_view(&s.svc, s.meta.as_ref(), &s.store, &sid).await?;
                b.push_str("<table id=session>");
                let now = s.svc.now();
                for (label, text) in crate::commands::session_lines(&v, &facts, &pending, now) {
                    let _ = write!(b, "<tr><th>{}</th><td>{}</td></tr>", esc(label), esc(&text));
                }
                b.push_str("</table>");
            }
        }
    }
    // Follow the store: reload when it changed, unless someone is typing.
    let version = version(s).await?;
    let _ = write!(
        b,
        "<script>(function(){{var v={};setInterval(function(){{var a=document.activeElement;if(a&&a.form)return;\
         fetch('/api/v1/version',{{credentials:'same-origin'}}).then(function(r){{return r.json()}}).then(function(j){{if(j.version!==v)location.reload()}}).catch(function(){{}})}},2000)}})()</script>",
        serde_json::to_string(&version).unwrap_or_else(|_| "\"\"".into())
    );
    let status = if errors.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond(
        status,
        "text/html; charset=utf-8",
        html("hooks-app", &b),
    ))
}

/// The last 30 days' cost and runs per day (UTC), as an inline SVG bar chart.
fn chart(runs: &[RunRecord], now: stamp::Timestamp) -> String {
    let today = now.date();
    let mut days: BTreeMap<time::Date, (f64, u32)> = BTreeMap::new();
    for i in 0..30 {
        days.insert(today - time::Duration::days(i), (0.0, 0));
    }
    for r in runs {
        if let Some(d) = days.get_mut(&r.started_at.to_offset(time::UtcOffset::UTC).date()) {
            d.0 += r.outcome.cost_usd.unwrap_or(0.0);
            d.1 += 1;
        }
    }
    let max = days.values().map(|d| d.0).fold(0.0_f64, f64::max);
    let total: f64 = days.values().map(|d| d.0).sum();
    let count: u32 = days.values().map(|d| d.1).sum();
    let (w, h) = (600.0, 120.0);
    let bw = w / 30.0;
    let mut svg = format!(
        "<h2>Last 30 days</h2><p class=muted>{count} run(s), {} in all (UTC days)</p><svg id=chart viewBox=\"0 0 {w} {}\" width=\"100%\" role=img aria-label=\"cost per day\">",
        crate::doctor::usd(total),
        h + 14.0
    );
    for (i, (day, (cost, n))) in days.iter().enumerate() {
        let bh = if max > 0.0 { cost / max * h } else { 0.0 };
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#4a78c2\"><title>{day}: {} over {n} run(s)</title></rect>",
            i as f64 * bw + 1.0,
            h - bh,
            bw - 2.0,
            crate::doctor::usd(*cost)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"{}\" font-size=\"10\">{}</text><text x=\"{w}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{today}</text></svg>",
        h + 12.0,
        today - time::Duration::days(29),
        h + 12.0
    );
    svg
}

/// A value that changes whenever what the page shows changes.
pub async fn version(s: &HttpState) -> Result<String, ApiError> {
    let snap = s.store.snapshot().await?;
    let runs = s.store.runs(&RunFilter::default()).await?;
    let mut v = String::new();
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
    let (headers_ok, req) = {
        let fields_ok = req.headers().get(header::ORIGIN).is_none_or(|o| {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            o.to_str()
                .is_ok_and(|o| o == format!("http://{host}") || o == format!("https://{host}"))
        });
        (fields_ok, req)
    };
    let bytes = crate::http::read_body(req).await?;
    let fields: Vec<(String, String)> = String::from_utf8_lossy(&bytes)
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (url_decode(k), url_decode(v))
        })
        .collect();
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
    if !headers_ok || !get("csrf").is_some_and(|t| crate::http::same(t.as_bytes(), csrf.as_bytes()))
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            "must be the page's token, sent from the page's own origin",
        ));
    }
    let id = match rest.first().map(|s| s.as_str()) {
        Some("hooks") => rest.get(1).cloned().unwrap_or_default(),
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
    let mut duration = crate::http::Histogram::default();
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
            duration.observe(crate::http::DURATION_BUCKETS, ms as f64 / 1000.0);
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
        crate::http::DURATION_BUCKETS,
        &duration,
    );
    let late = m.lateness.lock().map(|g| g.clone()).unwrap_or_default();
    histogram(
        &mut t,
        "hooks_app_lateness_seconds",
        "How late this daemon started follow-ups (start - due).",
        crate::http::LATENESS_BUCKETS,
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
        "# HELP hooks_app_runs_in_progress Follow-ups this daemon is running now.\n# TYPE hooks_app_runs_in_progress gauge\nhooks_app_runs_in_progress {}",
        s.svc.running_leases().len()
    );
    Ok(t)
}

fn histogram(t: &mut String, name: &str, help: &str, buckets: &[f64], h: &crate::http::Histogram) {
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
