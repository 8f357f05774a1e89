//! What any scalable kind is to the controller, whatever looks at it: the kind table
//! ([`kinds`]), a target and its state ([`target`]), the API of any kind ([`objects`]), what the
//! watches keep of an object ([`watched_object`], [`last_seen`]), who wrote which field
//! ([`writers`]), and every read and patch of a workload ([`patch`]).

pub mod kinds;
pub mod last_seen;
pub mod objects;
pub mod patch;
pub mod target;
pub mod watched_object;
pub mod writers;

#[cfg(test)]
pub(crate) mod test_support;
