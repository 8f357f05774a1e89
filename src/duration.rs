//! Durations as people write them, the one way every message, log line, page and table shows
//! one: `30s`, `1m30s`, `1h5m`, `32h`, `2d3h`. A duration of a second or more keeps its two
//! largest units and drops the rest (nobody waiting for a wake-up reads the milliseconds); one
//! under a second is shown in milliseconds, since then they are all there is. Days count from
//! two of them on, as `kubectl` does: a day and a bit is said in hours (`24h`, `32h`). The text
//! reads back with the duration flags' own parser, to at most the dropped remainder.

use std::fmt;
use std::time::Duration;

use chrono::TimeDelta;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
/// From here on, days and hours.
const DAYS_FROM: u64 = 2 * DAY;

/// A duration to be shown: its `Display` is the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spoken(Duration);

/// `duration` as people write it.
pub fn spoken(duration: impl Into<Spoken>) -> Spoken {
    duration.into()
}

impl From<Duration> for Spoken {
    fn from(duration: Duration) -> Self {
        Spoken(duration)
    }
}

/// A span between two instants; one that runs backwards (a clock that stepped) is none at all.
impl From<TimeDelta> for Spoken {
    fn from(delta: TimeDelta) -> Self {
        Spoken(delta.to_std().unwrap_or_default())
    }
}

impl fmt::Display for Spoken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0.as_secs();
        if seconds == 0 {
            let millis = self.0.subsec_millis();
            return if millis == 0 {
                f.write_str("0s")
            } else {
                write!(f, "{millis}ms")
            };
        }
        let (large, small) = if seconds >= DAYS_FROM {
            (("d", DAY), ("h", HOUR))
        } else if seconds >= HOUR {
            (("h", HOUR), ("m", MINUTE))
        } else if seconds >= MINUTE {
            (("m", MINUTE), ("s", 1))
        } else {
            return write!(f, "{seconds}s");
        };
        write!(f, "{}{}", seconds / large.1, large.0)?;
        match seconds % large.1 / small.1 {
            0 => Ok(()),
            rest => write!(f, "{rest}{}", small.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(seconds: f64) -> String {
        spoken(Duration::from_secs_f64(seconds)).to_string()
    }

    #[test]
    fn a_wait_reads_in_the_units_a_person_would_say() {
        assert_eq!(text(30.293_877_699), "30s");
        assert_eq!(text(60.598_983_137), "1m");
        assert_eq!(text(90.0), "1m30s");
        assert_eq!(text(3_912.0), "1h5m");
        assert_eq!(text(7_200.0), "2h");
        assert_eq!(text(86_400.0), "24h");
        assert_eq!(text(32.0 * 3_600.0 + 59.0), "32h");
        assert_eq!(text(2.0 * 86_400.0), "2d");
        assert_eq!(text(2.0 * 86_400.0 + 3.0 * 3_600.0 + 59.0 * 60.0), "2d3h");
        assert_eq!(text(0.0), "0s");
        assert_eq!(text(0.25), "250ms");
    }

    #[test]
    fn a_span_that_runs_backwards_is_none() {
        assert_eq!(spoken(TimeDelta::seconds(-5)).to_string(), "0s");
        assert_eq!(spoken(TimeDelta::minutes(45)).to_string(), "45m");
    }

    proptest! {
        #[test]
        fn from_a_second_up_no_unit_below_a_second_and_it_reads_back_close_below(
            nanos in 1_000_000_000u64..400 * 86_400 * 1_000_000_000,
        ) {
            let duration = Duration::from_nanos(nanos);
            let shown = spoken(duration).to_string();
            for small in ["ms", "us", "µs", "ns"] {
                prop_assert!(!shown.contains(small), "{:?} reads {}", duration, shown);
            }
            let read = humantime::parse_duration(&shown).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(read <= duration, "{} is more than {:?}", shown, duration);
            let unit = match duration.as_secs() {
                s if s >= DAYS_FROM => HOUR,
                s if s >= HOUR => MINUTE,
                _ => 1,
            };
            prop_assert!(duration - read < Duration::from_secs(unit), "{} drops too much of {:?}", shown, duration);
        }
    }
}
