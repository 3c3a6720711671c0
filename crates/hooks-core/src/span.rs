//! Spans of time as people write them, one form everywhere a length of time is typed
//! (`--delay`, `pause --for`, the API's `for` and the page's delay): `90` (seconds),
//! `90s`, `30m`, `2h`, `1d`, `1h30m`.

use crate::id::ValidationError;

/// A length of time as people write it; the error names `field`. Too long is the caller's
/// rule to state: any figure is read, never an overflow here.
pub fn parse_span(field: &'static str, text: &str) -> Result<time::Duration, ValidationError> {
    let bad = || {
        ValidationError::new(
            field,
            format!(
                "must be a length of time such as 90 (seconds), 90s, 30m, 2h, 1d or 1h30m (got {text:?})"
            ),
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(time::Duration::seconds).map_err(|_| bad());
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
