//! A record the controller keeps for itself in a ConfigMap of its own namespace, as JSON under
//! one key: the nights (`cronscaler-nights`) and the ledger of savings (`cronscaler-savings`).
//! Read back at every look, so a restart or a new leader goes on with it; applied server-side,
//! guarded by the resourceVersion it was read at where one was.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    error::Error,
    runtime::{CONTROLLER_NAME, key::ObjectKey, writes::Writes},
};

/// Where one record is kept.
pub struct Kept<'a> {
    pub client: &'a Client,
    /// The controller's namespace.
    pub namespace: &'a str,
    /// The ConfigMap's name, and the key of its data the record is under.
    pub name: &'static str,
    pub key: &'static str,
}

/// What a write of a record is made over.
pub enum Guard {
    /// Whatever is kept: one writer decides it whole.
    Nothing,
    /// The record as read at this resourceVersion, or, where none was read, none at all: should
    /// another have written it since, the write fails (409), and is made again on what it
    /// wrote.
    Read(Option<String>),
}

/// The most a record may weigh: a ConfigMap holds 1 MiB.
const MOST_BYTES: usize = 900 * 1024;

/// A record as read: what it holds (`None` where the ConfigMap or its key is not there, or
/// where it does not read: the reason), and the resourceVersion it was read at.
pub struct Read<T> {
    pub record: Option<Result<T, serde_json::Error>>,
    pub version: Option<String>,
}

/// Whether `record` may be written: it is at most [`MOST_BYTES`] as JSON.
pub fn fits<T: Serialize>(record: &T) -> bool {
    serde_json::to_string(record).is_ok_and(|text| text.len() <= MOST_BYTES)
}

impl Kept<'_> {
    fn api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    pub fn object(&self) -> ObjectKey {
        ObjectKey::new(self.namespace, self.name)
    }

    pub async fn read<T: DeserializeOwned>(&self) -> Result<Read<T>, Error> {
        let kept = (self.api().get_opt(self.name).await).map_err(Error::api(
            "reading",
            "ConfigMap",
            &self.object(),
        ))?;
        let version = kept
            .as_ref()
            .and_then(|map| map.metadata.resource_version.clone());
        let text = kept.and_then(|map| map.data?.remove(self.key));
        Ok(Read {
            record: text.map(|text| serde_json::from_str(&text)),
            version,
        })
    }

    /// Writes `record`, `doing` what (for the log and a dry run), over what `guard` says.
    pub async fn write<T: Serialize>(
        &self,
        writes: &Writes,
        doing: &str,
        record: &T,
        guard: Guard,
    ) -> Result<(), Error> {
        let text = serde_json::to_string(record).map_err(|error| Error::Unwritable {
            object: self.object(),
            reason: error.to_string(),
        })?;
        if text.len() > MOST_BYTES {
            return Err(Error::Unwritable {
                object: self.object(),
                reason: format!(
                    "{} bytes, over the {MOST_BYTES} a ConfigMap may hold",
                    text.len()
                ),
            });
        }
        let (version, create) = match guard {
            Guard::Nothing => (None, false),
            Guard::Read(version) => (version.clone(), version.is_none()),
        };
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.into()),
                resource_version: version,
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(self.key.to_string(), text)])),
            ..ConfigMap::default()
        };
        let what = format!("{doing} in ConfigMap {}", self.object());
        let api = self.api();
        let made = match create {
            // Made, not applied: two leaders making it at once, one fails.
            true => {
                let params = PostParams {
                    field_manager: Some(CONTROLLER_NAME.into()),
                    ..PostParams::default()
                };
                writes.make(what, api.create(&params, &map)).await.map(drop)
            }
            false => {
                let params = PatchParams::apply(CONTROLLER_NAME).force();
                (writes
                    .make(what, api.patch(self.name, &params, &Patch::Apply(&map)))
                    .await)
                    .map(drop)
            }
        };
        made.map_err(Error::api("writing", "ConfigMap", &self.object()))
    }
}
