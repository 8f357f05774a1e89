//! A Prometheus for tests: each query answered as the test says, over HTTP on loopback; and a
//! target's `/metrics`, as OpenCost serves its own.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::prometheus::Prometheus;

/// A Prometheus that answers each query with the vector `answer` gives it (JSON, e.g.
/// `[{"metric":{},"value":[1,"3"]}]`), or refuses it with the error `answer` gives.
pub async fn prometheus(
    answer: impl Fn(&str) -> Result<String, String> + Send + Sync + 'static,
) -> Prometheus {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = vec![0u8; 64 * 1024];
            let read = stream.read(&mut request).await.unwrap_or_default();
            let head = String::from_utf8_lossy(&request[..read]);
            let target = head.split(' ').nth(1).unwrap_or_default();
            let query =
                (form_urlencoded::parse(target.split('?').nth(1).unwrap_or_default().as_bytes()))
                    .find(|(name, _)| name == "query")
                    .map(|(_, query)| query.into_owned())
                    .unwrap_or_default();
            let (status, body) = match answer(&query) {
                Ok(result) => (
                    "200 OK",
                    format!(r#"{{"status":"success","data":{{"resultType":"vector","result":{result}}}}}"#),
                ),
                Err(error) => (
                    "422 Unprocessable Entity",
                    serde_json::json!({"status": "error", "errorType": "execution", "error": error})
                        .to_string(),
                ),
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    Prometheus::new(&url)
}

/// The address of a target whose `/metrics` (any path) shows `text`, in chunks of 100 bytes,
/// and how many times it was read.
pub async fn metrics_counted(text: String) -> (String, impl Fn() -> usize) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = vec![0u8; 64 * 1024];
            let _ = stream.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                text.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            for chunk in text.as_bytes().chunks(100) {
                let _ = stream.write_all(chunk).await;
                let _ = stream.flush().await;
            }
        }
    });
    (url, move || asked.load(std::sync::atomic::Ordering::SeqCst))
}

/// The address of a target whose `/metrics` shows `text`.
pub async fn metrics(text: String) -> String {
    metrics_counted(text).await.0
}
