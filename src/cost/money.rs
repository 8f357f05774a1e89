//! An amount of money: whole cents of a currency. An amount computed in floating point (hours
//! times a price) is rounded to cents once, half away from zero, and sums are of cents.

use std::fmt;

use serde::Serialize;

use crate::figures::thousands;

/// An ISO 4217 code, three capital letters (`USD`, `EUR`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Currency(String);

impl Currency {
    /// The code `text`, in capitals, if it is three letters.
    pub fn of(text: &str) -> Option<Self> {
        let code = text.trim().to_ascii_uppercase();
        (code.len() == 3 && code.chars().all(|c| c.is_ascii_uppercase())).then_some(Currency(code))
    }

    pub fn code(&self) -> &str {
        &self.0
    }

    /// The sign people write before an amount, for the currencies that have one everyone reads.
    fn symbol(&self) -> Option<&'static str> {
        match self.0.as_str() {
            "USD" => Some("$"),
            "EUR" => Some("€"),
            "GBP" => Some("£"),
            _ => None,
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whole cents of a currency.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money {
    pub cents: i64,
    pub currency: Currency,
}

/// `amount` in cents, half away from zero; an amount past what cents can count is held at the
/// bound rather than wrapped, and one that is not a number is none.
pub fn cents(amount: f64) -> i64 {
    if amount.is_nan() {
        return 0;
    }
    // A decimal amount is often a hair under its half cent in binary (1.005 is 1.00499...):
    // nudged by a few units in its last place, it rounds as written.
    let hundredths = amount * 100.0;
    let ulps = hundredths.abs().max(1.0) * f64::EPSILON * 8.0;
    let nudged = hundredths + hundredths.signum() * ulps;
    // `as` saturates at i64's bounds, which no bill reaches.
    nudged.round() as i64
}

/// `cents` in units, e.g. 41.2 for 4120.
pub fn units(cents: i64) -> f64 {
    // Cents of any bill fit an f64 exactly.
    cents as f64 / 100.0
}

impl Money {
    pub fn new(cents: i64, currency: Currency) -> Self {
        Money { cents, currency }
    }
}

impl fmt::Display for Money {
    /// `$41.20`, `€0.05`, `-£3.00`, `12.00 CHF`: two decimals, the sign first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.cents < 0 { "-" } else { "" };
        let whole = self.cents.unsigned_abs() / 100;
        let part = self.cents.unsigned_abs() % 100;
        let whole = thousands(whole);
        match self.currency.symbol() {
            Some(symbol) => write!(f, "{sign}{symbol}{whole}.{part:02}"),
            None => write!(f, "{sign}{whole}.{part:02} {}", self.currency),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn usd() -> Currency {
        Currency::of("usd").unwrap_or_else(|| unreachable!("a valid code"))
    }

    #[test]
    fn an_amount_reads_as_on_a_bill() {
        let money = |cents, code| Money::new(cents, Currency::of(code).unwrap_or_else(usd));
        assert_eq!(money(4120, "USD").to_string(), "$41.20");
        assert_eq!(money(5, "eur").to_string(), "€0.05");
        assert_eq!(money(-300, "GBP").to_string(), "-£3.00");
        assert_eq!(money(1200, "CHF").to_string(), "12.00 CHF");
        assert_eq!(money(123_456_789, "USD").to_string(), "$1,234,567.89");
        assert_eq!(money(0, "USD").to_string(), "$0.00");
    }

    #[test]
    fn a_currency_is_three_letters() {
        assert_eq!(
            Currency::of(" eur ").map(|c| c.to_string()),
            Some("EUR".into())
        );
        for bad in ["", "US", "USDT", "U$D", "€"] {
            assert_eq!(Currency::of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cents_round_half_away_from_zero_and_never_panic() {
        assert_eq!(cents(0.125), 13);
        assert_eq!(cents(0.124), 12);
        assert_eq!(cents(-0.125), -13);
        assert_eq!(cents(41.2), 4120);
        assert_eq!(cents(1.005), 101, "as written, not as stored");
        assert_eq!(cents(0.285), 29);
        assert_eq!(cents(f64::NAN), 0);
        assert_eq!(cents(f64::INFINITY), i64::MAX);
        assert_eq!(units(4120), 41.2);
    }

    proptest! {
        #[test]
        fn whole_cents_come_back_whole(whole in -1_000_000_000_i64..1_000_000_000) {
            prop_assert_eq!(cents(units(whole)), whole);
        }

        #[test]
        fn rounding_is_off_by_half_a_cent_at_most(amount in -1.0e9_f64..1.0e9) {
            let rounded = cents(amount) as f64 / 100.0;
            prop_assert!((rounded - amount).abs() <= 0.005 + 1e-6);
        }
    }
}
