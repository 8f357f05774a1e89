//! The nodes around the last night, as the controller recorded them (`scaling/nights.rs`), for
//! `status` and `cronscaler nodes`: how many ran when it began and at its quietest point, by
//! pool, and what the nodes that went offered, in money where prices are given.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use kube::Client;
use serde::Serialize;

use super::priced::Priced;
use crate::{
    commands::cluster::read_kept,
    cost::opencost,
    figures::amount,
    nodes::nights::{Census, Night, Nights, PoolCount},
    scaling::nights::{RECORD, RECORD_KEY},
};

/// The last night recorded, where it was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastNight {
    pub namespace: String,
    #[serde(flatten)]
    pub night: Night,
}

/// The record of the controller in `namespace` (else in `cronscaler`, then the kubeconfig's
/// namespace) and the namespace it was read in: `Ok(None)` where none is recorded yet, or why it
/// could not be read.
pub type Recorded = Result<Option<(String, Nights)>, String>;

/// Reads the record: once, for both the last night and the nodes it names.
pub async fn recorded(client: &Client, namespace: Option<&str>) -> Recorded {
    read_kept(client, namespace, (RECORD, RECORD_KEY), "the nights").await
}

/// The last night of the record of the controller in `namespace` (see [`recorded`]).
pub async fn read(client: &Client, namespace: Option<&str>) -> Result<Option<LastNight>, String> {
    last(&recorded(client, namespace).await)
}

/// The last night of `recorded`.
pub fn last(recorded: &Recorded) -> Result<Option<LastNight>, String> {
    let recorded = recorded.as_ref().map_err(Clone::clone)?;
    // The names of the nodes it began with are the controller's to keep: thousands of them say
    // nothing to a reader.
    Ok(recorded.as_ref().and_then(|(place, nights)| {
        nights.last().map(|night| LastNight {
            namespace: place.clone(),
            night: Night {
                nodes_before: BTreeMap::new(),
                ..night.clone()
            },
        })
    }))
}

/// Every node `recorded` names, with the beginning of the last night that names it (see
/// [`Nights::named_nodes`]). None where it could not be read.
pub fn named_nodes(recorded: &Recorded) -> BTreeMap<String, DateTime<Utc>> {
    match recorded {
        Ok(Some((_, nights))) => nights.named_nodes(),
        _ => BTreeMap::new(),
    }
}

/// What the table says of the last night: when it began and ended, the nodes before and at its
/// quietest point by pool, and what the nodes that went offered, worth what: at each one's own
/// price where OpenCost gives one for every one of them, else by what they offered at `priced`'s
/// table.
pub fn lines(last: &LastNight, priced: &Priced, now: DateTime<Utc>) -> Vec<String> {
    let night = &last.night;
    let at = |instant: DateTime<Utc>| instant.to_rfc3339_opts(SecondsFormat::Secs, true);
    let ended = match night.ended {
        Some(ended) => format!("ended {}", at(ended)),
        None => "still going".to_string(),
    };
    // A look follows the first sleep by seconds; minutes later, the controller was away.
    let counted = match night.counted_at - night.began < chrono::TimeDelta::minutes(2) {
        true => String::new(),
        false => format!(
            ", counted at {} (the controller was not running when it began)",
            at(night.counted_at)
        ),
    };
    let before = night.before.total().nodes;
    let went = night.before.beyond(&night.quietest);
    // Net of the pools that grew: nodes one pool lost and another gained did not go.
    let offered = night.before.total().beyond(&night.quietest.total());
    let mut lines = vec![
        format!("the night that began {} ({ended}):", at(night.began)),
        format!(
            "  nodes before it: {before}{}{counted}",
            by_pool(&night.before)
        ),
        format!(
            "  at its quietest, {}: {}{}",
            at(night.quietest_at),
            night.quietest.total().nodes,
            by_pool(&night.quietest)
        ),
    ];
    let mut went_line = format!(
        "  {} of {before} nodes went{}",
        offered.nodes,
        by_pool(&went)
    );
    if offered.nodes > 0 {
        went_line.push_str(&format!(", offering {}", offered_text(&offered)));
        if let Some(prices) = &priced.table {
            let hours = night.quiet_hours(now);
            // By name only where no pool grew: those are the nodes that went, net.
            let own = |hours| {
                let named = night.went.len() == offered.nodes as usize;
                let names = named.then_some(night.went.keys()).into_iter().flatten();
                opencost::nodes_worth(names, &priced.per_node, &prices.currency, hours)
                    .filter(|_| named)
            };
            let (hourly, total, each) = match (own(1.0), own(hours)) {
                (Some(hourly), Some(total)) => (hourly, total, " at each one's own price"),
                _ => (offered.worth(prices, 1.0), offered.worth(prices, hours), ""),
            };
            went_line.push_str(&format!(
                ": {hourly} an hour{each}, {total} over the {} h since its quietest point",
                amount(Some(hours))
            ));
        }
    }
    lines.push(went_line);
    lines
}

