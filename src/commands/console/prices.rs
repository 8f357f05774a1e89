//! The prices the console shows money by: OpenCost's where the Prometheus of `--prometheus-url`
//! has them (first found wins), else `--prices`, as `status` takes them. Read again every
//! [`FRESH`] at most, whoever asks: prices change by the hour, not by the page.

use std::{sync::Arc, time::Duration};

use chrono::Utc;
use kube::Client;

use crate::{
    activity::opencost::Source,
    commands::{
        cli::OpenCost,
        status::{
            nights,
            priced::{self, Priced},
        },
    },
    cost::PriceTable,
    runtime::fresh::Fresh,
};

/// How long prices read are shown.
pub const FRESH: Duration = Duration::from_secs(300);

/// How long prices not read are shown (the table given, or none) before they are asked again.
const FAILED_FOR: Duration = Duration::from_secs(30);

/// How long OpenCost's prices may take to read: the page goes on with `--prices` after that.
const READ_WITHIN: Duration = Duration::from_secs(5);

pub struct Prices {
    client: Client,
    /// The controller's namespace, where its record of the nodes around each night is.
    controller: Option<String>,
    /// Where OpenCost's prices are read, one for every read: what its own metrics showed of the
    /// nodes gone since prices them.
    source: Option<Source>,
    table: Option<PriceTable>,
    last: Fresh<Arc<Priced>>,
}

impl Prices {
    pub fn new(
        (client, controller): (Client, Option<String>),
        opencost: OpenCost,
        table: Option<PriceTable>,
    ) -> Self {
        let source = opencost.source();
        if let Some(own) = source.as_ref().and_then(|source| source.own.clone()) {
            tokio::spawn(own.keep_reading());
        }
        Self {
            client,
            controller,
            source,
            table,
            last: Fresh::default(),
        }
    }

    /// The prices now: OpenCost's means and each node's price where found, else the table.
    pub async fn now(&self) -> Arc<Priced> {
        if self.source.is_none() {
            return Arc::new(Priced::given(self.table.as_ref()));
        }
        let shown_for = |priced: &Arc<Priced>| {
            if priced.from_opencost {
                FRESH
            } else {
                FAILED_FOR
            }
        };
        self.last.get(shown_for, || self.read()).await
    }

    async fn read(&self) -> Arc<Priced> {
        let known = async {
            let recorded = nights::recorded(&self.client, self.controller.as_deref()).await;
            priced::read_known_nodes(&self.client, &recorded).await
        };
        let source = self.source.as_ref();
        let read = priced::prices(known, source, self.table.as_ref(), Utc::now());
        let priced = match tokio::time::timeout(READ_WITHIN, read).await {
            Ok(priced) => priced,
            Err(_) => Priced {
                from: Some(format!(
                    "OpenCost's prices were not read within {}",
                    crate::duration::spoken(READ_WITHIN)
                )),
                ..Priced::given(self.table.as_ref())
            },
        };
        Arc::new(priced)
    }
}
