//! Lists read page by page, so neither the server nor this process holds one huge response.

use std::future::Future;

use kube::{api::ListParams, core::ObjectList};

/// Every item of a list, asking `page` for one page of at most `limit` after another.
pub async fn all_pages<T, F, Fut>(limit: u32, mut page: F) -> Result<Vec<T>, kube::Error>
where
    T: Clone,
    F: FnMut(ListParams) -> Fut,
    Fut: Future<Output = Result<ObjectList<T>, kube::Error>>,
{
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(limit);
    loop {
        let list = page(params.clone()).await?;
        items.extend(list.items);
        match list.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(items),
        }
    }
}
