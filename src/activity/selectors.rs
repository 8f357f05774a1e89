//! The series a PromQL query reads: its vector selectors (`metric{label="value"}`), found by a
//! scanner that knows just enough of PromQL to tell them from what else a query holds: strings,
//! comments, function and aggregation names, the label lists of `by`, `without`, `on`,
//! `ignoring` and `group_left`/`group_right`, ranges, numbers and durations. The proof that a
//! query's source was counting (see [`super::query`]) is built from them.

/// The keywords followed by a list of label names in parentheses.
const LABEL_LISTS: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// Names that are never a metric's: besides [`LABEL_LISTS`], PromQL's other keywords and its
/// word operators.
const KEYWORDS: [&str; 8] = [
    "bool", "and", "or", "unless", "offset", "atan2", "inf", "nan",
];

/// The aggregations, which `by (...)` or `without (...)` may part from their parentheses
/// (`sum by (job) (rate(...))`).
const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// A vector selector as written: its metric name, and each of its label matchers as written
/// (`exported_namespace="$namespace"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub name: Option<String>,
    pub matchers: Vec<String>,
}

impl Selector {
    /// The selector without its matchers that mention `placeholder`: the same metric, for
    /// every value of the placeholder. `None` where nothing would be left to select by.
    pub fn without(&self, placeholder: &str) -> Option<String> {
        let kept: Vec<&str> = (self.matchers.iter())
            .filter(|matcher| !matcher.contains(placeholder))
            .map(String::as_str)
            .collect();
        match (&self.name, kept.is_empty()) {
            (Some(name), true) => Some(name.clone()),
            (Some(name), false) => Some(format!("{name}{{{}}}", kept.join(", "))),
            (None, false) => Some(format!("{{{}}}", kept.join(", "))),
            (None, true) => None,
        }
    }
}

/// The vector selectors of `query`, each once, in the order they are written.
pub fn selectors(query: &str) -> Vec<Selector> {
    let bytes = query.as_bytes();
    let mut found: Vec<Selector> = Vec::new();
    let mut add = |selector: Selector| {
        if !found.contains(&selector) {
            found.push(selector);
        }
    };
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        at = match byte {
            b'"' | b'\'' | b'`' => past_string(bytes, at),
            b'#' => past(bytes, at, b'\n'),
            // A range or a subquery's: durations, `$window`.
            b'[' => past(bytes, at, b']'),
            b'{' => {
                let (matchers, after) = matchers(query, at);
                add(Selector {
                    name: None,
                    matchers,
                });
                after
            }
            // A placeholder (`$window`), a number or a duration.
            b'$' => past_word(bytes, at + 1),
            byte if byte.is_ascii_digit() || byte == b'.' => past_word(bytes, at),
            byte if byte.is_ascii_alphabetic() || byte == b'_' || byte == b':' => {
                let end = past_name(bytes, at);
                let name = &query[at..end];
                let next = past_spaces(bytes, end);
                match bytes.get(next) {
                    Some(b'(') if LABEL_LISTS.contains(&name) => past(bytes, next, b')'),
                    // A function's name.
                    Some(b'(') => end,
                    _ if LABEL_LISTS.contains(&name)
                        || KEYWORDS.contains(&name)
                        || AGGREGATIONS.contains(&name) =>
                    {
                        end
                    }
                    Some(b'{') => {
                        let (matchers, after) = matchers(query, next);
                        add(Selector {
                            name: Some(name.to_string()),
                            matchers,
                        });
                        after
                    }
                    _ => {
                        add(Selector {
                            name: Some(name.to_string()),
                            matchers: Vec::new(),
                        });
                        end
                    }
                }
            }
            _ => at + 1,
        };
    }
    found
}

/// The matchers of the braces opening at `open`, each trimmed, and where they end.
fn matchers(query: &str, open: usize) -> (Vec<String>, usize) {
    let bytes = query.as_bytes();
    let mut matchers = Vec::new();
    let mut start = open + 1;
    let mut at = start;
    let mut cut = |from: usize, to: usize| {
        let matcher = query.get(from..to).unwrap_or_default().trim();
        if !matcher.is_empty() {
            matchers.push(matcher.to_string());
        }
    };
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' | b'\'' | b'`' => at = past_string(bytes, at),
            b',' => {
                cut(start, at);
                at += 1;
                start = at;
            }
            b'}' => {
                cut(start, at);
                return (matchers, at + 1);
            }
            _ => at += 1,
        }
    }
    cut(start, at);
    (matchers, at)
}

