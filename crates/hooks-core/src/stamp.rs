//! Timestamps in the original store's form, `YYYY-MM-DDTHH:MM:SS±hhmm`.
//!
//! Written strictly in that form (the original module parses it back), read leniently:
//! `Z`, `±hh:mm`, `±hhmm` and fractional seconds are all accepted.

use time::format_description::FormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// A point in time. The core never reads the clock; callers pass `now` in.
pub type Timestamp = OffsetDateTime;

const WRITE: &[FormatItem<'static>] = format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second][offset_hour sign:mandatory][offset_minute]"
);
const WRITE_FRAC: &[FormatItem<'static>] = format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6][offset_hour sign:mandatory][offset_minute]"
);
const BASE: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day][first [T] [ ]][hour]:[minute]:[second]");

/// Formats `t` as `2026-12-02T08:17:57+0000`, in `t`'s own offset.
pub fn format(t: Timestamp) -> String {
    t.format(WRITE).unwrap_or_else(|_| format_utc_fallback(t))
}

/// Like [`format()`], with microseconds: used where two stamps in one second must stay apart.
pub fn format_micros(t: Timestamp) -> String {
    t.format(WRITE_FRAC)
        .unwrap_or_else(|_| format_utc_fallback(t))
}

/// [`format()`] for a whole second, else [`format_micros`]: no precision is lost, and a
/// stamp that has none to lose is written as the original module writes it.
pub fn format_exact(t: Timestamp) -> String {
    if t.nanosecond() == 0 {
        format(t)
    } else {
        format_micros(t)
    }
}

fn format_utc_fallback(t: Timestamp) -> String {
    // Only reachable for years outside 0..=9999, which no clock produces.
    format!("{}", t.unix_timestamp())
}

/// Parses the forms the original and other tools write. `None` when it is not a timestamp.
/// A time without an offset is taken as UTC (the original would take local time; the
/// difference only matters for hand-edited files).
pub fn parse(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    if let Some(t) = parse_strict(s) {
        return Some(t);
    }
    if s.len() < 19 || !s.is_ascii() {
        return None;
    }
    let (head, rest) = s.split_at(19);
    let base = PrimitiveDateTime::parse(head, BASE).ok()?;
    let mut rest = rest;
    let mut nanos: u32 = 0;
    if let Some(frac) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(',')) {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let (d, after) = frac.split_at(digits);
        let mut scaled = String::from(&d[..d.len().min(9)]);
        while scaled.len() < 9 {
            scaled.push('0');
        }
        nanos = scaled.parse().ok()?;
        rest = after;
    }
    let offset = parse_offset(rest)?;
    let t = base.replace_nanosecond(nanos).ok()?;
    Some(t.assume_offset(offset))
}

fn parse_offset(s: &str) -> Option<UtcOffset> {
    if s.is_empty() || s == "Z" || s == "z" {
        return Some(UtcOffset::UTC);
    }
    let sign = match s.as_bytes()[0] {
        b'+' => 1i8,
        b'-' => -1i8,
        _ => return None,
    };
    let body = &s[1..];
    let (h, m) = match body.len() {
        2 => (body, "00"),
        4 => body.split_at(2),
        5 if body.as_bytes()[2] == b':' => (&body[..2], &body[3..]),
        _ => return None,
    };
    if !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i8 = h.parse().ok().filter(|h| *h <= 23)?;
    let m: i8 = m.parse().ok().filter(|m| *m <= 59)?;
    UtcOffset::from_hms(sign * h, sign * m, 0).ok()
}

/// The form this project writes, `YYYY-MM-DDTHH:MM:SS±hhmm`, parsed without the general
/// machinery: stores read thousands of these per operation.
fn parse_strict(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let sign: i8 = match b[19] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (oh, om) = (num(20..22)?, num(22..24)?);
    if oh > 23 || om > 59 {
        return None;
    }
    let month = time::Month::try_from(u8::try_from(num(5..7)?).ok()?).ok()?;
    let date = time::Date::from_calendar_date(
        i32::try_from(num(0..4)?).ok()?,
        month,
        u8::try_from(num(8..10)?).ok()?,
    )
    .ok()?;
    let t = time::Time::from_hms(
        u8::try_from(num(11..13)?).ok()?,
        u8::try_from(num(14..16)?).ok()?,
        u8::try_from(num(17..19)?).ok()?,
    )
    .ok()?;
    let offset = UtcOffset::from_hms(sign * oh as i8, sign * om as i8, 0).ok()?;
    Some(PrimitiveDateTime::new(date, t).assume_offset(offset))
}
