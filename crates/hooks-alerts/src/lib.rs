//! Alerts: when a follow-up fails (or, as chosen, is skipped, stopped by the budget, or
//! waits on a limit), a JSON POST to a URL (ntfy and Slack incoming webhooks both take its
//! `text`) and, if asked, the desktop's notifier. Kept in `<data-dir>/alerts.json` (0600:
//! a webhook URL is a secret). An alert that cannot be delivered is logged, by the URL's
//! host only, and never holds up or fails the follow-up.

use std::path::Path;
use std::time::Duration;

use hooks_core::service::{FireAction, FireReport};
use hooks_core::{Status, WaitKind};
use serde_json::{Value, json};

/// The file the alert settings live in.
pub const ALERTS_FILE: &str = "alerts.json";
/// Writes the settings (0600: a webhook URL is a secret), whole, by rename.
pub fn save(data_dir: &Path, a: &Alerts) -> Result<(), String> {
    let path = data_dir.join(ALERTS_FILE);
    hooks_platform::files::write_private(&path, &format!("{}\n", a.json(false)))
        .map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// How long one POST may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// What may be alerted on.
pub const KINDS: [&str; 4] = ["failure", "skip", "budget", "limit"];

/// Where and when to alert.
#[derive(Debug, Clone, PartialEq)]
pub struct Alerts {
    pub url: Option<String>,
    pub on: Vec<String>,
    pub desktop: bool,
}

impl Alerts {
    /// As set, or `None` when no alerts are set (or the file is unreadable: said on stderr
    /// by `alerts show`, logged by the daemon).
    pub fn read(data_dir: &Path) -> Result<Option<Self>, String> {
        let path = data_dir.join(ALERTS_FILE);
        let bytes = match hooks_platform::read_regular(
            &path,
            hooks_platform::ReadLimit::bytes(1024 * 1024),
        ) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(Self {
            url: v["url"].as_str().map(str::to_owned),
            on: v["on"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_else(|| vec!["failure".into()]),
            desktop: v["desktop"].as_bool().unwrap_or(false),
        }))
    }

    /// As `alerts.json` keeps it, or (`redact`) as it may be shown.
    pub fn json(&self, redact: bool) -> Value {
        json!({
            "url": self.url.as_deref().map(|u| if redact { redacted(u) } else { u.to_owned() }),
            "on": self.on,
            "desktop": self.desktop,
        })
    }
}

/// The URL as it may be shown: its scheme and host, the rest (a token, often) hidden.
pub fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            let host = host.rsplit('@').next().unwrap_or(host);
            format!("{scheme}://{host}/…")
        }
        None => "…".into(),
    }
}

/// Checks a URL given for alerts: http or https, with a host. The error is the rule.
pub fn check_url(url: &str) -> Result<String, String> {
    let url = url.trim();
    let ok = (url.starts_with("https://") || url.starts_with("http://"))
        && url
            .split_once("://")
            .is_some_and(|(_, r)| !r.split(['/', '?', '#']).next().unwrap_or("").is_empty());
    if !ok {
        return Err(
            "url: must be an http:// or https:// URL with a host (or - to read it from stdin)"
                .to_owned(),
        );
    }
    Ok(url.to_owned())
}

/// What an ended follow-up alerts on, if anything: (kind, status text).
pub fn kind_of(r: &FireReport) -> Option<(&'static str, String)> {
    match &r.action {
        FireAction::Ran(run) => match run.outcome.status() {
            s @ Status::Error(_) => Some(("failure", s.to_string())),
            _ => None,
        },
        FireAction::Recovered(s @ Status::Error(_)) => Some(("failure", s.to_string())),
        FireAction::Finished(s @ Status::Error(_)) => Some(("failure", s.to_string())),
        FireAction::Finished(s @ Status::Skipped(_)) => Some(("skip", s.to_string())),
        FireAction::Waiting { waiting, .. } if waiting.kind == WaitKind::Budget => {
            Some(("budget", format!("waiting: {}", waiting.reason)))
        }
        FireAction::Limited { waiting, .. } => {
            Some(("limit", format!("waiting: {}", waiting.reason)))
        }
        _ => None,
    }
}

