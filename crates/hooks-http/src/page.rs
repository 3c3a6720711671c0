//! The web page at `/` (server-rendered HTML, a few lines of plain JavaScript that reload it
//! when the store changes), its forms under `/ui/…`, the Prometheus text at `/metrics`,
//! and the API's OpenAPI document.

use std::collections::BTreeMap;

use maud::{Markup, PreEscaped};

use axum::http::StatusCode;
use axum::response::Response;
use hooks_core::*;
use serde_json::Value;

use crate::chart::chart;
use crate::metrics::version;
use crate::state::{ApiError, Caller, HttpState, respond};
use hooks_shapes::text::count;

/// The API's description (OpenAPI 3.0).
pub const OPENAPI: &str = include_str!("openapi.json");

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px;color:#1b1f24}\
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin:1.4em 0 .4em}\
table{border-collapse:collapse;width:100%;font-size:.92em}td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #e3e6ea;vertical-align:top}\
.chip{display:inline-block;border-radius:10px;padding:0 8px;font-size:.85em;white-space:nowrap}.ok{background:#d7f5dd;color:#0b5d1e}\
.error{background:#fde2e1;color:#8a1c13}.skipped{background:#fff0c2;color:#6b4d00}.none{background:#eceff3;color:#444}\
.why{color:#555;font-size:.85em}.err{color:#b3261e;font-size:.85em;display:block}\
form.inline{display:inline}#session td{overflow-wrap:anywhere;white-space:pre-wrap}details{margin:.2em 0}tr.reply-row td{padding-top:0}details.reply pre{white-space:pre-wrap;max-width:60em;max-height:24em;overflow:auto;font-size:.85em;background:#f5f6f8;padding:6px;margin:.3em 0}\
form.edit{display:grid;grid-template-columns:repeat(auto-fit,minmax(14em,1fr));gap:.5em 1em;margin:.4em 0}\
form.edit label{display:flex;flex-direction:column;font-size:.9em}form.edit input{width:100%;box-sizing:border-box;font:inherit;padding:3px}\
form.edit button{justify-self:start;align-self:end}\
.paused{background:#fff0c2;color:#6b4d00;padding:6px 10px;border-radius:6px}.muted{color:#666}.num{text-align:right;white-space:nowrap}code{font-size:.92em}\
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}\
svg text{font-size:10px;fill:#555}#chart{max-width:720px;display:block}#chart-phone{display:none}\
@media(max-width:640px){body{padding:8px}table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%;box-sizing:border-box}\
table.stack tr:first-child{display:none}table.stack tr{border-bottom:1px solid #d5d9de;padding:4px 0}table.stack td{border:0;padding:1px 4px}\
table.stack td[data-label]::before{content:attr(data-label) ': ';color:#666}table.stack td.num{text-align:left}\
svg text{font-size:12px}.hide-s,#chart{display:none}#chart-phone{display:block}}input{box-sizing:border-box}";

/// A whole page around `body`.
fn html(title: &str, body: Markup) -> String {
    html_at(title, body, None)
}

/// [`html`], with the store's version for the page's script to poll against.
fn html_at(title: &str, body: Markup, version: Option<&str>) -> String {
    maud::html! {
        (maud::DOCTYPE)
        html lang="en" data-version=[version] {
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

/// What every script of the page shares (`window.HA`): the login it keeps in this origin's
/// IndexedDB (its session id, its non-extractable private key, the daemon's public key)
/// and `signed(url, init)`, which first has the server prove with the daemon's key that
/// it is the user's daemon (a signature over a random challenge of the page's and a fresh
/// nonce), then sends the request with `Authorization: Page <id> <nonce> <signature>`. A
/// server that cannot prove it is sent nothing: the promise fails with `untrusted`, and
/// `warn()` says so on the page.
const AUTH_SCRIPT: &str = r#"window.HA=window.HA||(function(){
var E=new TextEncoder(),A={name:'ECDSA',hash:'SHA-256'},L;
function hex(b){return Array.prototype.map.call(new Uint8Array(b),function(x){return('0'+x.toString(16)).slice(-2)}).join('')}
function unhex(s){if(typeof s!=='string'||!/^([0-9a-f]{2})+$/.test(s))throw new Error('not hex');var b=new Uint8Array(s.length/2);for(var i=0;i<b.length;i++)b[i]=parseInt(s.substr(2*i,2),16);return b}
function db(mode,f){return new Promise(function(ok,no){var q=indexedDB.open('hooks-app',1);q.onupgradeneeded=function(){q.result.createObjectStore('login')};q.onerror=function(){no(q.error)};
 q.onsuccess=function(){var d=q.result,x=d.transaction('login',mode),r=f(x.objectStore('login'));x.oncomplete=function(){d.close();ok(r&&r.result)};x.onerror=function(){d.close();no(x.error)}}})}
function load(){try{localStorage.removeItem('hooks-app-session')}catch(e){}
 return L!==undefined?Promise.resolve(L):db('readonly',function(s){return s.get('page')}).then(function(v){L=v||null;return L})}
function keep(v){L=v;return db('readwrite',function(s){s.put(v,'page')})}
function forget(){L=null;return db('readwrite',function(s){s.delete('page')})}
function untrusted(){var e=new Error('untrusted');e.untrusted=true;return e}
async function signed(url,o){
 var l=await load();if(!l)throw new Error('no login');
 var c=hex(crypto.getRandomValues(new Uint8Array(32))),j,ok=false;
 var r=await fetch('/page/challenge?c='+c,{credentials:'omit',cache:'no-store'});
 try{j=await r.json();var k=await crypto.subtle.importKey('raw',unhex(l.daemon),{name:'ECDSA',namedCurve:'P-256'},false,['verify']);
  ok=/^[0-9a-f]{64}$/.test(j.nonce)&&await crypto.subtle.verify(A,k,unhex(j.proof),E.encode('hooks-app page challenge\n'+c+'\n'+j.nonce))}catch(e){ok=false}
 if(!ok)throw untrusted();
 var s=await crypto.subtle.sign(A,l.key,E.encode('hooks-app page request\n'+l.id+'\n'+j.nonce));
 o=o||{};o.credentials='omit';o.cache='no-store';o.headers=o.headers||{};o.headers.Authorization='Page '+l.id+' '+j.nonce+' '+hex(s);
 return fetch(url,o)}
function warn(){var p=document.getElementById('untrusted');if(!p){p=document.createElement('p');p.id='untrusted';p.setAttribute('role','alert');document.body.insertBefore(p,document.body.firstChild)}
 p.textContent='The server at this address could not prove it is your hooks-app daemon, so the page sent it nothing and stopped asking. Run `hooks-app open` to reach your daemon.'}
return{hex:hex,load:load,keep:keep,forget:forget,signed:signed,warn:warn}})();
"#;

/// The page's script, on every page it renders: its forms and its polling go through
/// `HA.signed` (see [`AUTH_SCRIPT`]); a form's answer is shown in place, a redirect is
/// followed by a real navigation (which loads the shell again). A server that cannot
/// prove it is the daemon stops the polling. The browser never holds a cookie of this
/// server, so no other port is sent one.
const PAGE_SCRIPT: &str = r#"(function(){
var H=window.HA;
function show(h){document.open();document.write(h);document.close()}
function stop(){if(window.hooksAppPoll){clearInterval(window.hooksAppPoll);window.hooksAppPoll=null}}
function fail(e){if(e&&e.untrusted){stop();H.warn()}}
document.addEventListener('submit',function(e){
 var f=e.target;e.preventDefault();
 var d=new URLSearchParams(new FormData(f,e.submitter)),a=f.getAttribute('action')||'/';
 if((f.getAttribute('method')||'get').toLowerCase()==='get'){location.assign(a.split('?')[0]+'?'+d.toString()+(f.getAttribute('data-hash')||''));return}
 H.signed(a,{method:'POST',headers:{'Content-Type':'application/x-www-form-urlencoded'},body:d.toString()}).then(function(r){
  if(a==='/logout')return H.forget().then(function(){return r.text()});
  if(r.redirected){location.assign(r.url);return null}
  return r.text()}).then(function(x){if(x!==null)show(x)}).catch(fail);
});
stop();
var v=document.documentElement.getAttribute('data-version');
if(v!==null)H.load().then(function(l){if(l)window.hooksAppPoll=setInterval(function(){var a=document.activeElement;if(a&&a.form)return;
 H.signed('/api/v1/version').then(function(r){return r.json()}).then(function(j){if(j.version!==v)location.reload()}).catch(fail)},2000)});
})()"#;

/// What a browser gets for the page before it proves its login: a shell whose script
/// asks again through `HA.signed` and shows the answer. Without a login (or with one the
/// daemon no longer knows), it says how to log in; at a server that cannot prove it is the
/// daemon, it says that, and keeps the login for the daemon's return.
pub fn login_needed() -> Response {
    const LOADER: &str = r#"(function(){
var H=window.HA,m=document.getElementById('m');
H.load().then(function(l){
 if(!l)return null;
 m.textContent='Loading…';
 return H.signed(location.pathname+location.search).then(function(r){
  if(r.status===401)return H.forget().then(function(){m.textContent='Your login has ended. Log in with the one-time link `hooks-app open` prints.';return null});
  return r.text()})
}).then(function(h){if(h){document.open();document.write(h);document.close()}})
.catch(function(e){if(e&&e.untrusted){m.textContent='';H.warn();return}
 m.textContent='The daemon does not answer: `hooks-app open` starts it and logs you in.'});
})()"#;
    respond(
        StatusCode::UNAUTHORIZED,
        "text/html; charset=utf-8",
        html(
            "hooks-app",
            maud::html! {
                h1 { "hooks-app" }
                p #m { "Log in with the one-time link " code { "hooks-app open" } " prints." }
                script { (PreEscaped(AUTH_SCRIPT)) (PreEscaped(LOADER)) }
            },
        ),
    )
}

/// The page a login link opens: its script makes the page's key pair in the browser (the
/// private half not extractable, kept in this origin's IndexedDB), sends the link's token
/// and the public half to `POST /login`, keeps the session and the daemon's public key it
/// is answered with, and goes on to the page. The token leaves the address bar first.
pub fn login_page() -> String {
    const LOGIN: &str = r#"(function(){
var H=window.HA,m=document.getElementById('m'),t=new URLSearchParams(location.search).get('token')||'';
history.replaceState(null,'','/login');
if(!window.crypto||!crypto.subtle||!window.indexedDB){m.textContent='This browser gives the page no WebCrypto here: open it at 127.0.0.1 or localhost, or through https.';return}
(async function(){
 var p=await crypto.subtle.generateKey({name:'ECDSA',namedCurve:'P-256'},false,['sign','verify']);
 var pub=H.hex(await crypto.subtle.exportKey('raw',p.publicKey));
 var r=await fetch('/login',{method:'POST',headers:{'Content-Type':'application/x-www-form-urlencoded'},body:new URLSearchParams({token:t,key:pub}).toString(),credentials:'omit',cache:'no-store'});
 var j=await r.json();
 if(!r.ok){m.textContent=(j.error&&j.error.message)||'This login link is unknown, used or expired. Run `hooks-app open` for a new one.';return}
 await H.keep({id:j.session,key:p.privateKey,daemon:j.daemon});
 m.textContent='Logged in.';
 location.replace('/');
})().catch(function(e){m.textContent='Could not log in: '+e})
})()"#;
    html(
        "hooks-app",
        maud::html! {
            h1 { "hooks-app" }
            p #m { "Logging in…" }
            script { (PreEscaped(AUTH_SCRIPT)) (PreEscaped(LOGIN)) }
        },
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
        Some(Status::Requeued(why)) => ("skipped", "back in the queue", Some(why)),
        Some(Status::Other(s)) => ("none", s.as_str(), None),
    };
    maud::html! {
        span class={ "chip " (class) } { (word) }
        @if let Some(why) = why { " " span.why { (why) } }
    }
}

/// A length of time from now, as "in 3m 20s" or "3m 20s ago"; this very second is "now",
/// so a run that started a moment ago never reads as one still to come.
fn span(secs: i64) -> String {
    if secs == 0 {
        return "now".to_owned();
    }
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

/// What a person is told when their text names no one conversation.
fn lookup_message(e: hooks_core::lookup::SessionLookup) -> String {
    use hooks_core::lookup::SessionLookup as L;
    match e {
        L::Invalid(e) => e.to_string(),
        L::Ambiguous(m) | L::Unknown(m) => m,
        L::Failed(e) => e.to_string(),
    }
}

/// Form errors to show next to their fields: (hook id, field) → rule.
pub type FieldErrors = BTreeMap<(String, String), String>;

pub async fn page(
    s: &HttpState,
    caller: &Caller,
    q: &[(String, String)],
    errors: Option<(&FieldErrors, &Value)>,
) -> Result<Response, ApiError> {
    let csrf = match caller {
        Caller::Page { csrf } => csrf.clone(),
        Caller::Token | Caller::Hook => String::new(),
    };
    let now = s.svc.now();
    let snap = s.store.snapshot().await?;
    // The chart's 30 days (and the table's newest runs among them), never the whole log.
    let runs = s
        .store
        .runs(&RunFilter {
            since: Some(now - time::Duration::days(30)),
            ..RunFilter::default()
        })
        .await?;
    let no_errors = FieldErrors::new();
    let (errs, given) = errors.map_or((&no_errors, &Value::Null), |(e, g)| (e, g));
    let asked = q
        .iter()
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.trim().to_owned())
        .filter(|a| !a.is_empty());
    let lookup = match &asked {
        None => None,
        Some(sid) => Some(match s.svc.find_session(sid).await {
            Err(hooks_core::lookup::SessionLookup::Failed(e)) => return Err(e.into()),
            Err(e) => Err(lookup_message(e)),
            Ok(sid) => {
                let report = s.svc.session_report(&sid).await?;
                // The hooks that followed it up already: theirs is a "run again".
                let came: Vec<HookId> = report.facts.state.stamps.keys().cloned().collect();
                Ok((sid, hooks_shapes::text::session_lines(&report), came))
            }
        }),
    };
    let version = version(s).await?;
    let paused = s.svc.paused().await?;
    // The agent of each conversation the page lists.
    let shown: Vec<SessionId> = snap
        .pending
        .iter()
        .take(200)
        .map(|p| p.session_id.clone())
        .chain(runs.iter().rev().take(50).map(|r| r.session_id.clone()))
        .collect();
    let agents = s.svc.agents_of(&shown).await?;
    let body = maud::html! {
        h1 { "hooks-app" }
        p.muted {
            "store " (s.backend.store_location()) " · "
            (count(snap.hooks.len(), "hook", "hooks")) " · "
            (snap.pending.len()) " pending · "
            (count(runs.iter().filter(|r| r.started()).count(), "run", "runs")) " in 30 days · this page follows the store · v"
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
                    (queue_row(p, now, agents.get(&p.session_id).map(String::as_str)))
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
                    (run_row(r, now, agents.get(&r.session_id).map(String::as_str)))
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
            Some(Ok((sid, lines, came))) => {
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
                            @if came.contains(&h.id) {
                                // Followed up once already: only a run again does anything.
                                input type="hidden" name="force" value="1";
                                button type="submit" name="run" value=(h.id)
                                    title="it followed this conversation up already: run it once more" { "Run " (h.id) " again" }
                            } @else {
                                button type="submit" name="run" value=(h.id) { "Run " (h.id) " now" }
                            }
                            " "
                        }
                    }
                }
            },
        }
        // Its forms and its polling (reload when the store changed, unless someone is
        // typing) carry the session from this origin's storage.
        script { (PreEscaped(AUTH_SCRIPT)) (PreEscaped(PAGE_SCRIPT)) }
    };
    let status = if errors.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond(
        status,
        "text/html; charset=utf-8",
        html_at("hooks-app", body, Some(&version)),
    ))
}

