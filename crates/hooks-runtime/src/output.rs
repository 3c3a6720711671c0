//! How commands print: tables and pretty JSON, and every human-readable line through
//! [`safe`], so that text from outside (a file's name, a folder, another program's
//! message) cannot move the cursor, erase or hide what is printed. The documents and the
//! forms of money and time they print come from `hooks-shapes`. A leaf.

use std::borrow::Cow;

use serde_json::Value;

/// `text` with every control character but newline and tab escaped (`ESC` becomes
/// `\u{1b}`), and the invisible characters that reorder a line (bidirectional overrides
/// and isolates) too. JSON output needs none of this: serde escapes control characters.
pub fn safe(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if unsafe_char(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// Prints one human-readable line (or several), made [`safe`] and [`named`].
pub fn say_line(text: &str) {
    println!("{}", safe(&named(text)));
}

/// The file name of the running binary: `hooks-app`, or a team's own build of it
/// (`hooks-app` where it cannot be told).
pub fn program() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "hooks-app".to_owned())
    })
}

/// `text` with the commands it tells the person to run naming this binary as they call
/// it: messages are written with `` `hooks-app …` `` and `run hooks-app …`, and a team's
/// build (`script-agent-hooks`) says `` `script-agent-hooks …` ``. Paths and other mentions
/// of the name (`~/.local/share/hooks-app`) are left as they are.
pub fn named(text: &str) -> Cow<'_, str> {
    named_as(text, program())
}

fn named_as<'a>(text: &'a str, program: &str) -> Cow<'a, str> {
    if program == "hooks-app" || !text.contains("hooks-app") {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.replace("`hooks-app", &format!("`{program}"))
            .replace("run hooks-app ", &format!("run {program} ")),
    )
}

/// `println!` for human-readable output: the text is made `safe`.
#[doc(hidden)]
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say_line(&format!($($arg)*))
    };
}

pub fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into())
    );
}

/// Prints rows as a table with aligned columns.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        say_line(s.trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::{named_as, safe};

    #[test]
    fn control_characters_from_outside_are_shown_escaped() {
        assert_eq!(safe("plain\ttext\n"), "plain\ttext\n");
        let hostile = "z\u{1b}[2K\u{1b}[1A\u{1b}[8m.md\u{202e}gpj";
        let shown = safe(hostile);
        assert!(
            !shown.chars().any(|c| c == '\u{1b}' || c == '\u{202e}'),
            "{shown}"
        );
        assert_eq!(shown, "z\\u{1b}[2K\\u{1b}[1A\\u{1b}[8m.md\\u{202e}gpj");
    }

    #[test]
    fn the_commands_a_message_gives_name_this_binary() {
        let m = "no hooks-app data in /home/a/.local/share/hooks-app (run hooks-app init); \
                 `hooks-app doctor` checks it";
        assert_eq!(
            named_as(m, "team-hooks"),
            "no hooks-app data in /home/a/.local/share/hooks-app (run team-hooks init); \
             `team-hooks doctor` checks it"
        );
        assert_eq!(named_as(m, "hooks-app"), m);
    }
}
