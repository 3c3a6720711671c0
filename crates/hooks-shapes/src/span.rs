//! Spans of time as people write them (`pause --for`, the API's `for`): the core's one form.

use hooks_core::ValidationError;

/// A length of time as people write it: `90` (seconds), `90s`, `30m`, `2h`, `1d`,
/// `1h30m` ([`hooks_core::span::parse_span`], the one form every length of time takes),
/// for the field `for`.
pub fn parse_span(text: &str) -> Result<time::Duration, ValidationError> {
    hooks_core::span::parse_span("for", text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_as_people_write_them() {
        for (t, secs) in [
            ("90", 90),
            ("90s", 90),
            ("30m", 1800),
            ("2h", 7200),
            ("1d", 86_400),
            ("1h30m", 5400),
        ] {
            assert_eq!(parse_span(t).unwrap(), time::Duration::seconds(secs), "{t}");
        }
        for t in ["", "5x", "h", "2x", "1.5h", "-3m", "99999999999999999d"] {
            let e = parse_span(t).unwrap_err();
            assert_eq!(e.field, "for", "{t}");
            assert!(
                e.rule.starts_with("must be a length of time"),
                "{t}: {}",
                e.rule
            );
        }
    }
}
