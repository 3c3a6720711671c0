//! Claude Code's `settings.json`: this app's hook handlers in it, recognised, added and
//! taken out as text (through [`crate::jsonedit`]) so that nothing else in the file changes.

use serde_json::{Map, Value, json};

use crate::jsonedit;

/// An edit of a settings text that went wrong: the text is left as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError(pub String);

impl EditError {
    fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EditError {}

type Result<T> = std::result::Result<T, EditError>;

/// Seconds Claude gives the hook; it returns in milliseconds.
pub const HOOK_TIMEOUT: u64 = 30;

/// The header name an `http` handler of this app carries the follow-up guard in.
pub const FOLLOW_UP_HEADER: &str = "X-Hooks-App-Follow-Up";

/// Whether a hook handler is one of this app's, installed by the binary named `program`
/// (its file name: `hooks-app`, or a team's own build): a command handler names that
/// program as a word or a path's last part, followed by `claude-hook`; an `http` handler
/// carries [`FOLLOW_UP_HEADER`]. Another binary's entries, even another build of this app,
/// are not ours: each install, uninstall and doctor sees only its own.
pub fn is_ours(handler: &Value, program: &str) -> bool {
    if handler.get("type").and_then(Value::as_str) == Some("http") {
        return handler
            .get("headers")
            .and_then(Value::as_object)
            .is_some_and(|h| h.contains_key(FOLLOW_UP_HEADER));
    }
    let Some(cmd) = handler.get("command").and_then(Value::as_str) else {
        return false;
    };
    // `/path/hooks-app … claude-hook`, or the portable `… exec hooks-app claude-hook …`.
    let names_us = cmd.split_whitespace().any(|w| {
        let w = w.trim_matches(['\'', '"']);
        w == program || w.rsplit_once('/').is_some_and(|(_, last)| last == program)
    });
    names_us && cmd.contains(" claude-hook")
}

/// Removes `program`'s handlers everywhere; drops groups and events left empty.
pub fn strip_ours(settings: &mut Map<String, Value>, program: &str) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    for ev in events {
        let Some(Value::Array(groups)) = hooks.get_mut(&ev) else {
            continue;
        };
        let before = groups.len();
        for g in groups.iter_mut() {
            if let Some(Value::Array(hs)) = g.get_mut("hooks") {
                hs.retain(|h| !is_ours(h, program));
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|a| !a.is_empty())
        });
        if groups.is_empty() && before > 0 {
            hooks.shift_remove(&ev);
        }
    }
}

pub fn add(settings: &mut Map<String, Value>, event: &str, handler: Value) {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else { return };
    let groups = hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(groups) = groups {
        groups.push(group(&handler));
    }
}

/// Where the handlers of `program` are in a settings text: (event, group, handler, and
/// whether every handler of that group is ours).
pub fn ours_in(
    text: &str,
    root: &jsonedit::Node,
    program: &str,
) -> Option<(String, usize, usize, bool)> {
    let value = |n: &jsonedit::Node| -> Value {
        serde_json::from_str(&text[n.start..n.end]).unwrap_or(Value::Null)
    };
    for ev in root.member("hooks")?.members() {
        for (gi, g) in ev.value.items().iter().enumerate() {
            let Some(handlers) = g.member("hooks") else {
                continue;
            };
            let mine: Vec<bool> = handlers
                .items()
                .iter()
                .map(|h| is_ours(&value(h), program))
                .collect();
            if let Some(hi) = mine.iter().position(|m| *m) {
                return Some((ev.key.clone(), gi, hi, mine.iter().all(|m| *m)));
            }
        }
    }
    None
}

pub fn reparse(text: &str) -> Result<jsonedit::Node> {
    jsonedit::parse(text).ok_or_else(|| {
        EditError::new("internal: an edit of the settings text broke it; nothing was written")
    })
}

/// The text without `program`'s handlers: a group that held only ours goes whole. Returns
/// the events whose lists this emptied.
pub fn strip_text(mut text: String, program: &str) -> Result<(String, Vec<String>)> {
    let mut emptied = Vec::new();
    loop {
        let root = reparse(&text)?;
        let Some((ev, gi, hi, whole)) = ours_in(&text, &root, program) else {
            return Ok((text, emptied));
        };
        let Some(groups) = root.member("hooks").and_then(|h| h.member(&ev)) else {
            return Ok((text, emptied));
        };
        text = if whole {
            if groups.items().len() == 1 {
                emptied.push(ev.clone());
            }
            jsonedit::remove_item(&text, groups, gi)
        } else {
            let handlers = groups.items()[gi]
                .member("hooks")
                .ok_or_else(|| EditError::new("internal: a group lost its hooks"))?;
            jsonedit::remove_item(&text, handlers, hi)
        };
    }
}