/// What was read of the last night: a few lines below a table, where a night with nodes was
/// recorded; else a note for standard error, which leaves what is printed as it was.
pub fn render(
    read: &Result<Option<LastNight>, String>,
    priced: &Priced,
    now: DateTime<Utc>,
) -> (String, Option<String>) {
    match said(read, priced, now) {
        Ok(lines) => (format!("\n{}\n", lines.join("\n")), None),
        Err(note) => (String::new(), Some(note)),
    }
}

/// The lines of the last night, where one with nodes was recorded; else why there are none.
pub fn said(
    read: &Result<Option<LastNight>, String>,
    priced: &Priced,
    now: DateTime<Utc>,
) -> Result<Vec<String>, String> {
    match read {
        Ok(Some(last)) if last.night.before.total().nodes > 0 => Ok(lines(last, priced, now)),
        Ok(_) => Err(
            "no night recorded with nodes yet: the controller records the nodes from \
                      the first scheduled sleep it sees"
                .into(),
        ),
        Err(why) => Err(format!(
            "the nodes around the last night could not be read: {why} \
             (--controller-namespace names where the controller runs)"
        )),
    }
}

/// An output of `-o json` with the last night beside it, and where its prices come from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WithLastNight<'a, T> {
    #[serde(flatten)]
    pub shown: &'a T,
    pub last_night: Option<&'a LastNight>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_night_unread: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prices_from: Option<&'a str>,
}

impl<'a, T> WithLastNight<'a, T> {
    pub fn new(
        shown: &'a T,
        read: &'a Result<Option<LastNight>, String>,
        prices_from: Option<&'a str>,
    ) -> Self {
        Self {
            shown,
            last_night: read.as_ref().ok().and_then(Option::as_ref),
            last_night_unread: read.as_ref().err().map(String::as_str),
            prices_from,
        }
    }
}

/// The line that says where the prices come from, if any.
pub fn prices_line(from: Option<&str>) -> String {
    from.map(|from| format!("prices: {from}\n"))
        .unwrap_or_default()
}

fn offered_text(count: &PoolCount) -> String {
    let mut text = format!(
        "{} CPU, {} GiB",
        amount(Some(count.cpu)),
        amount(Some(count.memory_gib))
    );
    if count.gpus > 0.0 {
        text.push_str(&format!(", {} GPU", amount(Some(count.gpus))));
    }
    text
}

