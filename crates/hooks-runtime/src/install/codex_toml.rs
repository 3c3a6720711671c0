//! Codex's hooks in `$CODEX_HOME/config.toml`, for a person who keeps them there
//! (`[[hooks.Stop]]` tables, each with `[[hooks.Stop.hooks]]` handlers) rather than in
//! `hooks.json`: Codex loads both but warns when one layer has the two, so `install` adds
//! to the one the person has.
//!
//! `install` appends one block of its own at the end of the file, between two comment
//! lines, and `uninstall` takes exactly that block out again: whatever else the person or
//! Codex writes to the file (Codex records a trusted hook there) is left as it is, and a
//! file nothing else touched comes back byte for byte. The file is parsed (`toml_edit`)
//! before and after: an edit that does not parse, or does not hold exactly the entries
//! meant, writes nothing.

use serde_json::{Value, json};
use toml_edit::{DocumentMut, Item};

/// The line that opens the block of `program` (this binary's file name).
fn begin(program: &str) -> String {
    format!(
        "# {program}: begin (added by `{program} install --agent codex`; `{program} uninstall --agent codex` takes it out)"
    )
}

/// The line that closes it.
fn end(program: &str) -> String {
    format!("# {program}: end")
}

/// Parses `text`, saying where it is not TOML.
fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>().map_err(|e| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("not TOML")
            .to_owned()
    })
}

/// Every handler of every event in `doc`'s `hooks` table (its trust records, `state`, left
/// out), as Claude Code's JSON shape says a handler, with where it sits:
/// `(event, group, handler, {"type", "command"})`, the indexes Codex's trust records name.
fn handlers(doc: &DocumentMut) -> Vec<(String, usize, usize, Value)> {
    let Some(hooks) = doc.get("hooks").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in hooks.iter().filter(|(k, _)| *k != "state") {
        let mut add = |g: usize, i: usize, h: &dyn toml_edit::TableLike| {
            let field = |k: &str| h.get(k).and_then(Item::as_str).unwrap_or_default();
            out.push((
                event.to_owned(),
                g,
                i,
                json!({"type": field("type"), "command": field("command")}),
            ));
        };
        // `[[hooks.Stop]]` tables, or an inline `Stop = [{ hooks = [ … ] }]`.
        let group_tables: Vec<&dyn toml_edit::TableLike> = match groups {
            Item::ArrayOfTables(a) => a.iter().map(|t| t as &dyn toml_edit::TableLike).collect(),
            Item::Value(toml_edit::Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_inline_table())
                .map(|t| t as &dyn toml_edit::TableLike)
                .collect(),
            _ => Vec::new(),
        };
        for (gi, g) in group_tables.into_iter().enumerate() {
            match g.get("hooks") {
                Some(Item::ArrayOfTables(a)) => {
                    a.iter().enumerate().for_each(|(i, t)| add(gi, i, t));
                }
                Some(Item::Value(toml_edit::Value::Array(a))) => a
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((i, v.as_inline_table()?)))
                    .for_each(|(i, t)| add(gi, i, t)),
                _ => {}
            }
        }
    }
    out
}

/// Whether `text` (a `config.toml`) keeps hooks of its own: a `hooks` table with an event
/// in it, not only Codex's trust records.
pub fn has_hooks(text: &str) -> bool {
    parse(text).is_ok_and(|doc| {
        doc.get("hooks")
            .and_then(Item::as_table_like)
            .is_some_and(|h| h.iter().any(|(k, _)| k != "state"))
    })
}

/// The handlers of `program` in `text`: event, group index, handler index.
pub fn ours(text: &str, program: &str) -> Vec<(String, usize, usize)> {
    let Ok(doc) = parse(text) else {
        return Vec::new();
    };
    handlers(&doc)
        .into_iter()
        .filter(|(.., h)| hooks_claude_code::settings::is_ours(h, program))
        .map(|(e, g, i, _)| (e, g, i))
        .collect()
}

/// Whether `config` (config.toml's text) records a person's trust of the handler Codex
/// names `key` (`<file>:<event>:<group>:<handler>`, the event in snake case): a
/// `trusted_hash` under `[hooks.state."<key>"]`. Codex checks the hash against the handler
/// as it is; a changed command asks for trust again, which this does not see.
pub fn trusted(config: &str, key: &str) -> bool {
    parse(config).is_ok_and(|doc| {
        doc.get("hooks")
            .and_then(|h| h.get("state"))
            .and_then(|st| st.get(key))
            .and_then(|k| k.get("trusted_hash"))
            .and_then(Item::as_str)
            .is_some_and(|h| !h.is_empty())
    })
}

/// The events whose handlers include those of `program`, in `text`.
pub fn installed_events(text: &str, program: &str) -> Vec<String> {
    let mut events: Vec<String> = ours(text, program).into_iter().map(|(e, ..)| e).collect();
    events.dedup();
    events
}

/// `text` with the block of `program` taken out, and whether there was one.
pub fn strip(text: &str, program: &str) -> (String, bool) {
    let (open, close) = (begin(program), end(program));
    let Some(begin) = text.find(&format!("\n{open}\n")) else {
        return (text.to_owned(), false);
    };
    let Some(end) = text[begin..]
        .find(&format!("\n{close}\n"))
        .map(|e| begin + e + close.len() + 2)
    else {
        return (text.to_owned(), false);
    };
    (format!("{}{}", &text[..begin], &text[end..]), true)
}

