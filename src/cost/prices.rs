//! A price table, as a person writes it (`--prices cpu=0.031,memory=0.0042,gpu=2.48,currency=USD`):
//! what an hour of one unit requested costs, per resource, in one currency. `cpu` is per core,
//! `memory` per GiB, `gpu` is `nvidia.com/gpu`, and any other extended resource is named as the
//! Pods request it (`amd.com/gpu=1.9`), per unit.

use std::{collections::BTreeMap, fmt, str::FromStr};

use super::{
    money::{Currency, Money, cents},
    resources::{GPU, is_priceable},
};

/// How to give prices: said wherever savings are shown without money.
pub const HINT: &str = "no prices: give them to see the savings in money, e.g. \
     --prices cpu=0.031,memory=0.0042,gpu=2.48,currency=USD (per core-, GiB- and GPU-hour)";

/// The note that `unpriced` resources have no price and are left out of `left_out_of` (`COST`,
/// `the cost`), naming the flag that gives the first one; `None` where every one has a price.
pub fn unpriced_note<'a>(
    unpriced: impl IntoIterator<Item = &'a str>,
    left_out_of: &str,
) -> Option<String> {
    let names: Vec<&str> = unpriced.into_iter().collect();
    let first = names.first()?;
    Some(format!(
        "not in {left_out_of}: no price for {} (--prices {first}=...)",
        names.join(", ")
    ))
}

/// The most an hour of one unit may cost: beyond any machine's price, and far from where sums
/// of cents would overflow.
const MAX_PRICE: f64 = 1_000_000.0;

/// Whether `price` may be one: a number from 0 to [`MAX_PRICE`], whoever gives it.
pub fn is_price(price: f64) -> bool {
    (0.0..=MAX_PRICE).contains(&price)
}

/// What an hour of each resource requested costs, in `currency`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    pub currency: Currency,
    /// By resource as Pods request it: `cpu` (per core), `memory` (per GiB), `nvidia.com/gpu`
    /// and other extended resources (per unit).
    pub per_hour: BTreeMap<String, f64>,
}

/// Why a price table is not one, naming the entry and its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PricesError {
    #[error("{entry:?} is not `resource=price`, e.g. `cpu=0.031`")]
    NotAnEntry { entry: String },
    #[error(
        "{resource:?} is not a resource a price can be given for: `cpu`, `memory`, `gpu`, or an \
         extended resource as Pods request it, e.g. `amd.com/gpu`"
    )]
    UnknownResource { resource: String },
    #[error("{resource}={value:?}: a price is a number from 0 to 1000000, e.g. `0.031`")]
    NotAPrice { resource: String, value: String },
    #[error("{value:?} is not a currency: give its ISO 4217 code, e.g. `currency=USD`")]
    NotACurrency { value: String },
    #[error("{resource} is priced twice")]
    Twice { resource: String },
    #[error("no currency: add one, e.g. `currency=USD`")]
    NoCurrency,
    #[error("no price: give at least one, e.g. `cpu=0.031,memory=0.0042,currency=USD`")]
    NoPrice,
}

impl FromStr for PriceTable {
    type Err = PricesError;

    fn from_str(text: &str) -> Result<Self, PricesError> {
        let mut currency = None;
        let mut per_hour = BTreeMap::new();
        for entry in text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
        {
            let Some((key, value)) = entry.split_once('=') else {
                return Err(PricesError::NotAnEntry {
                    entry: entry.into(),
                });
            };
            let (key, value) = (key.trim(), value.trim());
            if key == "currency" {
                let code = Currency::of(value).ok_or_else(|| PricesError::NotACurrency {
                    value: value.into(),
                })?;
                if currency.replace(code).is_some() {
                    return Err(PricesError::Twice {
                        resource: "currency".into(),
                    });
                }
                continue;
            }
            let resource = if key == "gpu" { GPU } else { key };
            if !is_priceable(resource) {
                return Err(PricesError::UnknownResource {
                    resource: key.into(),
                });
            }
            let price = value
                .parse::<f64>()
                .ok()
                .filter(|price| is_price(*price))
                .ok_or_else(|| PricesError::NotAPrice {
                    resource: key.into(),
                    value: value.into(),
                })?;
            if per_hour.insert(resource.to_string(), price).is_some() {
                return Err(PricesError::Twice {
                    resource: resource.into(),
                });
            }
        }
        let currency = currency.ok_or(PricesError::NoCurrency)?;
        if per_hour.is_empty() {
            return Err(PricesError::NoPrice);
        }
        Ok(PriceTable { currency, per_hour })
    }
}

impl fmt::Display for PriceTable {
    /// As it is written: `cpu=0.031,memory=0.0042,nvidia.com/gpu=2.48,currency=USD`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (resource, price) in &self.per_hour {
            write!(f, "{resource}={price},")?;
        }
        write!(f, "currency={}", self.currency)
    }
}

impl PriceTable {
    /// What `hours` of each resource (core-hours, GiB-hours, unit-hours) cost, in cents once;
    /// and the resources among them the table has no price for, which the amount leaves out.
    pub fn cost<'a>(
        &self,
        hours: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> (Money, Vec<&'a str>) {
        let (amount, unpriced) = self.amount(hours);
        (Money::new(cents(amount), self.currency.clone()), unpriced)
    }

    /// This table, with the prices of `more` it has none for where `more` is in the same
    /// currency: OpenCost prices CPU, memory and GPUs, `--prices` may price the rest.
    pub fn or(&self, more: Option<&PriceTable>) -> PriceTable {
        let mut table = self.clone();
        if let Some(more) = more.filter(|more| more.currency == self.currency) {
            for (resource, price) in &more.per_hour {
                table.per_hour.entry(resource.clone()).or_insert(*price);
            }
        }
        table
    }

    /// [`Self::cost`] not rounded yet, in the currency's units: amounts at several tables are
    /// added up first and rounded once.
    pub fn amount<'a>(
        &self,
        hours: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> (f64, Vec<&'a str>) {
        let mut amount = 0.0;
        let mut unpriced = Vec::new();
        for (resource, hours) in hours {
            match self.per_hour.get(resource) {
                Some(price) => amount += hours * price,
                None if hours != 0.0 => unpriced.push(resource),
                None => {}
            }
        }
        (amount, unpriced)
    }
}

#[cfg(test)]
mod tests;
