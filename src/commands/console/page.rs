//! The console's pages, as HTML: no script, no asset from anywhere (the styles are inline), every
//! shown text escaped, every form carrying its person's token. A page that shows an environment
//! waking reloads itself until it is awake. Pure.

use chrono::{DateTime, Utc};

use super::{
    act::BUTTONS,
    environments::{Environment, Look, Week},
    nodes::NodesView,
    session::Identity,
    week::WEEK,
};
use crate::{
    commands::{
        nodes::{row, summary},
        status::NextAction,
    },
    duration::spoken,
    escape::markup,
};

/// Seconds between reloads while something the person watches is waking.
pub const RELOAD_SECONDS: u32 = 3;

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1f2328}\
header{display:flex;flex-wrap:wrap;gap:.5rem;justify-content:space-between;align-items:center;padding:.8rem 1rem;background:#24292f;color:#fff}\
header form{margin:0}main{max-width:60rem;margin:auto;padding:1rem}\
section{background:#fff;border:1px solid #d0d7de;border-radius:.5rem;padding:.8rem 1rem;margin:.8rem 0}\
h1{font-size:1.1rem;margin:0}h2{font-size:1.05rem;margin:0 0 .4rem;display:flex;gap:.5rem;align-items:center;flex-wrap:wrap}\
h2 a{font-size:.8rem;font-weight:400;margin-left:auto}.look{font-size:.8rem;padding:.1rem .5rem;border-radius:1rem;background:#eaeef2}\
.awake{background:#dafbe1;color:#116329}.asleep,.idle{background:#ddf4ff;color:#0a3069}\
.waking{background:#fff8c5;color:#7d4e00}.partly{background:#fbefff;color:#6e40c9}\
p{margin:.3rem 0;color:#57606a}table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0;width:100%}\
td,th{text-align:left;padding:.15rem .4rem;border-bottom:1px solid #eaeef2}\
.buttons{display:flex;flex-wrap:wrap;gap:.4rem;margin-top:.5rem}.buttons form{margin:0}\
button{font:inherit;padding:.35rem .7rem;border-radius:.4rem;border:1px solid #d0d7de;background:#f6f8fa;cursor:pointer}\
input{font:inherit;padding:.3rem}.notice{background:#fff8c5;border-color:#d4a72c}.refused{background:#ffebe9;border-color:#ff8182}\
@media (max-width:40rem){table{font-size:.8rem}.hide-narrow{display:none}}";

/// A page; one that reloads loads `reload` (a path of the console's own) again and again. The
/// path is said, not left out: a page opened at a `#fragment` would only scroll to it.
fn document(title: &str, reload: Option<&str>, body: &str) -> String {
    let reload = reload.map_or_else(String::new, |path| {
        format!(
            r#"<meta http-equiv="refresh" content="{RELOAD_SECONDS}; url={}">"#,
            markup(path)
        )
    });
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">{reload}
<title>{title}</title>
<style>{STYLE}</style></head>
<body>{body}</body></html>
"#,
        title = markup(title)
    )
}

/// The only page shown to nobody: a token to sign in with.
pub fn sign_in(said: Option<&str>) -> String {
    let said = said.map_or_else(String::new, |said| {
        format!(
            r#"<section class="refused"><p>{}</p></section>"#,
            markup(said)
        )
    });
    let body = format!(
        r#"<header><h1>cronscaler</h1></header><main>{said}<section>
<h2>Sign in</h2>
<p>With a Kubernetes token: <code>kubectl create token NAME -n NAMESPACE</code> for a
ServiceAccount, or the token of your kubeconfig. It is checked by the API server and not kept;
what you see and may do is what RBAC allows you.</p>
<form method="post" action="/sign-in"><p><input type="password" name="token" autocomplete="off" required aria-label="token" size="40">
<button type="submit">Sign in</button></p></form></section></main>"#
    );
    document("cronscaler: sign in", None, &body)
}

/// An answer to a form: what was done, or why nothing was.
pub fn answer(title: &str, said: &str, refused: bool) -> String {
    let class = if refused { "refused" } else { "notice" };
    let body = format!(
        r#"<header><h1>cronscaler</h1></header><main><section class="{class}"><h2>{}</h2><p>{}</p>
<p><a href="/">Back to the environments</a></p></section></main>"#,
        markup(title),
        markup(said)
    );
    document(title, None, &body)
}

/// One environment as shown, with whether its viewer may press its buttons.
pub struct Shown<'a> {
    pub environment: &'a Environment,
    pub may_act: bool,
}

/// Every environment `who` may see, with the buttons they may press; `watched` is the one they
/// just woke, whose page reloads until it is awake.
pub fn environments(
    who: &Identity,
    shown: &[Shown],
    token: &str,
    watched: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let sections: String = shown
        .iter()
        .map(|shown| section(shown, token, now))
        .collect();
    let waking = shown.iter().any(|shown| {
        let environment = shown.environment;
        matches!(environment.look, Look::Waking { .. })
            || (watched == Some(environment.namespace.as_str()) && environment.look != Look::Awake)
    });
    let empty = match shown.is_empty() {
        true => "<section><p>No environment you may see has a schedule.</p></section>",
        false => "",
    };
    let body = format!(
        r#"{header}
<main><p>{count} environments · <a href="/nodes">nodes</a></p>{empty}{sections}</main>"#,
        header = header(who, token),
        count = shown.len(),
    );
    let reload = watched.map_or_else(|| "/".to_string(), watching);
    document("cronscaler", waking.then_some(reload.as_str()), &body)
}

/// The bar atop every page of a person signed in: who they are, and signing out.
fn header(who: &Identity, token: &str) -> String {
    format!(
        r#"<header><h1>cronscaler</h1><form method="post" action="/sign-out">{user}
<input type="hidden" name="token" value="{token}"><button type="submit">Sign out</button></form></header>"#,
        user = markup(&who.user),
        token = markup(token),
    )
}

/// Each node and what keeps it, as `cronscaler nodes` says it, and the last night recorded.
pub fn nodes(who: &Identity, view: &NodesView, token: &str) -> String {
    let cell = |text: &str| format!("<td>{}</td>", markup(text));
    let rows: String = (view.nodes.nodes.iter())
        .map(|node| {
            let cells: String = row(node).iter().map(|text| cell(text)).collect();
            format!("<tr>{cells}</tr>")
        })
        .collect();
    let table = match view.nodes.nodes.is_empty() {
        true => "<p>No nodes.</p>".to_string(),
        false => format!(
            "<table><tr><th>node</th><th>pool</th><th>Pods</th><th>kept by</th></tr>{rows}</table>"
        ),
    };
    let paragraphs = |lines: &[String]| -> String {
        (lines.iter())
            .map(|line| format!("<p>{}</p>", markup(line.trim_start())))
            .collect()
    };
    let mut night = match &view.night {
        Ok(lines) => paragraphs(lines),
        Err(note) => paragraphs(std::slice::from_ref(note)),
    };
    if let Some(from) = &view.prices_from {
        night.push_str(&paragraphs(&[format!("prices: {from}")]));
    }
    let body = format!(
        r#"{header}
<main><p><a href="/">environments</a> · nodes, read {at}</p>
<section id="night"><h2>The last night</h2>{night}</section>
<section id="nodes"><h2>What keeps each node</h2>{table}{summary}</section></main>"#,
        header = header(who, token),
        at = view.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        summary = paragraphs(&summary(&view.nodes)),
    );
    document("cronscaler: nodes", None, &body)
}

fn section(shown: &Shown, token: &str, now: DateTime<Utc>) -> String {
    let environment = shown.environment;
    let namespace = markup(&environment.namespace);
    let look = environment.look.as_str();
    let class = look.split(' ').next().unwrap_or(look);
    let mut lines = Vec::new();
    if let Some((at, local)) = &environment.since {
        lines.push(format!("since {} ago ({local})", spoken(now - *at)));
    }
    if let Some(next) = &environment.next {
        let words = match next.action {
            NextAction::Up => "wakes",
            NextAction::Down => "sleeps",
            NextAction::OverrideEnds => "back to its schedule",
        };
        lines.push(format!(
            "{words} in {}, at {}",
            spoken(next.at - now),
            next.local_time
        ));
    }
    if let Look::Waking { readiness, unready } = &environment.look {
        let waiting = match unready.is_empty() {
            true => String::new(),
            false => format!("; not yet: {}", unready.join(", ")),
        };
        lines.push(format!(
            "{} of {} workloads ready{waiting}",
            readiness.ready, readiness.total
        ));
    }
    if let Some(why) = &environment.why {
        lines.push(why.clone());
    }
    lines.push(format!("schedule: {}", environment.schedule));
    match environment.replicas_asleep {
        0 => {}
        1 => lines.push("sleeping withholds 1 replica now".into()),
        n => lines.push(format!("sleeping withholds {n} replicas now")),
    }
    if let Some(week) = &environment.week {
        lines.push(week_in_words(week));
    }
    let lines: String = (lines.iter())
        .map(|line| format!("<p>{}</p>", markup(line)))
        .collect();
    let workloads: String = (environment.workloads.iter())
        .map(|row| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td></tr>",
                markup(&row.kind),
                markup(&row.name),
                row.state.as_str(),
                row.replicas,
                row.awake_replicas
            )
        })
        .collect();
    let buttons = match shown.may_act {
        true => buttons(&environment.namespace, token),
        false => String::new(),
    };
    let chart = encoded(&environment.namespace);
    format!(
        r#"<section id="ns-{namespace}" data-look="{look}"><h2>{namespace} <span class="look {class}">{look}</span> <a href="/chart?namespace={chart}">week chart</a></h2>{lines}
<table><tr><th>kind</th><th>name</th><th>state</th><th>replicas</th></tr>{workloads}</table>{buttons}</section>
"#
    )
}

/// The page that watches `namespace` wake: where a button's answer leads, and what it reloads.
pub fn watching(namespace: &str) -> String {
    format!("/?watch={}", encoded(namespace))
}

/// `text` as a part of a URL's query.
pub fn encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// E.g. `the coming week: asleep 108h of 168h, 216 replica-hours, 21.6 CPU core-hours
/// withheld, worth $41.20`: the figures `plan --for 7d` gives, in money where prices were given.
fn week_in_words(week: &Week) -> String {
    let amount = |value: f64| {
        let rounded = (value * 10.0).round() / 10.0;
        if rounded.fract() == 0.0 {
            format!("{rounded:.0}")
        } else {
            format!("{rounded:.1}")
        }
    };
    let totals = &week.totals;
    let withheld: Vec<String> = [
        (totals.replica_hours_withheld, "replica-hours"),
        (totals.cpu_core_hours_withheld, "CPU core-hours"),
        (totals.memory_gib_hours_withheld, "GiB-hours of memory"),
        (totals.gpu_hours_withheld, "GPU-hours"),
    ]
    .into_iter()
    .filter_map(|(value, unit)| Some(format!("{} {unit}", amount(value?))))
    .collect();
    let asleep = format!(
        "the coming week: asleep {}h of {}h",
        amount(week.hours_asleep),
        WEEK.num_hours()
    );
    let words = match withheld.is_empty() {
        true => asleep,
        false => format!("{asleep}, {} withheld", withheld.join(", ")),
    };
    // What the freed requests are worth: saved only once the nodes go (docs/savings.md).
    match &week.cost {
        Some(cost) => format!("{words}, worth {cost}"),
        None => words,
    }
}

fn buttons(namespace: &str, token: &str) -> String {
    let hidden = format!(
        r#"<input type="hidden" name="namespace" value="{}"><input type="hidden" name="token" value="{}">"#,
        markup(namespace),
        markup(token)
    );
    let mut out = String::from(r#"<div class="buttons">"#);
    for (value, label) in BUTTONS {
        out.push_str(&format!(
            r#"<form method="post" action="/act">{hidden}<button type="submit" name="do" value="{value}">{label}</button></form>"#
        ));
    }
    out.push_str(&format!(
        r#"<form method="post" action="/act">{hidden}<input type="datetime-local" name="until" required aria-label="awake until"><button type="submit" name="do" value="keep-until">Keep awake until</button></form></div>"#
    ));
    out
}

#[cfg(test)]
mod tests;