/// `text` with this app's block for `wanted` (event, command) appended, checked: it
/// parses, and this app's handlers are those of `wanted`, each once. A file that keeps an
/// event's hooks inline (`Stop = [ … ]`) cannot take the block; the error says so.
pub fn with_block(text: &str, wanted: &[(&str, String)], program: &str) -> Result<String, String> {
    parse(text).map_err(|e| format!("it is not valid TOML ({e})"))?;
    let (mut out, _) = strip(text, program);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&begin(program));
    out.push('\n');
    for (event, command) in wanted {
        out.push_str(&format!(
            "[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {}\ntimeout = 10\n",
            toml_edit::Value::from(command.as_str())
        ));
    }
    out.push_str(&end(program));
    out.push('\n');
    let doc = parse(&out).map_err(|e| {
        format!(
            "its hooks cannot take {program}'s entries ({e}): an event written inline \
             (`Stop = [ … ]`) must become `[[hooks.Stop]]` tables, or the entries go in hooks.json"
        )
    })?;
    let mut ours: Vec<(String, Value)> = handlers(&doc)
        .into_iter()
        .filter(|(.., h)| hooks_claude_code::settings::is_ours(h, program))
        .map(|(e, _, _, h)| (e, h))
        .collect();
    ours.sort_by(|a, b| a.0.cmp(&b.0));
    let mut meant: Vec<(String, Value)> = wanted
        .iter()
        .map(|(e, c)| ((*e).to_owned(), json!({"type": "command", "command": c})))
        .collect();
    meant.sort_by(|a, b| a.0.cmp(&b.0));
    if ours != meant {
        return Err("internal: the edited file does not hold exactly the entries meant".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "hooks-app";

    const MINE: &str = "model = \"gpt-5.5\"\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"true\"\n";

    fn cmd() -> String {
        "/usr/bin/hooks-app --data-dir '/x y' claude-hook".to_owned()
    }

    #[test]
    fn the_block_goes_in_and_comes_out_byte_for_byte() {
        for original in [MINE, MINE.trim_end(), "[hooks]\n"] {
            let with = with_block(original, &[("Stop", cmd()), ("SessionEnd", cmd())], P).unwrap();
            assert!(with.starts_with(original), "{with}");
            let mut events = installed_events(&with, P);
            events.sort();
            assert_eq!(events, ["SessionEnd", "Stop"]);
            // Where Codex's trust records name them: after the person's own groups.
            let stop = ours(&with, P).into_iter().find(|(e, ..)| e == "Stop");
            assert_eq!(stop, Some(("Stop".to_owned(), 0, 0)));
            assert!(installed_events(original, P).is_empty());
            let expect = if original.ends_with('\n') {
                original.to_owned()
            } else {
                format!("{original}\n")
            };
            let (back, found) = strip(&with, P);
            assert!(found);
            assert_eq!(back, expect);
            // Codex writes after it (a trust record); taking the block out keeps that.
            let trust =
                "\n[hooks.state.\"/c/config.toml:stop:1:0\"]\ntrusted_hash = \"sha256:x\"\n";
            let (back, found) = strip(&format!("{with}{trust}"), P);
            assert!(found);
            assert_eq!(back, format!("{expect}{trust}"));
        }
    }

    #[test]
    fn our_entry_is_found_where_codex_numbers_it_and_its_trust_by_that_key() {
        let own_stop =
            "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"true\"\n";
        let with = with_block(own_stop, &[("Stop", cmd())], P).unwrap();
        assert_eq!(ours(&with, P), [("Stop".to_owned(), 1, 0)]);
        let config = "[hooks.state.\"/c/config.toml:stop:0:0\"]\ntrusted_hash = \"sha256:a\"\n";
        assert!(trusted(config, "/c/config.toml:stop:0:0"));
        assert!(
            !trusted(config, "/c/config.toml:stop:1:0"),
            "the person's own, not ours"
        );
        assert!(!trusted("x = = y", "/c/config.toml:stop:0:0"));
    }

    #[test]
    fn another_programs_block_is_left_where_it_is() {
        let theirs = with_block(MINE, &[("Stop", cmd())], P).unwrap();
        let team = "/opt/script-agent-hooks claude-hook".to_owned();
        let both = with_block(&theirs, &[("Stop", team)], "script-agent-hooks").unwrap();
        assert_eq!(installed_events(&both, "script-agent-hooks"), ["Stop"]);
        assert_eq!(ours(&both, P), [("Stop".to_owned(), 0, 0)]);
        let (back, found) = strip(&both, "script-agent-hooks");
        assert!(found);
        assert_eq!(back, theirs, "hooks-app's block is kept as it was");
    }

    #[test]
    fn hooks_of_the_persons_own_are_told_from_trust_records() {
        assert!(has_hooks(MINE));
        assert!(!has_hooks(
            "[hooks.state.\"/c/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:x\"\n"
        ));
        assert!(!has_hooks("model = \"x\"\n"));
        assert!(!has_hooks("not = toml = at all"));
    }

    #[test]
    fn an_inline_event_or_a_bad_file_is_refused_and_nothing_is_made() {
        let inline = "[hooks]\nStop = [{ hooks = [{ type = \"command\", command = \"true\" }] }]\n";
        assert!(has_hooks(inline));
        let e = with_block(inline, &[("Stop", cmd())], P).unwrap_err();
        assert!(e.contains("[[hooks.Stop]]"), "{e}");
        let e = with_block("a = = b", &[("Stop", cmd())], P).unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn a_command_with_quotes_and_backslashes_is_written_as_a_toml_string() {
        let c = "/opt/it's \"here\"\\bin/hooks-app claude-hook".to_owned();
        let with = with_block(MINE, &[("Stop", c.clone())], P).unwrap();
        let doc = parse(&with).unwrap();
        assert!(
            handlers(&doc)
                .iter()
                .any(|(.., h)| h["command"] == c.as_str())
        );
    }
}
