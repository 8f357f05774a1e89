//! Files committed beside the code that are generated from it (the CRD manifests): a test fails
//! when one is stale, and `CRONSCALER_BLESS=1` rewrites it.

/// Asserts the repository's `file` holds `generated`, rewriting it first under
/// `CRONSCALER_BLESS=1`.
pub fn assert_committed(file: &str, generated: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("CRONSCALER_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    assert!(
        std::fs::read_to_string(&path).unwrap_or_default() == generated,
        "{file} is stale: regenerate it with `CRONSCALER_BLESS=1 cargo test --lib`"
    );
}
