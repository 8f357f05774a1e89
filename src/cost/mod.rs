//! What sleeping saves in money: the prices an hour of each resource requested costs (a table a
//! person gives), and amounts in a currency, rounded to cents once, where each object's saving
//! is counted, so that every total is the sum of what its rows show.

pub mod money;
pub mod prices;
pub mod resources;

pub use money::{Currency, Money};
pub use prices::{PriceTable, PricesError};
pub use resources::{GPU, is_extended, is_gpu};
