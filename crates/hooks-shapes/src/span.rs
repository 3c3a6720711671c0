//! Spans of time as people write them (`pause --for`, the API's `for`).

use hooks_core::ValidationError;

/// A length of time as people write it: `90s`, `30m`, `2h`, `1d`, `1h30m`.
pub fn parse_span(text: &str) -> Result<time::Duration, ValidationError> {
    let bad = || {
        ValidationError::new(
            "for",
            format!("must be a length of time such as 90s, 30m, 2h, 1d or 1h30m (got {text:?})"),
        )
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
            assert_eq!(e.field, "for", "{t}");
            assert!(
                e.rule.starts_with("must be a length of time"),
                "{t}: {}",
                e.rule
            );
        }
    }
}
