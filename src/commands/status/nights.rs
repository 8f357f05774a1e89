//! The nodes around the last night, as the controller recorded them (`scaling/nights.rs`), for
//! `status` and `cronscaler nodes`: how many ran when it began and at its quietest point, by
//! pool, and what the nodes that went offered, in money where prices are given.

use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use serde::Serialize;

use crate::{
    cost::PriceTable,
    figures::amount,
    nodes::nights::{Census, Night, Nights, PoolCount},
    runtime::api_errors::is_status,
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
/// namespace): its last night, `Ok(None)` where none is recorded yet, or why it could not be
/// read.
pub async fn read(client: &Client, namespace: Option<&str>) -> Result<Option<LastNight>, String> {
    let mut refused = Vec::new();
    let places = crate::commands::cluster::controller_namespaces(client, namespace);
    for place in places {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &place);
        match api.get(RECORD).await {
            Ok(map) => {
                let text = (map.data.unwrap_or_default().remove(RECORD_KEY)).unwrap_or_default();
                let nights: Nights = serde_json::from_str(&text).map_err(|error| {
                    format!("ConfigMap {place}/{RECORD} does not read as the nights: {error}")
                })?;
                return Ok(nights.last().map(|night| LastNight {
                    namespace: place,
                    night: night.clone(),
                }));
            }
            Err(error) if is_status(&error, 404) => {}
            Err(error) if is_status(&error, 403) => {
                refused.push(format!("ConfigMap {place}/{RECORD} may not be read (403)"));
            }
            Err(error) => refused.push(format!("ConfigMap {place}/{RECORD}: {error}")),
        }
    }
    match refused.is_empty() {
        true => Ok(None),
        false => Err(refused.join("; ")),
    }
}

/// What the table says of the last night: when it began and ended, the nodes before and at its
/// quietest point by pool, and what the nodes that went offered, worth what at `prices`.
pub fn lines(last: &LastNight, prices: Option<&PriceTable>, now: DateTime<Utc>) -> Vec<String> {
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
        if let Some(prices) = prices {
            let hours = night.quiet_hours(now);
            went_line.push_str(&format!(
                ": {} an hour, {} over the {} h since its quietest point",
                offered.worth(prices, 1.0),
                offered.worth(prices, hours),
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
    prices: Option<&PriceTable>,
    now: DateTime<Utc>,
) -> (String, Option<String>) {
    match read {
        Ok(Some(last)) if last.night.before.total().nodes > 0 => {
            (format!("\n{}\n", lines(last, prices, now).join("\n")), None)
        }
        Ok(_) => (
            String::new(),
            Some(
                "no night recorded with nodes yet: the controller records the nodes from the \
                 first scheduled sleep it sees"
                    .into(),
            ),
        ),
        Err(why) => (
            String::new(),
            Some(format!(
                "the nodes around the last night could not be read: {why} \
                 (--controller-namespace names where the controller runs)"
            )),
        ),
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
    use super::*;
    use crate::schedule::test_support::at;

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
            },
        }
    }

    #[test]
    fn the_night_says_how_many_nodes_went_and_what_they_were_worth_at_the_prices() {
        let prices: PriceTable = "cpu=0.031,memory=0.0042,gpu=2.48,currency=USD"
            .parse()
            .unwrap();
        let lines = lines(
            &night(Some("2026-11-24T07:00:00Z")),
            Some(&prices),
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
        let lines = lines(&night(None), None, at("2026-11-23T23:00:00Z"));
        assert_eq!(
            lines[0],
            "the night that began 2026-11-23T20:00:00Z (still going):"
        );
        assert_eq!(
            lines[3],
            "  7 of 12 nodes went (default 4, gpu 3), offering 28.00 CPU, 112.00 GiB, 3.00 GPU"
        );
    }
}