/// The alert's body: what ntfy and Slack show (`text`), and the facts for anything else.
pub fn body(
    r: &FireReport,
    kind: &str,
    status: &str,
    cwd: Option<&str>,
    page: Option<&str>,
) -> Value {
    let (hook, session) = (r.key.hook_id.as_str(), r.key.session_id.as_str());
    let cost = match &r.action {
        FireAction::Ran(run) | FireAction::Limited { run, .. } => run.outcome.cost_usd,
        _ => None,
    };
    let link = page.map(|p| format!("{p}/?session={session}#lookup"));
    let mut text = format!("hooks-app: {hook} on {session}: {status}");
    if let Some(l) = &link {
        text.push_str(&format!(" ({l})"));
    }
    json!({
        "text": text,
        "kind": kind,
        "hook": hook,
        "session": session,
        "cwd": cwd,
        "status": status,
        "costUsd": cost,
        "link": link,
    })
}

/// POSTs `body` to `url`: `Err` says why it was not delivered (naming the host only).
pub fn post(url: &str, body: &Value) -> Result<u16, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let host = redacted(url);
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    match agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(&bytes[..])
    {
        Ok(r) if r.status().is_success() => Ok(r.status().as_u16()),
        Ok(r) => Err(format!("{host} answered {}", r.status().as_u16())),
        Err(e) => Err(format!(
            "could not reach {host}: {}",
            first_words(&e.to_string())
        )),
    }
}

/// An error's text without a URL it may quote.
fn first_words(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| !w.contains("://"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Shows `text` with the desktop's notifier, where there is one (best effort).
pub fn desktop(title: &str, text: &str) -> Result<(), String> {
    let mut cmd = if cfg!(target_os = "macos") {
        let mut c = std::process::Command::new("osascript");
        // The text goes as arguments to the script, never into its source.
        c.args([
            "-e",
            "on run argv\ndisplay notification (item 2 of argv) with title (item 1 of argv)\nend run",
            title,
            text,
        ]);
        c
    } else {
        let mut c = std::process::Command::new("notify-send");
        c.args(["--", title, text]);
        c
    };
    match cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the desktop notifier failed ({s})")),
        Err(e) => Err(format!("no desktop notifier: {e}")),
    }
}

/// Sends what `alerts` asks for about `report`; every failure is a line for the log.
pub fn send(
    alerts: &Alerts,
    report: &FireReport,
    cwd: Option<&str>,
    page: Option<&str>,
) -> Vec<String> {
    let Some((kind, status)) = kind_of(report) else {
        return Vec::new();
    };
    if !alerts.on.iter().any(|k| k == kind) {
        return Vec::new();
    }
    let b = body(report, kind, &status, cwd, page);
    let mut problems = Vec::new();
    if let Some(url) = &alerts.url
        && let Err(e) = post(url, &b)
    {
        problems.push(format!("alert not delivered: {e}"));
    }
    if alerts.desktop
        && let Err(e) = desktop("hooks-app", b["text"].as_str().unwrap_or(""))
    {
        problems.push(format!("desktop alert not shown: {e}"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_by_its_host_only() {
        assert_eq!(
            redacted("https://hooks.slack.com/services/T0/B0/SECRET"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(
            redacted("http://user:pw@127.0.0.1:9/x?t=1"),
            "http://127.0.0.1:9/…"
        );
        assert!(check_url("ftp://x/y").is_err());
        assert!(check_url("https:///nohost").is_err());
        assert_eq!(
            check_url(" https://ntfy.sh/topic \n").unwrap(),
            "https://ntfy.sh/topic"
        );
    }
}
