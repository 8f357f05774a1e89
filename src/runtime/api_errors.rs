//! What an API server's error answer means for the work that got it: the server could not
//! serve now (the work waits for it, see [`super::outage`]), or it answered about this request.

/// A connection that failed or broke, or a server that is overloaded or starting (5xx, 429).
pub fn server_unavailable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500 || status.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// True when the API server answered with this HTTP status code.
pub fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}
