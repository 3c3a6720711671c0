//! The choices the command line offers that the rest of the app acts on: daemon modes,
//! scopes, triggers, formats. A leaf: the CLI parses into these, and nothing here knows
//! the CLI.

use clap::ValueEnum;

/// Seconds an on-demand daemon stays with nothing pending before it exits.
pub const DEFAULT_IDLE_EXIT: u64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunnerKind {
    Claude,
    Webhook,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryBy {
    Day,
    Hook,
    Model,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json
    User,
    /// <workspace>/.claude/settings.json, the file a team commits: a portable command
    Project,
    /// <workspace>/.claude/settings.local.json, Claude Code's personal per-project file
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Trigger {
    /// Claude's Stop event: queue when the reply ends with the DONE line
    Stop,
    /// Claude's SessionEnd event: queue when the session ends
    SessionEnd,
    /// Both
    Both,
}

/// How the daemon runs once installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DaemonMode {
    /// claude-hook starts `serve` in the background when it queues something and none
    /// runs; it exits after a while with nothing pending
    OnDemand,
    /// A systemd user unit (Linux) or a launchd agent (macOS) runs `serve`
    Service,
    /// You run `serve`, or `tick` from cron
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookTrigger {
    SessionEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Command,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A length of time as people write it: `90s`, `30m`, `2h`, `1d`, `1h30m`.
pub fn parse_span(text: &str) -> Result<time::Duration, crate::AppError> {
    let bad = || {
        crate::AppError::invalid(format!(
            "for: must be a length of time such as 90s, 30m, 2h, 1d or 1h30m (got {text:?})"
        ))
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = time::Duration::ZERO;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        // Any figure, however long: too long is the service's rule to state, never an
        // overflow here.
        let secs = n.checked_mul(unit).ok_or_else(bad)?;
        total = total
            .checked_add(time::Duration::seconds(secs))
            .ok_or_else(bad)?;
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_as_people_write_them() {
        for (t, secs) in [
            ("90s", 90),
            ("30m", 1800),
            ("2h", 7200),
            ("1d", 86_400),
            ("1h30m", 5400),
        ] {
            assert_eq!(parse_span(t).unwrap(), time::Duration::seconds(secs), "{t}");
        }
        for t in ["", "5", "h", "2x", "1.5h", "-3m", "99999999999999999d"] {
            let e = parse_span(t).unwrap_err();
            assert!(
                e.message.starts_with("for: must be a length of time"),
                "{t}: {}",
                e.message
            );
        }
    }
}
