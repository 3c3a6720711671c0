//! The clocks: the system's, in UTC with days in the tz database's zones, and a shared
//! store's, moved by its offset.

use hooks_core::ports::Clock;
use hooks_core::stamp::Timestamp;

/// The system clock moved by a shared store's offset: the store's time.
pub struct StoreClock(pub time::Duration);

impl Clock for StoreClock {
    fn now(&self) -> Timestamp {
        SystemClock.now() + self.0
    }

    fn day(&self, zone: Option<&str>, at: Timestamp) -> Result<hooks_core::cost::Day, String> {
        SystemClock.day(zone, at)
    }

    fn offset(&self, zone: Option<&str>, at: Timestamp) -> Result<i32, String> {
        SystemClock.offset(zone, at)
    }
}

/// The system clock, in UTC; days in the tz database's zones (`/usr/share/zoneinfo`).
pub struct SystemClock;

/// A zone of the tz database (`None`: this machine's).
fn time_zone(zone: Option<&str>) -> Result<tz::TimeZone, String> {
    match zone {
        None => tz::TimeZone::local().map_err(|e| format!("this machine's time zone: {e}")),
        Some(z) => {
            let z = hooks_core::cost::Budget::validate_zone(z).map_err(|e| e.rule)?;
            tz::TimeZone::from_posix_tz(&z).map_err(|_| {
                format!("unknown time zone {z:?} (not in the tz database, /usr/share/zoneinfo)")
            })
        }
    }
}

fn zone_offset(tz: &tz::TimeZone, t: Timestamp) -> Result<i32, String> {
    tz.find_local_time_type(t.unix_timestamp())
        .map(|l| l.ut_offset())
        .map_err(|e| e.to_string())
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        time::OffsetDateTime::now_utc()
    }

    fn offset(&self, zone: Option<&str>, at: Timestamp) -> Result<i32, String> {
        zone_offset(&time_zone(zone)?, at)
    }

    fn day(&self, zone: Option<&str>, at: Timestamp) -> Result<hooks_core::cost::Day, String> {
        use hooks_core::cost::Day;
        let tz = time_zone(zone)?;
        let offset = |t: Timestamp| zone_offset(&tz, t);
        // The date by the offset at `at`; each midnight by the offset in force at it, so a
        // day that changes to or from summer time has its true length.
        let midnight = |date: time::Date| -> Result<Timestamp, String> {
            let wall = time::PrimitiveDateTime::new(date, time::Time::MIDNIGHT).assume_utc();
            let mut t = wall - time::Duration::seconds(i64::from(offset(wall)?));
            for _ in 0..2 {
                t = wall - time::Duration::seconds(i64::from(offset(t)?));
            }
            Ok(t)
        };
        let date = Day::at_offset(at, offset(at)?).date;
        let next = date
            .next_day()
            .ok_or_else(|| "a date past the calendar's end".to_owned())?;
        Ok(Day {
            date,
            start: midnight(date)?,
            end: midnight(next)?,
        })
    }
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    fn day(zone: &str, at: &str) -> Result<hooks_core::cost::Day, String> {
        SystemClock.day(Some(zone), hooks_core::stamp::parse(at).expect("a time"))
    }

    #[test]
    fn days_follow_the_zone_and_its_summer_time() {
        let rows: &[(&str, &str, &str, &str, &str, i64)] = &[
            // zone, instant, date there, start, end, hours long
            (
                "Asia/Kolkata",
                "2026-12-03T20:00:00+0000",
                "2026-12-04",
                "2026-12-03T18:30:00+0000",
                "2026-12-04T18:30:00+0000",
                24,
            ),
            (
                "UTC",
                "2026-12-03T23:59:59+0000",
                "2026-12-03",
                "2026-12-03T00:00:00+0000",
                "2026-12-04T00:00:00+0000",
                24,
            ),
            (
                "Europe/Berlin",
                "2026-03-29T12:00:00+0000",
                "2026-03-29",
                "2026-03-28T23:00:00+0000",
                "2026-03-29T22:00:00+0000",
                23,
            ),
            (
                "Europe/Berlin",
                "2026-10-25T12:00:00+0000",
                "2026-10-25",
                "2026-10-24T22:00:00+0000",
                "2026-10-25T23:00:00+0000",
                25,
            ),
            (
                "America/Los_Angeles",
                "2026-12-04T03:00:00+0000",
                "2026-12-03",
                "2026-12-03T08:00:00+0000",
                "2026-12-04T08:00:00+0000",
                24,
            ),
        ];
        for (zone, at, date, start, end, hours) in rows {
            let d = day(zone, at).expect(zone);
            assert_eq!(
                (
                    d.date.to_string(),
                    hooks_core::stamp::format(d.start),
                    hooks_core::stamp::format(d.end),
                    (d.end - d.start).whole_hours()
                ),
                (
                    (*date).to_owned(),
                    (*start).to_owned(),
                    (*end).to_owned(),
                    *hours
                ),
                "{zone} {at}"
            );
        }
        let e = day("Mars/Olympus", "2026-12-03T20:00:00+0000").unwrap_err();
        assert!(e.contains("unknown time zone \"Mars/Olympus\""), "{e}");
        let e = day("../../etc/passwd", "2026-12-03T20:00:00+0000").unwrap_err();
        assert!(e.contains("must be a time zone name"), "{e}");
        assert!(
            SystemClock.day(None, SystemClock.now()).is_ok(),
            "this machine's own zone"
        );
    }
}
