//! The answers' bodies: JSON for programs, and for browsers one self-contained page (no
//! external assets) that waits for the Namespace and then loads what the user asked for.
//! Every value shown is escaped: the original URI and the host come from whoever sent them.

use std::time::Duration;

use serde::Serialize;

use crate::{duration::spoken, escape::markup};

use super::{
    readiness::{Read, all_ready},
    route::STATUS_PATH,
};

/// The page must stay small enough to be served under any flood.
pub const MAX_PAGE: usize = 10 * 1024;

/// What the backend says of a Namespace, as JSON: how many of its workloads are ready, or
/// why that is not known yet (and then it is still waking).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub namespace: String,
    pub waking: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Progress {
    pub fn new(namespace: &str, read: Read, waking: bool) -> Self {
        Self {
            namespace: namespace.to_string(),
            waking: waking || !all_ready(read),
            ready: read.ok().map(|readiness| readiness.ready),
            total: read.ok().map(|readiness| readiness.total),
            reason: read.err().map(|not_known| not_known.to_string()),
        }
    }

    /// What the page says of it.
    fn text(&self) -> String {
        match (self.ready, self.total) {
            (Some(ready), Some(total)) => format!("{ready} of {total} workloads ready"),
            _ => "Starting the workloads".to_string(),
        }
    }

    pub fn json(&self) -> String {
        // Serializing strings and numbers cannot fail; an empty object is still JSON.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// The page a browser gets while `progress.namespace` wakes: it polls the status every 2 s and
/// loads `original_uri` once every workload is ready, or once the answer is not ours any more
/// (the Namespace serves its own pages again). It opens nothing but its own origin, whatever
/// `original_uri` says.
pub fn page(progress: &Progress, original_uri: &str, warm_up_seconds: Option<u64>) -> String {
    let namespace = markup(&progress.namespace);
    let estimate = warm_up_seconds.map_or_else(String::new, |seconds| {
        format!(", about {}", spoken(Duration::from_secs(seconds)))
    });
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
<progress id="bar"{bar}></progress>
<p id="text">{text}{estimate}</p>
<p>This environment sleeps when nobody uses it. This page opens it by itself once it is ready.</p>
</main>
<script>
const c={config};
const started=Date.now();
function go(){{
  let target;
  try{{target=new URL(c.original,location.href);}}catch(e){{target=null;}}
  location.replace(target&&target.origin===location.origin?target.href:"/");
}}
function spoken(s){{
  const m=Math.floor(s/60)%60;
  if(s<60)return s+"s";
  if(s<3600)return m+"m"+(s%60?s%60+"s":"");
  return Math.floor(s/3600)+"h"+(m?m+"m":"");
}}
function say(ready,total){{
  let text=total===undefined?"Starting the workloads":ready+" of "+total+" workloads ready";
  if(c.warmUp!==null){{const left=Math.max(0,Math.round(c.warmUp-(Date.now()-started)/1000));text+=left>0?", about "+spoken(left):", any moment now";}}
  document.getElementById("text").textContent=text;
  const bar=document.getElementById("bar");
  if(total===undefined){{bar.removeAttribute("value");}}else{{bar.max=total;bar.value=ready;}}
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
        bar = match (progress.ready, progress.total) {
            (Some(ready), Some(total)) => format!(r#" max="{total}" value="{ready}""#),
            _ => String::new(),
        },
        text = progress.text(),
        config = script_json(&config),
    )
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

    use crate::wake::readiness::{NotKnown, Readiness};

    fn waking(namespace: &str) -> Progress {
        Progress::new(namespace, Ok(Readiness { ready: 2, total: 5 }), true)
    }

    #[test]
    fn the_page_says_how_far_the_wake_is_and_fits_in_ten_kilobytes() {
        let page = page(&waking("staging"), "/login?next=%2F", Some(40));
        assert!(page.contains("2 of 5 workloads ready, about 40s"), "{page}");
        assert!(page.contains("<title>Waking up staging</title>"));
        assert!(page.contains(r#""status":"/.cronscaler/status?namespace=staging""#));
        assert!(page.len() < MAX_PAGE, "{} bytes", page.len());
        assert!(
            !page.contains("src=") && !page.contains("href="),
            "no external assets"
        );
    }

    #[test]
    fn the_estimate_reads_in_whole_units() {
        let page = page(&waking("staging"), "/", Some(3_725));
        assert!(
            page.contains("2 of 5 workloads ready, about 1h2m"),
            "{page}"
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
        let ready = Progress::new("staging", Ok(Readiness { ready: 5, total: 5 }), false);
        assert!(!ready.waking);
    }

    #[test]
    fn readiness_not_known_is_still_waking_with_the_reason_never_zero_of_zero() {
        let not_known = Progress::new("staging", Err(NotKnown::TimedOut), false);
        assert_eq!(
            not_known.json(),
            r#"{"namespace":"staging","waking":true,"reason":"readiness not known yet: the API server did not answer in time"}"#
        );
        let page = page(&not_known, "/", None);
        assert!(page.contains("Starting the workloads"), "{page}");
        assert!(!page.contains("0 of 0"), "{page}");
    }
}
