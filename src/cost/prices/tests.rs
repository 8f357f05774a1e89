use proptest::prelude::*;

use super::*;

fn table(text: &str) -> PriceTable {
    text.parse()
        .unwrap_or_else(|error| panic!("{text:?} is a price table: {error}"))
}

#[test]
fn a_table_reads_cpu_memory_gpu_extended_resources_and_a_currency() {
    let prices = table("cpu=0.031, memory=0.0042,gpu=2.48,amd.com/gpu=1.9,currency=eur");
    assert_eq!(prices.currency.code(), "EUR");
    assert_eq!(
        prices.per_hour,
        BTreeMap::from([
            ("amd.com/gpu".to_string(), 1.9),
            ("cpu".to_string(), 0.031),
            ("memory".to_string(), 0.0042),
            (GPU.to_string(), 2.48),
        ])
    );
    assert_eq!(
        prices.to_string(),
        "amd.com/gpu=1.9,cpu=0.031,memory=0.0042,nvidia.com/gpu=2.48,currency=EUR"
    );
    assert_eq!(table(&prices.to_string()), prices, "read back as written");
}

#[test]
fn a_bad_table_names_the_entry_and_its_value() {
    let refused = |text: &str| match text.parse::<PriceTable>() {
        Ok(prices) => panic!("{text:?} read as {prices:?}"),
        Err(error) => error.to_string(),
    };
    assert_eq!(
        refused("cpu=0.03,disk=1,currency=USD"),
        "\"disk\" is not a resource a price can be given for: `cpu`, `memory`, `gpu`, or an \
         extended resource as Pods request it, e.g. `amd.com/gpu`"
    );
    assert_eq!(
        refused("cpu=cheap,currency=USD"),
        "cpu=\"cheap\": a price is a number from 0 to 1000000, e.g. `0.031`"
    );
    assert_eq!(
        refused("cpu=-1,currency=USD"),
        "cpu=\"-1\": a price is a number from 0 to 1000000, e.g. `0.031`"
    );
    assert_eq!(
        refused("cpu=NaN,currency=USD"),
        "cpu=\"NaN\": a price is a number from 0 to 1000000, e.g. `0.031`"
    );
    assert_eq!(
        refused("cpu=0.03"),
        "no currency: add one, e.g. `currency=USD`"
    );
    assert_eq!(
        refused("currency=USD"),
        "no price: give at least one, e.g. `cpu=0.031,memory=0.0042,currency=USD`"
    );
    assert_eq!(
        refused("cpu=0.03,currency=dollars"),
        "\"dollars\" is not a currency: give its ISO 4217 code, e.g. `currency=USD`"
    );
    assert_eq!(
        refused("gpu=2,nvidia.com/gpu=3,currency=USD"),
        "nvidia.com/gpu is priced twice"
    );
    assert_eq!(
        refused("cpu,currency=USD"),
        "\"cpu\" is not `resource=price`, e.g. `cpu=0.031`"
    );
    assert!(refused("hugepages-2Mi=1,currency=USD").starts_with("\"hugepages-2Mi\" is not"));
    assert!(refused("kubernetes.io/x=1,currency=USD").starts_with("\"kubernetes.io/x\""));
}

#[test]
fn a_cost_is_in_cents_and_names_what_has_no_price() {
    let prices = table("cpu=0.031,memory=0.0042,gpu=2.48,currency=USD");
    // 10 core-hours, 40 GiB-hours, 3 GPU-hours: 0.31 + 0.168 + 7.44 = 7.918.
    let (money, unpriced) = prices.cost([
        ("cpu", 10.0),
        ("memory", 40.0),
        (GPU, 3.0),
        ("amd.com/gpu", 2.0),
        ("example.com/fpga", 0.0),
    ]);
    assert_eq!(money.to_string(), "$7.92");
    assert_eq!(
        unpriced,
        ["amd.com/gpu"],
        "a resource withheld for no hours is no gap"
    );
    let (nothing, unpriced) = prices.cost([]);
    assert_eq!((nothing.cents, unpriced.len()), (0, 0));
}

proptest! {
    /// Whatever a person types, the table is read or refused with a reason: never a panic.
    #[test]
    fn any_text_is_read_or_refused(text in ".{0,80}") {
        let _ = text.parse::<PriceTable>();
    }

    /// More hours never cost less.
    #[test]
    fn a_cost_grows_with_the_hours(
        cpu in 0.0_f64..10.0, hours in 0.0_f64..10_000.0, more in 0.0_f64..10_000.0,
    ) {
        let prices = table(&format!("cpu={cpu},currency=USD"));
        let (less, _) = prices.cost([("cpu", hours)]);
        let (most, _) = prices.cost([("cpu", hours + more)]);
        prop_assert!(less.cents <= most.cents);
    }
}
