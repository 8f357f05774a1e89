//! JSON patches of an object's `cronscaler.dev/` annotations, each guarded by a `test` that an
//! annotation still holds what was read: of several writers racing (requests, replicas, people,
//! the controller), one wins and the others' patches fail whole (422), writing nothing.

use std::collections::BTreeMap;

use json_patch::{
    AddOperation, Patch, PatchOperation, RemoveOperation, TestOperation, jsonptr::PointerBuf,
};
use serde_json::Value;

fn path(key: &str) -> PointerBuf {
    PointerBuf::from_tokens(["metadata", "annotations", key])
}

/// A test that `key` still holds what `annotations` read; absent reads as null, which is how
/// the API server reads a `test` of an absent key.
pub fn still(annotations: &BTreeMap<String, String>, key: &str) -> PatchOperation {
    PatchOperation::Test(TestOperation {
        path: path(key),
        value: annotations
            .get(key)
            .map_or(Value::Null, |read| read.clone().into()),
    })
}

/// A test that the object has no annotations at all.
pub fn annotations_absent() -> PatchOperation {
    PatchOperation::Test(TestOperation {
        path: PointerBuf::from_tokens(["metadata", "annotations"]),
        value: Value::Null,
    })
}

/// Sets the annotations of an object that has none to `map`.
pub fn add_annotations(map: Value) -> PatchOperation {
    PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(["metadata", "annotations"]),
        value: map,
    })
}

/// Sets `key` to `value`.
pub fn add(key: &str, value: String) -> PatchOperation {
    PatchOperation::Add(AddOperation {
        path: path(key),
        value: value.into(),
    })
}

/// Takes `key` away; the patch fails if it is absent.
pub fn remove(key: &str) -> PatchOperation {
    PatchOperation::Remove(RemoveOperation { path: path(key) })
}

/// Takes `key` away only while it holds `value`: one set anew meanwhile stays.
pub fn remove_if_still(key: &str, value: &str) -> Patch {
    Patch(vec![
        PatchOperation::Test(TestOperation {
            path: path(key),
            value: value.into(),
        }),
        remove(key),
    ])
}
