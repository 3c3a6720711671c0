//! Conversations that stopped on an error, and follow-ups that hit a limit: the kinds of
//! failure Claude Code names, when a limit resets (read from the text the CLI writes), and
//! the backoff between attempts.
//!
//! Claude Code runs its `StopFailure` hook with `error` set to one of [`FailureKind`]'s
//! names. For a subscription's usage limit its message says when the limit resets, in the
//! zone the CLI ran in: `You've hit your 5-hour limit · resets 7:20am (UTC)` (2.1.332),
//! `You've hit your session limit · resets Dec 7, 6:30am (Europe/Berlin)` (2.1.197), and
//! in older versions `Claude AI usage limit reached|1796368836`. An API key's limit says
//! nothing of the reset: then the wait is a backoff.

use std::fmt;

use time::Duration;

use crate::id::{ValidationError, describe};
use crate::stamp::{self, Timestamp};

/// Why Claude Code stopped a turn, as its `StopFailure` hook names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    /// The API refused the credentials.
    AuthenticationFailed,
    /// The organisation does not allow this sign-in.
    OauthOrgNotAllowed,
    /// The account's billing stopped the turn.
    BillingError,
    /// A usage or rate limit (429).
    RateLimit,
    /// The API was overloaded (529).
    Overloaded,
    /// The API refused the request as invalid.
    InvalidRequest,
    /// The model is not known to the API.
    ModelNotFound,
    /// The API failed (5xx).
    ServerError,
    /// Another failure.
    Unknown,
    /// The reply hit the output token limit.
    MaxOutputTokens,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 10] = [
        FailureKind::AuthenticationFailed,
        FailureKind::OauthOrgNotAllowed,
        FailureKind::BillingError,
        FailureKind::RateLimit,
        FailureKind::Overloaded,
        FailureKind::InvalidRequest,
        FailureKind::ModelNotFound,
        FailureKind::ServerError,
        FailureKind::Unknown,
        FailureKind::MaxOutputTokens,
    ];

    /// Its name, as Claude Code's `StopFailure` input and the `errors` lists write it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::AuthenticationFailed => "authentication_failed",
            FailureKind::OauthOrgNotAllowed => "oauth_org_not_allowed",
            FailureKind::BillingError => "billing_error",
            FailureKind::RateLimit => "rate_limit",
            FailureKind::Overloaded => "overloaded",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::ModelNotFound => "model_not_found",
            FailureKind::ServerError => "server_error",
            FailureKind::Unknown => "unknown",
            FailureKind::MaxOutputTokens => "max_output_tokens",
        }
    }

    /// A name as a hook's `errors` lists it; the error names `errors` and the names known.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                ValidationError::new(
                    "errors",
                    format!(
                        "each must be one of {} (got {})",
                        Self::ALL.map(FailureKind::as_str).join(", "),
                        describe(s)
                    ),
                )
            })
    }

    /// What Claude Code sent: a name this version does not know counts as `unknown`.
    pub fn from_claude(s: &str) -> Self {
        Self::parse(s).unwrap_or(FailureKind::Unknown)
    }

    /// The longest wait between attempts: a usage limit lasts hours, an overload minutes.
    pub fn backoff_cap(self) -> Duration {
        match self {
            FailureKind::RateLimit => Duration::hours(5),
            _ => Duration::minutes(30),
        }
    }

    /// A run of a follow-up that ended on this HTTP status hit a limit: it is tried again.
    pub fn from_api_status(status: u16) -> Option<Self> {
        match status {
            429 => Some(FailureKind::RateLimit),
            529 => Some(FailureKind::Overloaded),
            _ => None,
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The failures a `conversation-failed` hook follows up: a non-empty set, in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureKinds(Vec<FailureKind>);

impl Default for FailureKinds {
    /// What a limit or an outage stops, and waiting cures.
    fn default() -> Self {
        Self(vec![
            FailureKind::RateLimit,
            FailureKind::Overloaded,
            FailureKind::ServerError,
        ])
    }
}

impl FailureKinds {
    /// From names; empty, or a name not known, is an error naming `errors`.
    pub fn new<S: AsRef<str>>(names: &[S]) -> Result<Self, ValidationError> {
        let mut kinds = names
            .iter()
            .map(|n| FailureKind::parse(n.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if kinds.is_empty() {
            return Err(ValidationError::new(
                "errors",
                "must name at least one failure (rate_limit, overloaded, …)",
            ));
        }
        kinds.sort();
        kinds.dedup();
        Ok(Self(kinds))
    }
    /// From a comma-separated list, as typed on a command line.
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let names: Vec<&str> = s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        Self::new(&names)
    }
    /// Whether `k` is among them.
    pub fn contains(&self, k: FailureKind) -> bool {
        self.0.contains(&k)
    }
    /// The kinds, in their order.
    pub fn kinds(&self) -> &[FailureKind] {
        &self.0
    }
    /// Their names.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|k| k.as_str()).collect()
    }
}

impl fmt::Display for FailureKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

/// A conversation's turn that failed: what Claude Code said, and when the limit resets if
/// that could be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// When the limit resets, where the failure said.
    pub resets_at: Option<Timestamp>,
    /// When the turn failed, where the conversation's own transcript says (the API error
    /// line it ends in): a failure is then known by its time, so the same failure told
    /// again (a replayed event) is the one already followed up.
    pub at: Option<Timestamp>,
}

/// A failed turn as its agent reports it: the kind, and the texts that may state a reset
/// (the hook's `last_assistant_message` and `error_details`, or a run's result), or the
/// reset itself where the agent records it exactly (Codex's rollout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedTurn {
    /// What kind of failure stopped the turn.
    pub kind: FailureKind,
    /// What was said about it (the error text, the last message), where a reset time may be read.
    pub texts: Vec<String>,
    /// When the limit resets, where the agent recorded it as an instant: it goes before
    /// anything read from [`FailedTurn::texts`].
    pub resets_at: Option<Timestamp>,
    /// When it failed, where the transcript says: see [`Failure::at`].
    pub at: Option<Timestamp>,
}