/// Past the string opening at `open`: `"` and `'` strings end at their unescaped quote,
/// backtick strings at the next backtick.
fn past_string(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut at = open + 1;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'\\' && quote != b'`' {
            at += 2;
        } else if byte == quote {
            return at + 1;
        } else {
            at += 1;
        }
    }
    at
}

/// Past the first `close` after `open`, skipping strings.
fn past(bytes: &[u8], open: usize, close: u8) -> usize {
    let mut at = open + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            byte if byte == close => return at + 1,
            b'"' | b'\'' | b'`' => at = past_string(bytes, at),
            _ => at += 1,
        }
    }
    at
}

/// Past a metric's or a function's name.
fn past_name(bytes: &[u8], start: usize) -> usize {
    past_while(bytes, start, |byte| {
        byte.is_ascii_alphanumeric() || byte == b'_' || byte == b':'
    })
}

/// Past a number (`1.5e3`, `0x1f`), a duration (`5m30s`) or a placeholder's name.
fn past_word(bytes: &[u8], start: usize) -> usize {
    past_while(bytes, start, |byte| {
        byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.'
    })
}

fn past_spaces(bytes: &[u8], start: usize) -> usize {
    past_while(bytes, start, |byte| byte.is_ascii_whitespace())
}

/// Past the bytes from `start` that `keep` holds for.
fn past_while(bytes: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut at = start;
    while bytes.get(at).is_some_and(|byte| keep(*byte)) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, matchers: &[&str]) -> Selector {
        Selector {
            name: Some(name.into()),
            matchers: matchers.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn the_selectors_of_a_query_are_told_from_its_functions_keywords_and_label_lists() {
        assert_eq!(
            selectors(
                r#"sum by (service, le) (rate(http_requests_total{ns="$namespace", code=~"2.."}[$window] offset 1m))"#
            ),
            [named(
                "http_requests_total",
                &[r#"ns="$namespace""#, r#"code=~"2..""#]
            )]
        );
        assert_eq!(
            selectors(
                "sum(increase(a_total{x=\"$namespace\"}[$window])) / on (job) group_left (team) \
                 max without (pod) (up) > bool 0.5e1 or vector(0) # a_total counted"
            ),
            [named("a_total", &[r#"x="$namespace""#]), named("up", &[])]
        );
        assert_eq!(
            selectors(r#"count({__name__=~"req_.*", ns='$namespace', path="a,}b"})"#),
            [Selector {
                name: None,
                matchers: vec![
                    r#"__name__=~"req_.*""#.into(),
                    "ns='$namespace'".into(),
                    r#"path="a,}b""#.into()
                ],
            }]
        );
        assert_eq!(
            selectors("rate(a[5m:30s]) + rate(a[5m:30s]) + rate(b:rule:sum [1h] @ start())"),
            [named("a", &[]), named("b:rule:sum", &[])],
            "each once; a recording rule's name is a metric's"
        );
    }

    #[test]
    fn without_the_namespace_a_selector_reads_the_same_metric_everywhere() {
        let placeholder = "$namespace";
        assert_eq!(
            named(
                "envoy_cluster_upstream_rq_total",
                &[r#"envoy_cluster_name=~"httproute/$namespace/.*""#]
            )
            .without(placeholder),
            Some("envoy_cluster_upstream_rq_total".into())
        );
        assert_eq!(
            named(
                "r",
                &[r#"job="ingress""#, r#"ns="$namespace""#, "code!='500'"]
            )
            .without(placeholder),
            Some(r#"r{job="ingress", code!='500'}"#.into())
        );
        let unnamed = |matchers: &[&str]| Selector {
            name: None,
            matchers: matchers.iter().map(|m| m.to_string()).collect(),
        };
        assert_eq!(
            unnamed(&[r#"__name__="r""#, r#"ns="$namespace""#]).without(placeholder),
            Some(r#"{__name__="r"}"#.into())
        );
        assert_eq!(unnamed(&[r#"ns="$namespace""#]).without(placeholder), None);
    }
}
