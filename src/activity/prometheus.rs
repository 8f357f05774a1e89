//! Counting with Prometheus: one instant query over its HTTP API, with a timeout, whose answer
//! is summed to one number. A query that matches no series counts 0, which says that nobody
//! used a Namespace only where a second query shows that the source was counting (see
//! [`super::query`]).

use std::{collections::BTreeMap, time::Duration};

use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde::Deserialize;
use serde_json::Value;

use crate::duration::spoken;

/// The longest a count waits for Prometheus.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of an answer read: an instant query summed to one series is a few hundred bytes.
const MAX_ANSWER: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum CountError {
    #[error("Prometheus at {url} did not answer within {}", spoken(QUERY_TIMEOUT))]
    TimedOut { url: String },
    #[error("Prometheus at {url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Prometheus at {url} answered {status}: {reason}")]
    Refused {
        url: String,
        status: StatusCode,
        reason: String,
    },
    #[error("Prometheus at {url} answered what is not a query's result: {reason}")]
    Unreadable { url: String, reason: String },
    #[error("Prometheus at {url} answered more than {} KiB", MAX_ANSWER / 1024)]
    TooLarge { url: String },
}

/// Prometheus's HTTP API at `--prometheus-url`.
#[derive(Clone)]
pub struct Prometheus {
    url: String,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl Prometheus {
    /// Prometheus at `url` (`http://prometheus.monitoring:9090`, a path prefix kept).
    pub fn new(url: &str) -> Self {
        Self {
            url: url.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// The sum of what `query` gives now.
    pub async fn count(&self, query: &str) -> Result<f64, CountError> {
        Ok(self
            .finite(query)
            .await?
            .iter()
            .map(|(_, value)| value)
            .sum())
    }

    /// The first sample `query` gives now, if any: an aggregate's one value.
    pub async fn value(&self, query: &str) -> Result<Option<f64>, CountError> {
        Ok(self.finite(query).await?.first().map(|(_, value)| *value))
    }

    /// What `query` gives now, every sample a number: a NaN or an infinity is no count.
    async fn finite(&self, query: &str) -> Result<Vec<(Value, f64)>, CountError> {
        let samples = self.samples(query).await?;
        match samples.iter().find(|(_, value)| !value.is_finite()) {
            Some((_, value)) => Err(CountError::Unreadable {
                url: self.url.clone(),
                reason: format!("{value} is no count"),
            }),
            None => Ok(samples),
        }
    }

    /// Whether `query` gives any sample now.
    pub async fn shows(&self, query: &str) -> Result<bool, CountError> {
        Ok(!self.samples(query).await?.is_empty())
    }

    /// What `query` gives now, by the value of each series' `label` (a series without it, or
    /// whose value is a NaN or an infinity, is left out: not the others with it).
    pub async fn by_label(
        &self,
        query: &str,
        label: &str,
    ) -> Result<BTreeMap<String, f64>, CountError> {
        Ok((self.samples(query).await?.into_iter())
            .filter(|(_, value)| value.is_finite())
            .filter_map(|(metric, value)| Some((metric[label].as_str()?.to_string(), value)))
            .collect())
    }

    async fn samples(&self, query: &str) -> Result<Vec<(Value, f64)>, CountError> {
        match tokio::time::timeout(QUERY_TIMEOUT, self.ask(query)).await {
            Ok(answer) => answer,
            Err(_) => Err(CountError::TimedOut {
                url: self.url.clone(),
            }),
        }
    }

    /// The URL a count is asked of, for what is said of its answers.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn ask(&self, query: &str) -> Result<Vec<(Value, f64)>, CountError> {
        let unreachable = |reason: String| CountError::Unreachable {
            url: self.url.clone(),
            reason,
        };
        let encoded: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", query)
            .finish();
        let uri: Uri = format!("{}/api/v1/query?{encoded}", self.url)
            .parse()
            .map_err(|error: http::uri::InvalidUri| unreachable(error.to_string()))?;
        let request = Request::get(uri)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::new())
            .map_err(|error| unreachable(error.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| unreachable(error.to_string()))?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(
                |error| match error.is::<http_body_util::LengthLimitError>() {
                    true => CountError::TooLarge {
                        url: self.url.clone(),
                    },
                    false => unreachable(error.to_string()),
                },
            )?
            .to_bytes();
        read_answer(&body).map_err(|reason| {
            if status.is_success() {
                CountError::Unreadable {
                    url: self.url.clone(),
                    reason,
                }
            } else {
                CountError::Refused {
                    url: self.url.clone(),
                    status,
                    reason,
                }
            }
        })
    }
}

/// An answer of `/api/v1/query`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: Value,
}

/// An answer's samples, each with its series' labels: a vector's (maybe none) or a scalar's.
fn read_answer(body: &[u8]) -> Result<Vec<(Value, f64)>, String> {
    let answer: Answer = serde_json::from_slice(body).map_err(|error| error.to_string())?;
    if answer.status != "success" {
        return Err(answer.error.unwrap_or(answer.status));
    }
    let data = answer.data.ok_or("no data")?;
    let sample = |value: &Value| -> Result<f64, String> {
        value[1]
            .as_str()
            .and_then(|text| text.parse::<f64>().ok())
            .ok_or_else(|| format!("{value} is no sample"))
    };
    match data.result_type.as_str() {
        "vector" => (data.result.as_array().ok_or("a vector that is no list")?)
            .iter()
            .map(|series| Ok((series["metric"].clone(), sample(&series["value"])?)))
            .collect(),
        "scalar" => Ok(vec![(Value::Null, sample(&data.result)?)]),
        other => Err(format!(
            "a {other}, where the query should give an instant vector (sum(increase(...[$window])))"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_its_samples_and_no_series_gives_none() {
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"service":"web"},"value":[1764100000.1,"3"]},
            {"metric":{"service":"api"},"value":[1764100000.1,"0.5"]}]}}"#;
        let values = |body| {
            read_answer(body).map(|samples| samples.into_iter().map(|(_, v)| v).collect::<Vec<_>>())
        };
        assert_eq!(values(vector), Ok(vec![3.0, 0.5]));
        assert_eq!(read_answer(vector).unwrap()[0].0["service"], "web");
        let none = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert_eq!(values(none), Ok(vec![]));
        let scalar =
            br#"{"status":"success","data":{"resultType":"scalar","result":[1764100000.1,"2"]}}"#;
        assert_eq!(values(scalar), Ok(vec![2.0]));
    }

    #[test]
    fn a_refused_or_strange_answer_says_why() {
        let refused =
            br#"{"status":"error","errorType":"bad_data","error":"parse error at char 5"}"#;
        assert_eq!(read_answer(refused), Err("parse error at char 5".into()));
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(read_answer(matrix).unwrap_err().contains("instant vector"));
        let not_a_number = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"one"]}]}}"#;
        assert!(read_answer(not_a_number).is_err());
        assert!(read_answer(b"<html>").is_err());
    }

    #[tokio::test]
    async fn a_series_of_no_number_is_left_out_of_those_by_label_and_is_no_count() {
        let prometheus = crate::activity::fake::prometheus(|_| {
            Ok(r#"[{"metric":{"node":"a"},"value":[1,"0.04"]},
                {"metric":{"node":"b"},"value":[1,"NaN"]},
                {"metric":{"node":"c"},"value":[1,"+Inf"]},
                {"metric":{},"value":[1,"7"]}]"#
                .to_string())
        })
        .await;
        let by_node = prometheus.by_label("q", "node").await.unwrap();
        assert_eq!(by_node, BTreeMap::from([("a".to_string(), 0.04)]));
        let error = prometheus.count("q").await.unwrap_err();
        assert!(error.to_string().contains("NaN is no count"), "{error}");
        assert!(prometheus.value("q").await.is_err());
    }

    #[tokio::test]
    async fn nobody_listening_is_unreachable_and_named() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let error = Prometheus::new(&format!("http://{addr}/"))
            .count("up")
            .await
            .unwrap_err();
        assert!(
            matches!(error, CountError::Unreachable { .. })
                && error.to_string().contains(&addr.to_string()),
            "{error}"
        );
    }
}