impl FailedTurn {
    /// The failure, with the reset the texts state, seen from `now` through `offset`.
    pub fn resolve(
        &self,
        now: Timestamp,
        offset: impl Fn(Option<&str>, Timestamp) -> Option<i32>,
    ) -> Failure {
        let resets_at = self.resets_at.or_else(|| {
            self.texts
                .iter()
                .filter_map(|t| parse_reset(t))
                .find_map(|r| resolve_reset(&r, now, &offset))
        });
        Failure {
            kind: self.kind,
            resets_at,
            at: self.at,
        }
    }
}

/// How far past a limit's reset a follow-up starts: the reset is shown to the minute, and a
/// request a moment early is refused again.
pub const LIMIT_MARGIN: Duration = Duration::seconds(60);
/// How many times one failure is tried before it is given up.
pub const MAX_ATTEMPTS: u32 = 5;
/// How the reason of an entry waiting on a limit starts.
pub const LIMIT_WAIT: &str = "rate limited";

/// The wait before attempt `attempt` (1 for the first): the hook's delay (at least a
/// second), doubling, capped for the kind.
pub fn backoff(kind: FailureKind, delay_seconds: u32, attempt: u32) -> Duration {
    let base = i64::from(delay_seconds.max(1));
    let factor = 1i64 << attempt.saturating_sub(1).min(30);
    Duration::seconds(base.saturating_mul(factor)).min(kind.backoff_cap())
}

/// When attempt `attempt` of following up `failure` is due: after the reset (with the
/// margin) when it is known, else after the backoff.
pub fn due_at(failure: &Failure, delay_seconds: u32, attempt: u32, now: Timestamp) -> Timestamp {
    match failure.resets_at {
        Some(r) if failure.kind == FailureKind::RateLimit => (r + LIMIT_MARGIN).max(now),
        _ => now + backoff(failure.kind, delay_seconds, attempt),
    }
}

/// Why an entry waits on a failure, in words: `rate limited until …` for a limit,
/// `overloaded: tries again at …` otherwise, with the attempt.
pub fn wait_reason(kind: FailureKind, until: Timestamp, attempt: u32) -> String {
    let when = stamp::format(until);
    match kind {
        FailureKind::RateLimit => {
            format!("{LIMIT_WAIT} until {when} (attempt {attempt} of {MAX_ATTEMPTS})")
        }
        k => format!(
            "{LIMIT_WAIT}: {k}, tries again at {when} (attempt {attempt} of {MAX_ATTEMPTS})"
        ),
    }
}

