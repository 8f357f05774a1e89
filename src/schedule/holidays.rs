//! Holidays: local dates, in the schedule's zone, on which nothing wakes. A scale-up that falls
//! on one does not fire, for the timer and for catch-up alike, while scale-downs still do.

use chrono::{Days, NaiveDate};

use super::invalid::{InvalidAnnotation, invalid};

/// Inclusive date ranges, sorted and merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holidays {
    ranges: Vec<(NaiveDate, NaiveDate)>,
}

impl Holidays {
    /// Reads `2026-12-24..2026-12-26, 2027-01-01`.
    pub fn parse(key: &str, value: &str) -> Result<Self, InvalidAnnotation> {
        let mut ranges = Vec::new();
        for item in value.split(',').map(str::trim) {
            let date = |text: &str| {
                NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| {
                    invalid(
                        key,
                        value,
                        &format!("has `{text}`, which is not a date as YYYY-MM-DD"),
                    )
                })
            };
            let (first, last) = match item.split_once("..") {
                Some((first, last)) => (date(first)?, date(last)?),
                None if item.is_empty() => {
                    return Err(invalid(
                        key,
                        value,
                        "has an empty entry; expected dates or ranges such as \
                         `2026-12-24..2026-12-26, 2027-01-01`",
                    ));
                }
                None => (date(item)?, date(item)?),
            };
            if last < first {
                return Err(invalid(
                    key,
                    value,
                    &format!("has `{item}`, a range that ends before it starts"),
                ));
            }
            ranges.push((first, last));
        }
        ranges.sort();
        let mut merged: Vec<(NaiveDate, NaiveDate)> = Vec::new();
        for (first, last) in ranges {
            match merged.last_mut() {
                Some((_, end)) if first <= end.checked_add_days(Days::new(1)).unwrap_or(*end) => {
                    *end = (*end).max(last);
                }
                _ => merged.push((first, last)),
            }
        }
        Ok(Holidays { ranges: merged })
    }

    /// The holiday range `date` falls in, whole.
    pub fn range_of(&self, date: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
        let after = self.ranges.partition_point(|(first, _)| *first <= date);
        let (first, last) = *self.ranges.get(after.checked_sub(1)?)?;
        (date <= last).then_some((first, last))
    }

    pub fn ranges(&self) -> &[(NaiveDate, NaiveDate)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_and_dates_are_merged_and_found() {
        let holidays =
            Holidays::parse("h", "2027-01-01, 2026-12-24..2026-12-26,2026-12-27").unwrap();
        assert_eq!(
            holidays.range_of(date("2026-12-25")),
            Some((date("2026-12-24"), date("2026-12-27")))
        );
        assert_eq!(
            holidays.range_of(date("2027-01-01")),
            Some((date("2027-01-01"), date("2027-01-01")))
        );
        assert_eq!(holidays.range_of(date("2026-12-23")), None);
        assert_eq!(holidays.range_of(date("2026-12-28")), None);
        assert_eq!(holidays.range_of(date("2027-01-02")), None);
    }

    #[test]
    fn bad_dates_and_ranges_name_the_value() {
        for (value, reason) in [
            (
                "2026-12-32",
                "has `2026-12-32`, which is not a date as YYYY-MM-DD",
            ),
            (
                "24.12.2026",
                "has `24.12.2026`, which is not a date as YYYY-MM-DD",
            ),
            (
                "2026-12-26..2026-12-24",
                "has `2026-12-26..2026-12-24`, a range that ends before it starts",
            ),
            (
                "2026-12-24,,2026-12-25",
                "has an empty entry; expected dates or ranges such as \
                 `2026-12-24..2026-12-26, 2027-01-01`",
            ),
            (
                "",
                "has an empty entry; expected dates or ranges such as \
                 `2026-12-24..2026-12-26, 2027-01-01`",
            ),
        ] {
            assert_eq!(
                Holidays::parse("cronscaler.dev/holidays", value)
                    .unwrap_err()
                    .to_string(),
                format!("cronscaler.dev/holidays: {value:?} {reason}")
            );
        }
    }
}