/// A hook's row and, below it, its edit form (open when the form was refused).
/// The agents the edit form offers; a hook scoped to another keeps its own in the list.
const AGENT_CHOICES: [&str; 3] = ["all", "claude", "codex"];

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
            .map(|c| format!(", cost ≤ {}", hooks_shapes::text::usd(c)))
            .unwrap_or_default()
    ) + if h.deliver == Delivery::Closed {
        ", only after the close"
    } else {
        ""
    } + &match &h.agent {
        AgentScope::All => String::new(),
        AgentScope::Only(a) => format!(", {a} conversations only"),
    } + if h.repeat == Repeat::EachTask {
        ", every task"
    } else {
        ""
    };
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
                        label {
                            "delivery"
                            select name="deliver" {
                                @for d in Delivery::ALL {
                                    option value=(d.as_str()) selected[d == h.deliver] {
                                        @match d {
                                            Delivery::Auto => "into the open conversation where it can",
                                            Delivery::Closed => "only after the close",
                                        }
                                    }
                                }
                            }
                            (err("deliver"))
                        }
                        label {
                            "follows up"
                            select name="repeat" {
                                @for r in Repeat::ALL {
                                    option value=(r.as_str()) selected[r == h.repeat] {
                                        @match r {
                                            Repeat::Once => "a conversation once",
                                            Repeat::EachTask => "every task of a conversation",
                                        }
                                    }
                                }
                            }
                            (err("repeat"))
                        }
                        label {
                            "agent"
                            select name="agent" {
                                @for a in AGENT_CHOICES.iter().copied().chain(
                                    (!AGENT_CHOICES.contains(&h.agent.as_str())).then_some(h.agent.as_str())
                                ) {
                                    option value=(a) selected[a == h.agent.as_str()] {
                                        @match a {
                                            "all" => "every agent's conversations",
                                            "claude" => "Claude Code's only",
                                            "codex" => "Codex's only",
                                            other => { (other) " only" }
                                        }
                                    }
                                }
                            }
                            (err("agent"))
                        }
                        button type="submit" { "save" }
                    }
                }
            }
        }
    }
}

