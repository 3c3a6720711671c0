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

/// The narrowest a column is cut to, so each still says something.
const NARROWEST: usize = 12;

/// Prints rows as a table with aligned columns. On a terminal the table fits its width:
/// the widest cells are cut (with `…`) and a last line says how to see them whole; piped
/// output keeps every cell whole, for the programs that read it.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let (lines, cut) = table_lines(header, rows, hooks_platform::terminal::stdout_columns());
    for l in &lines {
        say_line(l);
    }
    if cut {
        say_line(
            "(cells cut to fit the terminal: --json, or the same command piped, shows them whole)",
        );
    }
}

/// A table's lines, each column as wide as its widest cell or, with `width`, as wide as
/// fits: the widest columns are brought down to one width until the table fits (never
/// under [`NARROWEST`]), a longer cell cut with `…`. Also whether a cell was cut.
fn table_lines(header: &[&str], rows: &[Vec<String>], width: Option<usize>) -> (Vec<String>, bool) {
    let len = |s: &str| s.chars().count();
    let mut w: Vec<usize> = header.iter().map(|h| len(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(len(c));
        }
    }
    if let Some(width) = width {
        let gaps = 2 * w.len().saturating_sub(1);
        let total = |cap: usize| w.iter().map(|&x| x.min(cap)).sum::<usize>() + gaps;
        let widest = w.iter().copied().max().unwrap_or(0);
        if total(widest) > width {
            let mut cap = widest;
            while cap > NARROWEST && total(cap) > width {
                cap -= 1;
            }
            for x in &mut w {
                *x = (*x).min(cap);
            }
        }
    }
    let mut cut = false;
    let mut fit = |c: &str, width: usize| -> String {
        if len(c) <= width {
            return c.to_owned();
        }
        cut = true;
        let mut s: String = c.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    };
    let mut lines = Vec::new();
    let mut line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let c = fit(c, w[i]);
            if i + 1 == cells.len() {
                s.push_str(&c);
            } else {
                s.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        lines.push(s.trim_end().to_owned());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
    (lines, cut)
}

#[cfg(test)]
mod tests {
    use super::{named_as, safe, table_lines};

    #[test]
    fn a_table_fits_the_terminal_by_cutting_its_widest_cells() {
        let long = "waiting: the conversation is open in the TUI with no way in, so it is resumed once it is closed (for at most 30 minutes)";
        let rows = vec![
            vec!["post-task".to_owned(), "s-1".to_owned(), long.to_owned()],
            vec![
                "other".to_owned(),
                "s-22".to_owned(),
                "due in 5s".to_owned(),
            ],
        ];
        let (whole, cut) = table_lines(&["HOOK", "SESSION", "STATE"], &rows, None);
        assert!(
            !cut && whole[1].ends_with(long),
            "piped: whole cells: {whole:?}"
        );
        let (fits, cut) = table_lines(&["HOOK", "SESSION", "STATE"], &rows, Some(60));
        assert!(cut, "{fits:?}");
        for l in &fits {
            assert!(l.chars().count() <= 60, "fits in 60 columns: {l:?}");
        }
        assert!(
            fits[1].starts_with("post-task  s-1      waiting: the conv") && fits[1].ends_with('…'),
            "{fits:?}"
        );
        assert_eq!(
            fits[2], "other      s-22     due in 5s",
            "short cells stay whole"
        );
        // Narrower than every column at its narrowest: each keeps twelve characters.
        let (narrow, _) = table_lines(&["HOOK", "SESSION", "STATE"], &rows, Some(10));
        assert_eq!(narrow[1], "post-task  s-1      waiting: th…");
    }

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