/// The text with a group running `command` added last under `hooks.<event>`, and what
/// uninstall needs to undo it: the containers created (`hooks`, `hooks.<Event>`), and for an
/// empty container it went into whose brackets held whitespace, `inner:<path>=<whitespace>`.
pub fn add_text(
    text: &str,
    st: &jsonedit::Style,
    event: &str,
    handler: &Value,
) -> Result<(String, Vec<String>)> {
    let root = reparse(text)?;
    let g = group(handler);
    let was_empty = |path: &str, n: &jsonedit::Node| -> Vec<String> {
        let ws = jsonedit::inner(text, n);
        if n.is_empty_container() && !ws.is_empty() {
            vec![format!("inner:{path}={ws}")]
        } else {
            vec![]
        }
    };
    Ok(match root.member("hooks") {
        None => {
            let mut c = was_empty("", &root);
            c.extend(["hooks".into(), format!("hooks.{event}")]);
            (
                jsonedit::push_member(text, &root, "hooks", &json!({ event: [g] }), st),
                c,
            )
        }
        Some(hooks) => match hooks.member(event) {
            None => {
                let mut c = was_empty("hooks", hooks);
                c.push(format!("hooks.{event}"));
                (
                    jsonedit::push_member(text, hooks, event, &json!([g]), st),
                    c,
                )
            }
            Some(groups) => (
                jsonedit::push_item(text, groups, &g, st),
                was_empty(&format!("hooks.{event}"), groups),
            ),
        },
    })
}

pub fn group(handler: &Value) -> Value {
    json!({ "hooks": [handler] })
}

pub fn command_handler(command: String) -> Value {
    json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT})
}

/// An `http` handler posting to the daemon: the token and the follow-up guard travel as
/// headers Claude Code expands from its environment (`token_env`, `follow_up_env`), never
/// written into the file.
pub fn http_handler(base: &str, on_end: bool, token_env: &str, follow_up_env: &str) -> Value {
    let url = format!(
        "{}/api/v1/events{}",
        base.trim_end_matches('/'),
        if on_end { "?on=session-end" } else { "" }
    );
    json!({
        "type": "http",
        "url": url,
        "headers": {
            "Authorization": format!("Bearer ${token_env}"),
            FOLLOW_UP_HEADER: format!("${follow_up_env}"),
        },
        "allowedEnvVars": [token_env, follow_up_env],
        "timeout": HOOK_TIMEOUT,
    })
}

/// Whether two settings hold the same set of `program`'s handlers per event, with
/// everything else equal.
pub fn same_entries(a: &Map<String, Value>, b: &Map<String, Value>, program: &str) -> bool {
    let ours = |m: &Map<String, Value>| -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(Value::Object(h)) = m.get("hooks") {
            for (ev, groups) in h {
                for g in groups.as_array().into_iter().flatten() {
                    for hd in g
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if is_ours(hd, program) {
                            v.push((ev.clone(), hd.to_string()));
                        }
                    }
                }
            }
        }
        v.sort();
        v
    };
    let mut sa = a.clone();
    let mut sb = b.clone();
    strip_ours(&mut sa, program);
    strip_ours(&mut sb, program);
    sa == sb && ours(a) == ours(b)
}

/// The text without `hooks.<event>` if that list is empty.
pub fn drop_if_empty(text: String, event: &str) -> Result<String> {
    let root = reparse(&text)?;
    Ok(match root.member("hooks") {
        Some(hooks)
            if hooks
                .member(event)
                .is_some_and(jsonedit::Node::is_empty_container) =>
        {
            jsonedit::remove_member(&text, hooks, event)
        }
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(c: &str) -> Value {
        command_handler(c.to_owned())
    }

    #[test]
    fn an_entry_is_ours_only_when_it_names_this_program() {
        let app = command("/usr/local/bin/hooks-app claude-hook");
        let team = command("'/opt/team bin/script-agent-hooks' --data-dir /d claude-hook");
        let portable = command(
            "command -v script-agent-hooks >/dev/null 2>&1 && exec script-agent-hooks claude-hook || cat >/dev/null",
        );
        assert!(is_ours(&app, "hooks-app"));
        assert!(!is_ours(&app, "script-agent-hooks"));
        assert!(is_ours(&team, "script-agent-hooks"));
        assert!(!is_ours(&team, "hooks-app"));
        assert!(is_ours(&portable, "script-agent-hooks"));
        // A longer name that ends in the program is another program.
        assert!(!is_ours(
            &command("/bin/my-hooks-app claude-hook"),
            "hooks-app"
        ));
        // Naming the program without the hook entry point is a person's own command.
        assert!(!is_ours(&command("hooks-app status"), "hooks-app"));
    }

    #[test]
    fn stripping_one_programs_entries_keeps_anothers() {
        let text = r#"{"hooks": {"Stop": [
  {"hooks": [{"type": "command", "command": "/usr/local/bin/hooks-app claude-hook"}]},
  {"hooks": [{"type": "command", "command": "/opt/script-agent-hooks claude-hook"}]}
]}}"#
            .to_owned();
        let (out, emptied) = strip_text(text, "script-agent-hooks").unwrap();
        assert!(emptied.is_empty(), "{emptied:?}");
        assert!(
            out.contains("/usr/local/bin/hooks-app claude-hook"),
            "{out}"
        );
        assert!(!out.contains("script-agent-hooks"), "{out}");
        let (out, emptied) = strip_text(out, "hooks-app").unwrap();
        assert_eq!(emptied, ["Stop"], "{out}");
    }
}