fn queue_row(p: &PendingEntry, now: stamp::Timestamp, agent: Option<&str>) -> Markup {
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
        (_, Some(w)) if w.waits_for_close() => {
            format!("waits until the conversation is closed: {}", w.reason)
        }
        (_, Some(w)) => format!("waits: {}", w.reason),
        _ if p.due_at.is_due(now) => "due".into(),
        _ => "waits for its delay".into(),
    };
    maud::html! {
        tr {
            td data-label="hook" { (p.hook_id) }
            td data-label="session" {
                (session_link(p.session_id.as_str()))
                @if let Some(a) = agent { " " span.muted data-agent { (a) } }
            }
            td data-label="due" { (due) }
            td data-label="retries" { (p.retries) }
            td data-label="state" { (state) }
        }
    }
}

fn run_row(r: &RunRecord, now: stamp::Timestamp, agent: Option<&str>) -> Markup {
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
            td data-label="session" {
                (session_link(r.session_id.as_str()))
                @if let Some(a) = agent { " " span.muted data-agent { (a) } }
            }
            td data-label="status" {
                (status)
                @if r.delivered { " " span.why { "in the open TUI" } }
            }
            td data-label="completed" {
                (match o.completed { Some(true) => "yes", Some(false) => "no", None => "–" })
            }
            td.num data-label="took" { (r.took().map_or(dash.clone(), |d| secs(d.whole_milliseconds()))) }
            td.num data-label="API time" { (o.duration_ms.map_or(dash.clone(), |d| secs(i128::from(d)))) }
            td.num data-label="cost" { (o.cost_usd.map_or(dash.clone(), hooks_shapes::text::usd)) }
            td.num data-label="tokens" { (tokens.map_or(dash, |t| t.to_string())) }
        }
        // The follow-up's reply, one click away and the table's whole width: nobody has
        // to resume the conversation to read what it did.
        @if let Some(reply) = &o.result_text {
            tr.reply-row {
                td colspan="9" {
                    details.reply { summary { "reply" } pre { (reply) } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reads_as_past_future_or_now() {
        assert_eq!(span(-200), "3m 20s ago");
        assert_eq!(span(90_000), "in 1d 1h");
        assert_eq!(span(0), "now");
    }

    #[test]
    fn plurals_agree() {
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
