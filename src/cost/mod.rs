//! What sleeping saves in money: what a pod requests (CPU, memory, GPUs and other extended
//! resources), the prices an hour of each costs (a table a person gives), and amounts in a currency, rounded to cents once, where each object's saving
//! is counted, so that every total is the sum of what its rows show.

pub mod money;
pub mod opencost;
pub mod prices;
pub mod quantity;
pub mod requests;
pub mod resources;
pub mod savings;
pub mod where_ran;

pub use money::{Currency, Money};
pub use prices::{PriceTable, PricesError};
pub use requests::PodRequests;
pub use resources::{GIB, GPU, gpus, is_extended, is_gpu};