/// ` (default 8, gpu 4)`, where there is more than one pool or one named.
fn by_pool(census: &Census) -> String {
    let pools: Vec<String> = (census.0.iter())
        .filter(|(_, count)| count.nodes > 0)
        .map(|(pool, count)| format!("{pool} {}", count.nodes))
        .collect();
    match pools.is_empty() {
        true => String::new(),
        false => format!(" ({})", pools.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::{cost::PriceTable, schedule::test_support::at};

    fn table() -> Priced {
        let prices: PriceTable = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD"
            .parse()
            .unwrap();
        Priced {
            table: Some(prices),
            ..Priced::default()
        }
    }

    fn census(pools: &[(&str, u32, f64)]) -> Census {
        Census(
            (pools.iter())
                .map(|(pool, nodes, gpus)| {
                    let count = PoolCount {
                        nodes: *nodes,
                        cpu: 4.0 * f64::from(*nodes),
                        memory_gib: 16.0 * f64::from(*nodes),
                        gpus: *gpus,
                    };
                    (pool.to_string(), count)
                })
                .collect(),
        )
    }

    fn night(ended: Option<&str>) -> LastNight {
        LastNight {
            namespace: "cronscaler".into(),
            night: Night {
                began: at("2026-11-23T20:00:00Z"),
                counted_at: at("2026-11-23T20:00:00Z"),
                before: census(&[("default", 8, 0.0), ("gpu", 4, 4.0)]),
                quietest_at: at("2026-11-23T21:00:00Z"),
                quietest: census(&[("default", 4, 0.0), ("gpu", 1, 1.0)]),
                ended: ended.map(at),
                nodes_before: BTreeMap::new(),
                went: (["d4", "d5", "d6", "d7", "g1", "g2", "g3"].into_iter())
                    .map(|name| (name.to_string(), name[..1].to_string()))
                    .collect(),
                slept: BTreeSet::from(["shop".to_string()]),
                woke: BTreeSet::new(),
                namespaces: 0,
                pending: false,
            },
        }
    }

    #[test]
    fn the_night_says_how_many_nodes_went_and_what_they_were_worth_at_the_prices() {
        let lines = lines(
            &night(Some("2026-11-24T07:00:00Z")),
            &table(),
            at("2026-11-28T00:00:00Z"),
        );
        assert_eq!(
            lines,
            [
                "the night that began 2026-11-23T20:00:00Z (ended 2026-11-24T07:00:00Z):",
                "  nodes before it: 12 (default 8, gpu 4)",
                "  at its quietest, 2026-11-23T21:00:00Z: 5 (default 4, gpu 1)",
                // 28 CPU × 0.031 + 112 GiB × 0.0042 + 3 GPU × 2.48 = 8.7784 an hour; × 10 h.
                "  7 of 12 nodes went (default 4, gpu 3), offering 28.00 CPU, 112.00 GiB, 3.00 \
                 GPU: $8.78 an hour, $87.78 over the 10.00 h since its quietest point",
            ]
        );
    }

    #[test]
    fn without_prices_the_nodes_that_went_are_said_in_what_they_offered() {
        let lines = lines(&night(None), &Priced::default(), at("2026-11-23T23:00:00Z"));
        assert_eq!(
            lines[0],
            "the night that began 2026-11-23T20:00:00Z (still going):"
        );
        assert_eq!(
            lines[3],
            "  7 of 12 nodes went (default 4, gpu 3), offering 28.00 CPU, 112.00 GiB, 3.00 GPU"
        );
    }

    #[test]
    fn with_opencost_the_nodes_that_went_are_worth_each_its_own_price() {
        let night = night(Some("2026-11-24T07:00:00Z"));
        let mut priced = table();
        priced.per_node = (night.night.went.keys())
            .map(|name| {
                (
                    name.clone(),
                    if name.starts_with('g') { 1.006 } else { 0.192 },
                )
            })
            .collect();
        let said = lines(&night, &priced, at("2026-11-28T00:00:00Z"));
        // 4 × 0.192 + 3 × 1.006 = 3.786 an hour; × 10 h.
        assert!(
            said[3].ends_with(": $3.79 an hour at each one's own price, $37.86 over the 10.00 h since its quietest point"),
            "{}",
            said[3]
        );
        // One of them without a price of its own: all by what they offered, at the table.
        priced.per_node.remove("g3");
        let said = lines(&night, &priced, at("2026-11-28T00:00:00Z"));
        assert!(
            said[3].contains(": $8.78 an hour, $87.78 over"),
            "{}",
            said[3]
        );
    }
}