/// What the run log says of an attempt that met `kind` and went back to the queue, due
/// `until` for attempt `attempt`: `rate limited, back in the queue, due …`.
pub fn requeued_text(kind: FailureKind, until: Timestamp, attempt: u32) -> String {
    let what = match kind {
        FailureKind::RateLimit => "rate limited".to_owned(),
        k => k.to_string(),
    };
    format!(
        "{what}, back in the queue, due {} (attempt {attempt} of {MAX_ATTEMPTS})",
        stamp::format(until)
    )
}

/// A reset time as a limit message states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetText {
    /// `…|1796368836`: seconds since the epoch.
    Epoch(i64),
    /// `resets [Dec 7, ]7:20am[ (Zone)]`: a wall-clock time in a zone (`None`: the local
    /// one), on a date or the next time it comes round.
    Wall {
        /// The day, when the text names one.
        date: Option<(time::Month, u8)>,
        /// The hour.
        hour: u8,
        /// The minute.
        minute: u8,
        /// The time zone the text names, if any.
        zone: Option<String>,
    },
}

/// The reset a limit message states, in any form the CLI writes; `None` when it states none.
pub fn parse_reset(text: &str) -> Option<ResetText> {
    if let Some((_, tail)) = text.rsplit_once('|') {
        let digits = tail.trim();
        if !digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|b| b.is_ascii_digit()) {
            return digits.parse().ok().map(ResetText::Epoch);
        }
    }
    // Claude Code's `resets 7:20am (UTC)`; Codex's `try again at 9:06 PM.` (local time).
    let rest = ["resets ", "try again at "]
        .iter()
        .find_map(|p| text.rfind(p).map(|at| &text[at + p.len()..]))?;
    let mut rest = rest.trim_start();
    // An optional `Dec 7, ` (or `Dec 7 at `).
    let mut date = None;
    if let Some(month) = month_prefix(rest) {
        let after = rest[3..].trim_start();
        let day_len = after.bytes().take_while(u8::is_ascii_digit).count();
        if (1..=2).contains(&day_len) {
            let day: u8 = after[..day_len].parse().ok()?;
            date = Some((month, day));
            rest = after[day_len..].trim_start_matches(',').trim_start();
            rest = rest.strip_prefix("at ").unwrap_or(rest);
        }
    }
    // `7:20am`, `3pm`, `15:00`.
    let hour_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&hour_len) {
        return None;
    }
    let mut hour: u8 = rest[..hour_len].parse().ok()?;
    rest = &rest[hour_len..];
    let mut minute = 0u8;
    if let Some(r) = rest.strip_prefix(':') {
        if r.len() < 2 || !r.as_bytes()[..2].iter().all(u8::is_ascii_digit) {
            return None;
        }
        minute = r[..2].parse().ok()?;
        rest = &r[2..];
    }
    let lower = rest.trim_start().to_ascii_lowercase();
    let (pm, am) = (lower.starts_with("pm"), lower.starts_with("am"));
    if pm || am {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour = match (hour, pm) {
            (12, false) => 0,
            (12, true) => 12,
            (h, true) => h + 12,
            (h, false) => h,
        };
        rest = rest.trim_start()[2..].trim_start();
    }
    if hour > 23 || minute > 59 {
        return None;
    }
    let zone = rest
        .trim_start()
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .map(|(z, _)| z.trim().to_owned())
        .filter(|z| !z.is_empty() && z.len() <= 64);
    Some(ResetText::Wall {
        date,
        hour,
        minute,
        zone,
    })
}

fn month_prefix(s: &str) -> Option<time::Month> {
    use time::Month::*;
    const MONTHS: [(&str, time::Month); 12] = [
        ("jan", January),
        ("feb", February),
        ("mar", March),
        ("apr", April),
        ("may", May),
        ("jun", June),
        ("jul", July),
        ("aug", August),
        ("sep", September),
        ("oct", October),
        ("nov", November),
        ("dec", December),
    ];
    let head = s.get(..3)?.to_ascii_lowercase();
    MONTHS.iter().find(|(n, _)| *n == head).map(|(_, m)| *m)
}

