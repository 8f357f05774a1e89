//! The answers' bodies: JSON for programs, and for browsers one self-contained page (no
//! external assets) that waits for the Namespace and then loads what the user asked for.
//! Every value shown is escaped: the original URI and the host come from whoever sent them.

use serde::Serialize;

use super::{readiness::Readiness, route::STATUS_PATH};

/// The page must stay small enough to be served under any flood.
pub const MAX_PAGE: usize = 10 * 1024;

/// What the backend says of a Namespace, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub namespace: String,
    pub waking: bool,
    pub ready: usize,
    pub total: usize,
}

impl Progress {
    pub fn new(namespace: &str, readiness: Readiness, waking: bool) -> Self {
        Self {
            namespace: namespace.to_string(),
            waking: waking || !readiness.all_ready(),
            ready: readiness.ready,
            total: readiness.total,
        }
    }

    pub fn json(&self) -> String {
        // Serializing strings and numbers cannot fail; an empty object is still JSON.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// The page a browser gets while `progress.namespace` wakes: it polls the status every 2 s and
/// loads `original_uri` once every workload is ready, or once the answer is not ours any more
/// (the Namespace serves its own pages again).
pub fn page(progress: &Progress, original_uri: &str, warm_up_seconds: Option<u64>) -> String {
    let namespace = escape_html(&progress.namespace);
    let estimate =
        warm_up_seconds.map_or_else(String::new, |seconds| format!(", about {seconds} s"));
    let config = serde_json::json!({
        "namespace": progress.namespace,
        "status": format!("{STATUS_PATH}?namespace={}", progress.namespace),
        "original": original_uri,
        "warmUp": warm_up_seconds,
    });
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Waking up {namespace}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f6f7f9;color:#1f2328}}
main{{max-width:32rem;padding:2rem;text-align:center}}
h1{{font-size:1.4rem;font-weight:600}}
progress{{width:100%;height:.6rem}}
p{{color:#57606a}}
</style></head>
<body><main>
<h1 id="title">Waking up {namespace}</h1>
<progress id="bar" max="{total}" value="{ready}"></progress>
<p id="text">{ready} of {total} workloads ready{estimate}</p>
<p>This environment sleeps when nobody uses it. This page opens it by itself once it is ready.</p>
</main>
<script>
const c={config};
const started=Date.now();
function go(){{location.replace(c.original);}}
function say(ready,total){{
  let text=ready+" of "+total+" workloads ready";
  if(c.warmUp!==null){{const left=Math.max(0,Math.round(c.warmUp-(Date.now()-started)/1000));text+=left>0?", about "+left+" s":", any moment now";}}
  document.getElementById("text").textContent=text;
  const bar=document.getElementById("bar");bar.max=total;bar.value=ready;
}}
async function poll(){{
  try{{
    const answer=await fetch(c.status,{{cache:"no-store",headers:{{Accept:"application/json"}}}});
    const body=await answer.json();
    if(body.namespace!==c.namespace||(!body.waking&&body.ready>=body.total)){{go();return;}}
    say(body.ready,body.total);
  }}catch(e){{go();return;}}
  setTimeout(poll,2000);
}}
setTimeout(poll,2000);
</script>
</body></html>
"#,
        total = progress.total,
        ready = progress.ready,
        config = script_json(&config),
    )
}

fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// JSON that cannot end the script it sits in, whatever strings it holds.
fn script_json(value: &serde_json::Value) -> String {
    value
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waking(namespace: &str) -> Progress {
        Progress::new(namespace, Readiness { ready: 2, total: 5 }, true)
    }

    #[test]
    fn the_page_says_how_far_the_wake_is_and_fits_in_ten_kilobytes() {
        let page = page(&waking("staging"), "/login?next=%2F", Some(40));
        assert!(
            page.contains("2 of 5 workloads ready, about 40 s"),
            "{page}"
        );
        assert!(page.contains("<title>Waking up staging</title>"));
        assert!(page.contains(r#""status":"/.cronscaler/status?namespace=staging""#));
        assert!(page.len() < MAX_PAGE, "{} bytes", page.len());
        assert!(
            !page.contains("src=") && !page.contains("href="),
            "no external assets"
        );
    }

    #[test]
    fn nothing_sent_in_a_request_can_end_the_script_or_the_markup() {
        let hostile = r#"</script><script>alert("x")</script>'&"#;
        let page = page(&waking(hostile), hostile, None);
        assert_eq!(page.matches("<script>").count(), 1, "{page}");
        assert_eq!(page.matches("</script>").count(), 1, "{page}");
        assert!(!page.contains("alert(\"x\")"));
        assert!(page.contains("Waking up &lt;/script&gt;"));
    }

    #[test]
    fn the_json_says_waking_until_all_are_ready() {
        assert_eq!(
            waking("staging").json(),
            r#"{"namespace":"staging","waking":true,"ready":2,"total":5}"#
        );
        let ready = Progress::new("staging", Readiness { ready: 5, total: 5 }, false);
        assert!(!ready.waking);
    }
}
