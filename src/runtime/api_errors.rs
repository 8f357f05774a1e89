//! What an API server's error answer means for the work that got it: the server could not
//! serve now (the work waits for it, see [`super::outage`]), or it answered about this request.

use kube::core::Status;

/// A connection that failed or broke, or the API server itself saying it cannot serve now.
pub fn server_unavailable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status_unavailable(status),
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// Too many requests (429), unavailable (503) or timed out (504), from the API server itself.
/// Any other answer, a 500 included, is about the request: an admission webhook that failed
/// (500) or refused it, whatever code it chose, answers for that one object, and the server
/// answering the next request says nothing about that object's.
pub fn status_unavailable(status: &Status) -> bool {
    matches!(status.code, 429 | 503 | 504) && !status.message.starts_with("admission webhook ")
}

/// True when the API server answered with this HTTP status code.
pub fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            message: message.into(),
            ..Status::default()
        }))
    }

    #[test]
    fn only_the_server_itself_being_busy_or_away_is_an_outage() {
        let webhook_failed: Status = serde_json::from_str(include_str!(
            "../../tests/fixtures/apiserver/patch-deployment-webhook-500.json"
        ))
        .unwrap();
        assert!(!server_unavailable(&kube::Error::Api(Box::new(
            webhook_failed
        ))));
        assert!(!server_unavailable(&answer(
            503,
            "admission webhook \"quota.example.com\" denied the request: try again later"
        )));
        assert!(server_unavailable(&answer(429, "Too many requests")));
        assert!(server_unavailable(&answer(
            503,
            "the server is currently unable to handle the request"
        )));
        assert!(server_unavailable(&answer(
            504,
            "Timeout: request did not complete within requested timeout"
        )));
    }
}