/// The instant a reset text names, as seen at `now` (the failure's time): a time of day is
/// the next one to come (a reset passed within the hour counts as today's); a date without
/// a year is this year's, or next year's once this year's is months gone. `offset` gives a
/// zone's UTC offset in seconds at an instant (`None`: the local zone); a zone it does not
/// know leaves the reset unknown.
pub fn resolve_reset(
    text: &ResetText,
    now: Timestamp,
    offset: impl Fn(Option<&str>, Timestamp) -> Option<i32>,
) -> Option<Timestamp> {
    let (date, hour, minute, zone) = match text {
        ResetText::Epoch(s) => return time::OffsetDateTime::from_unix_timestamp(*s).ok(),
        ResetText::Wall {
            date,
            hour,
            minute,
            zone,
        } => (*date, *hour, *minute, zone.as_deref()),
    };
    let clock = time::Time::from_hms(hour, minute, 0).ok()?;
    // The instant a wall time in the zone stands for, by the offset in force then.
    let instant = |d: time::Date| -> Option<Timestamp> {
        let wall = time::PrimitiveDateTime::new(d, clock).assume_utc();
        let mut t = wall - Duration::seconds(i64::from(offset(zone, wall)?));
        for _ in 0..2 {
            t = wall - Duration::seconds(i64::from(offset(zone, t)?));
        }
        Some(t)
    };
    let here = now + Duration::seconds(i64::from(offset(zone, now)?));
    match date {
        Some((month, day)) => {
            let year = here.year();
            let this = instant(time::Date::from_calendar_date(year, month, day).ok()?)?;
            if this + Duration::days(180) < now {
                instant(time::Date::from_calendar_date(year + 1, month, day).ok()?)
            } else {
                Some(this)
            }
        }
        None => {
            let today = instant(here.date())?;
            if today + Duration::hours(1) < now {
                instant(here.date().next_day()?)
            } else {
                Some(today)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        stamp::parse(s).expect("a time")
    }

    /// UTC, a fixed +01:00 for `Europe/Berlin` in winter, and nothing else.
    fn zones(zone: Option<&str>, _at: Timestamp) -> Option<i32> {
        match zone {
            None | Some("UTC") => Some(0),
            Some("Europe/Berlin") => Some(3600),
            Some("Asia/Kolkata") => Some(19_800),
            _ => None,
        }
    }

    fn reset(text: &str, now: &str) -> Option<String> {
        let r = parse_reset(text)?;
        resolve_reset(&r, t(now), zones).map(stamp::format)
    }

    #[test]
    fn a_reset_the_agent_recorded_goes_before_its_words() {
        let turn = FailedTurn {
            kind: FailureKind::RateLimit,
            texts: vec!["You've hit your 5-hour limit · resets 7:20am (UTC)".into()],
            resets_at: Some(t("2026-12-04T07:21:17Z")),
            at: None,
        };
        let f = turn.resolve(t("2026-12-04T06:20:36Z"), zones);
        assert_eq!(f.resets_at, Some(t("2026-12-04T07:21:17Z")));
        let words = FailedTurn {
            resets_at: None,
            ..turn
        };
        let f = words.resolve(t("2026-12-04T06:20:36Z"), zones);
        assert_eq!(f.resets_at, Some(t("2026-12-04T07:20:00Z")));
    }

    #[test]
    fn every_form_the_cli_writes_is_read() {
        let now = "2026-12-04T06:20:36Z";
        let rows: &[(&str, Option<&str>)] = &[
            // 2.1.332, subscription, same day
            (
                "You've hit your 5-hour limit · resets 7:20am (UTC)",
                Some("2026-12-04T07:20:00+0000"),
            ),
            // Codex 0.171.0's usage limit, in the local zone
            (
                "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 9:06 PM.",
                Some("2026-12-04T21:06:00+0000"),
            ),
            // 2.1.197 wording
            (
                "You've hit your session limit · resets 7:20am (UTC)",
                Some("2026-12-04T07:20:00+0000"),
            ),
            // another zone: 12:50pm in Kolkata is 07:20 UTC
            (
                "You've hit your session limit · resets 12:50pm (Asia/Kolkata)",
                Some("2026-12-04T07:20:00+0000"),
            ),
            // a date, days away
            (
                "You've hit your 5-hour limit · resets Dec 7, 6:30am (UTC)",
                Some("2026-12-07T06:30:00+0000"),
            ),
            (
                "You've hit your weekly limit · resets Dec 7, 6:30am (Europe/Berlin)",
                Some("2026-12-07T05:30:00+0000"),
            ),
            // an hour without minutes, in the local zone
            (
                "5-hour limit reached ∙ resets 3pm",
                Some("2026-12-04T15:00:00+0000"),
            ),
            // a time already past today is tomorrow's
            (
                "limit reached · resets 5am (UTC)",
                Some("2026-12-05T05:00:00+0000"),
            ),
            // midnight and noon
            ("resets 12am (UTC)", Some("2026-12-05T00:00:00+0000")),
            ("resets 12pm (UTC)", Some("2026-12-04T12:00:00+0000")),
            // the older form
            (
                "Claude AI usage limit reached|1796368836",
                Some("2026-12-04T07:20:36+0000"),
            ),
            // a date early next year, seen in December
            (
                "resets Jan 2, 9:00am (UTC)",
                Some("2027-01-02T09:00:00+0000"),
            ),
            // no reset stated (an API key's limit), or a zone not known
            (
                "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.",
                None,
            ),
            ("resets 7:20am (Mars/Olympus)", None),
            ("resets 13pm (UTC)", None),
            ("resets 7:2am (UTC)", None),
            ("resets soon", None),
        ];
        for (text, want) in rows {
            assert_eq!(reset(text, now).as_deref(), *want, "{text}");
        }
    }

    #[test]
    fn backoff_doubles_from_the_delay_up_to_the_kinds_cap() {
        let d = 60;
        let secs = |k, a| backoff(k, d, a).whole_seconds();
        assert_eq!(
            (1..=7)
                .map(|a| secs(FailureKind::Overloaded, a))
                .collect::<Vec<_>>(),
            [60, 120, 240, 480, 960, 1800, 1800]
        );
        assert_eq!(secs(FailureKind::RateLimit, 9), 60 * 256);
        assert_eq!(secs(FailureKind::RateLimit, 10), 5 * 3600);
        assert_eq!(secs(FailureKind::RateLimit, 400), 5 * 3600);
        // A delay of 0 still waits a second.
        assert_eq!(backoff(FailureKind::ServerError, 0, 1).whole_seconds(), 1);
    }

    #[test]
    fn a_known_reset_wins_over_the_backoff_and_never_lies_in_the_past() {
        let now = t("2026-12-04T06:00:00Z");
        let d = 60;
        let limit = |resets_at| Failure {
            at: None,
            kind: FailureKind::RateLimit,
            resets_at,
        };
        assert_eq!(
            due_at(&limit(Some(t("2026-12-04T07:00:00Z"))), d, 1, now),
            t("2026-12-04T07:01:00Z")
        );
        assert_eq!(
            due_at(&limit(Some(t("2026-12-04T05:00:00Z"))), d, 1, now),
            now
        );
        assert_eq!(due_at(&limit(None), d, 3, now), t("2026-12-04T06:04:00Z"));
        let over = Failure {
            at: None,
            kind: FailureKind::Overloaded,
            resets_at: Some(t("2026-12-04T09:00:00Z")),
        };
        assert_eq!(due_at(&over, d, 2, now), t("2026-12-04T06:02:00Z"));
    }

    #[test]
    fn errors_lists_are_checked_and_named() {
        assert_eq!(
            FailureKinds::parse("overloaded, rate_limit")
                .unwrap()
                .to_string(),
            "rate_limit,overloaded"
        );
        let e = FailureKinds::parse("rate_limit,nap").unwrap_err();
        assert_eq!(e.field, "errors");
        assert!(
            e.rule.contains("\"nap\"") && e.rule.contains("server_error"),
            "{e}"
        );
        assert_eq!(FailureKinds::parse(" , ").unwrap_err().field, "errors");
        assert_eq!(FailureKind::from_claude("brand_new"), FailureKind::Unknown);
        assert_eq!(
            FailureKind::from_api_status(529),
            Some(FailureKind::Overloaded)
        );
        assert_eq!(FailureKind::from_api_status(500), None);
    }
}
