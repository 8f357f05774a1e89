//! The owners watched (Argo CD Applications, Flux Kustomizations and HelmReleases), each kept as
//! an [`OwnerState`], so that a look at a workload finds its owner, and whether the owner
//! confirms deploying it, without a request.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, PoisonError, RwLock},
};

use kube::{ResourceExt, core::Object};
use serde_json::Value;

use super::{
    Owner, Tool,
    owner::{ARGOCD_NAMESPACE, Claim, Deployed, Inventory, OwnerState, claim},
};
use crate::workloads::target::ScaleTarget;

/// An owner as its watch delivers it. Of its status, which can be large (an Application's has
/// every resource's health), only what it deploys is kept ([`Inventory`]).
pub type OwnerObject = Object<Value, Value>;

/// The owner `object` of `tool` is.
pub fn owner_of(tool: Tool, object: &OwnerObject) -> Owner {
    Owner {
        tool,
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
    }
}

/// Cheap to clone; every clone shares the same owners.
#[derive(Clone, Debug, Default)]
pub struct Owners {
    states: Arc<RwLock<HashMap<Owner, OwnerState>>>,
}

impl Owners {
    /// Keeps `object`, an owner of `tool`. Returns it, and whether anything the controller
    /// reads of it changed (an Application's status, written often, changes nothing here).
    pub fn apply(&self, tool: Tool, object: &OwnerObject) -> (Owner, bool) {
        let status = object.status.as_ref().unwrap_or(&Value::Null);
        self.keep(
            owner_of(tool, object),
            OwnerState::of(tool, &object.metadata, &object.spec, status),
        )
    }

    /// Keeps `object`, an owner of `tool` read from a file for `plan -f`: no controller has
    /// said what it deploys, so its workloads' marks are taken at their word.
    pub fn apply_manifest(&self, tool: Tool, object: &OwnerObject) {
        let mut state = OwnerState::of(tool, &object.metadata, &object.spec, &Value::Null);
        state.inventory = Inventory::AsMarked;
        self.keep(owner_of(tool, object), state);
    }

    fn keep(&self, owner: Owner, state: OwnerState) -> (Owner, bool) {
        let previous = self.write().insert(owner.clone(), state.clone());
        let changed = previous.is_none_or(|previous| previous.differs_from(&state));
        (owner, changed)
    }

    /// Takes in every owner `other` holds.
    pub fn absorb(&self, other: &Owners) {
        let other = other.read().clone();
        self.write().extend(other);
    }

    pub fn forget(&self, owner: &Owner) {
        self.write().remove(owner);
    }

    /// Keeps only `listed` of `tool`'s owners, after a (re)list.
    pub fn retain_listed(&self, tool: Tool, listed: &HashSet<Owner>) {
        self.write()
            .retain(|owner, _| owner.tool != tool || listed.contains(owner));
    }

    pub fn get(&self, owner: &Owner) -> Option<OwnerState> {
        self.read().get(owner).cloned()
    }

    /// The owner `claim` names, with its state where it is watched. Argo CD's own Namespace
    /// is where an unqualified Application is looked for first, then the only one of its name
    /// elsewhere. A weak claim (Helm's instance label) names an owner only where one is watched.
    pub fn resolve(&self, claim: &Claim) -> Option<(Owner, Option<OwnerState>)> {
        let states = self.read();
        let named = |namespace: &str| Owner {
            tool: claim.tool,
            namespace: namespace.to_string(),
            name: claim.name.clone(),
        };
        let owner = match &claim.namespace {
            Some(namespace) => named(namespace),
            None => {
                let default = named(ARGOCD_NAMESPACE);
                if states.contains_key(&default) {
                    default
                } else {
                    let mut elsewhere = states
                        .keys()
                        .filter(|owner| owner.tool == claim.tool && owner.name == claim.name);
                    match (elsewhere.next(), elsewhere.next()) {
                        (Some(only), None) => only.clone(),
                        _ => default,
                    }
                }
            }
        };
        let state = states.get(&owner).cloned();
        if claim.weak && state.is_none() {
            return None;
        }
        Some((owner, state))
    }

    /// The owner a workload with these annotations and labels claims by its marks, confirmed
    /// or not.
    pub fn claimed_by(
        &self,
        annotations: &BTreeMap<String, String>,
        labels: &BTreeMap<String, String>,
    ) -> Option<Owner> {
        let (owner, _) = self.resolve(&claim(annotations, labels)?)?;
        Some(owner)
    }

    /// The owner that deploys `target`, seen with these annotations and labels: the one its
    /// marks claim, where that owner's controller lists it.
    pub fn deployer_of(
        &self,
        target: &ScaleTarget,
        annotations: &BTreeMap<String, String>,
        labels: &BTreeMap<String, String>,
    ) -> Option<Owner> {
        let claim = claim(annotations, labels)?;
        let (owner, state) = self.resolve(&claim)?;
        (state?.inventory.lists(&Deployed::of(target, &claim))).then_some(owner)
    }

    /// The owners with a record of a pause on them.
    pub fn paused(&self) -> Vec<Owner> {
        self.read()
            .iter()
            .filter(|(_, state)| state.record.is_some())
            .map(|(owner, _)| owner.clone())
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Owner, OwnerState>> {
        self.states.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Owner, OwnerState>> {
        self.states.write().unwrap_or_else(PoisonError::into_inner)
    }
}
