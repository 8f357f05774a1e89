//! `cronscaler plan -o svg` as a user runs it: a chart a browser shows, for a few objects and
//! for hundreds. Regenerate the golden chart after an intended change with
//! `CRONSCALER_BLESS=1 cargo test --test plan_svg`.

mod browser;

use std::{fmt::Write as _, path::Path, process::Command};

const WEEK: [&str; 4] = ["--from", "2026-11-20T00:00:00Z", "--for", "7d"];
/// The chart's own measure of a character, as a share of the font size; monospace fonts
/// advance 0.6, so boxes measured with this are no smaller than the browser draws.
const CHAR_WIDTH: f64 = 0.62;
const AWAKE: [u8; 3] = [0x7c, 0xb3, 0x42];
const ASLEEP: [u8; 3] = [0x28, 0x35, 0x93];

fn svg_of(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_cronscaler"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["plan", "-o", "svg"])
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn examples() -> String {
    svg_of(&[&["-f", "examples"], &WEEK[..]].concat())
}

#[test]
fn the_examples_draw_the_golden_chart() {
    let svg = examples();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/plan-examples.svg");
    if std::env::var("CRONSCALER_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &svg).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(svg == expected, "output differs from {}", path.display());
}

#[test]
fn the_chart_is_an_svg_document_with_a_row_per_object() {
    let svg = examples();
    let document = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let width: f64 = root.attribute("width").unwrap().parse().unwrap();
    let height: f64 = root.attribute("height").unwrap().parse().unwrap();
    assert_eq!(
        root.attribute("viewBox"),
        Some(format!("0 0 {width} {height}").as_str())
    );
    let rows: Vec<&str> = elements(&document, "g", "row")
        .map(|row| row.attribute("data-object").unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            "default/Deployment/web",
            "default/Foo/reports",
            "ml-staging/Deployment/llm-inference",
            "office/Deployment/api",
            "office/Deployment/frontend",
            "preview/Deployment/shop",
            "preview/StatefulSet/db",
            "preview/CronJob/cache-warmer",
            "review-1234/Deployment/app",
            "shop-staging/Deployment/checkout",
            "staging/ScaledObject/orders",
            "staging/Rollout/checkout",
            "staging/Cluster/db",
        ],
        "scheduled objects, by namespace; the unscheduled Foo, the excluded CronJob and the \
         Deployment KEDA scales (it sleeps through its ScaledObject) are not drawn"
    );
    let headings: Vec<String> = elements(&document, "g", "namespace")
        .map(|heading| texts(heading)[0].clone())
        .collect();
    assert_eq!(
        headings,
        [
            "default",
            "ml-staging",
            "office",
            "preview",
            "review-1234",
            "shop-staging",
            "staging"
        ]
    );
    let title = texts(root)[0].clone();
    assert_eq!(
        title,
        "cronscaler plan: 1,450.50 h asleep, 2,371.00 replica-hours withheld, 113.00 GPU-hours, \
         226 runs skipped"
    );
    assert!(
        texts(root)[1].contains("times in Europe/Berlin"),
        "{:?}",
        texts(root)[1]
    );
    assert!(elements(&document, "rect", "asleep").count() > 5);
    assert!(elements(&document, "rect", "awake").count() > 5);
    assert_eq!(
        elements(&document, "path", "catch-up").count(),
        11 + 1,
        "one per object but the one put to sleep on demand, and the legend's"
    );
    assert_eq!(
        elements(&document, "circle", "override").count(),
        2 + 1,
        "the frontend's sleep on demand and its end, and the legend's"
    );
    assert_eq!(
        elements(&document, "rect", "holiday").count(),
        2 + 1,
        "Thanksgiving in both office rows, and the legend's"
    );
    let legend = elements(&document, "g", "legend").next().unwrap();
    assert_eq!(
        texts(legend),
        [
            "awake",
            "asleep (scaled down or suspended)",
            "transition",
            "catch-up of a missed transition",
            "override on demand",
            "holiday: nothing wakes"
        ],
        "a legend entry for each kind of mark drawn"
    );
}

#[test]
fn money_is_in_the_title_only_when_priced() {
    let svg = svg_of(
        &[
            &[
                "-f",
                "examples",
                "--prices",
                "cpu=0.04,memory=0.005,gpu=2.48,currency=USD",
            ],
            &WEEK[..],
        ]
        .concat(),
    );
    let document = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(
        texts(document.root_element())[0],
        "cronscaler plan: 1,450.50 h asleep, 2,371.00 replica-hours withheld, 113.00 GPU-hours, \
         226 runs skipped, worth $338.82"
    );
    assert!(!examples().contains("worth"));
}

/// 200 objects in 8 namespaces, some with names longer than any label, on schedules that
/// differ by the hour.
fn many_objects(dir: &Path) {
    let mut text = String::new();
    for index in 0..200 {
        let name = if index % 7 == 0 {
            format!("a-very-long-service-name-that-no-column-should-hold-{index:03}")
        } else {
            format!("svc-{index:03}")
        };
        let _ = write!(
            text,
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: team-{}\n  annotations:\n    cronscaler.dev/scale-down: \"0 {} * * MON-FRI\"\n    cronscaler.dev/scale-up: \"0 {} * * MON-FRI\"\nspec:\n  replicas: {}\n  selector: {{matchLabels: {{app: x}}}}\n  template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: x, image: nginx}}]}}}}\n",
            index % 8,
            17 + index % 6,
            5 + index % 4,
            1 + index % 5
        );
    }
    std::fs::write(dir.join("many.yaml"), text).unwrap();
}

#[test]
fn two_hundred_objects_have_no_overlapping_labels_and_a_taller_chart() {
    let temp = tempfile::tempdir().unwrap();
    many_objects(temp.path());
    let many = temp.path().join("many.yaml");
    let svg = svg_of(&[&["-f", many.to_str().unwrap()], &WEEK[..]].concat());
    let document = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(elements(&document, "g", "row").count(), 200);
    assert_eq!(elements(&document, "g", "namespace").count(), 8);

    let boxes: Vec<(String, [f64; 4])> = document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .map(|text| (text.text().unwrap_or_default().to_string(), text_box(text)))
        .collect();
    for (i, (a, first)) in boxes.iter().enumerate() {
        for (b, second) in &boxes[i + 1..] {
            let apart = first[2] <= second[0]
                || second[2] <= first[0]
                || first[3] <= second[1]
                || second[3] <= first[1];
            assert!(apart, "{a:?} {first:?} overlaps {b:?} {second:?}");
        }
    }
    let width = number(document.root_element(), "width");
    for (text, [_, _, right, _]) in &boxes {
        assert!(*right <= width, "{text:?} ends at {right}, beyond {width}");
    }

    let cut: Vec<_> = boxes
        .iter()
        .filter(|(text, _)| text.starts_with("Deployment/a-very-long"))
        .collect();
    assert!(!cut.is_empty());
    for (text, _) in cut {
        assert!(text.ends_with('…'), "{text:?} is cut with an ellipsis");
    }
    assert!(
        svg.contains(
            "<title>Deployment/a-very-long-service-name-that-no-column-should-hold-000</title>"
        ),
        "the whole name is in a tooltip"
    );

    let examples = examples();
    let examples = roxmltree::Document::parse(&examples).unwrap();
    let few = number(examples.root_element(), "height");
    let few_rows = elements(&examples, "g", "row").count();
    let height = number(document.root_element(), "height");
    assert!(
        height > few + (200 - few_rows) as f64 * 20.0,
        "{height} for 200 rows, {few} for {few_rows}"
    );
    let fortnight = svg_of(&[
        "-f",
        many.to_str().unwrap(),
        "--from",
        "2026-11-20T00:00:00Z",
        "--for",
        "14d",
    ]);
    let fortnight_width = number(
        roxmltree::Document::parse(&fortnight)
            .unwrap()
            .root_element(),
        "width",
    );
    assert!(
        fortnight_width > width,
        "two weeks are wider than one: {fortnight_width} <= {width}"
    );
}

/// Left, top, right, bottom of a text as drawn at its font size.
fn text_box(text: roxmltree::Node) -> [f64; 4] {
    let (x, y, size) = (
        number(text, "x"),
        number(text, "y"),
        number(text, "font-size"),
    );
    let chars = text.text().unwrap_or_default().chars().count() as f64;
    assert_eq!(
        text.attribute("text-anchor"),
        None,
        "every text starts at its x"
    );
    [x, y - size, x + chars * size * CHAR_WIDTH, y + 0.25 * size]
}

fn number(node: roxmltree::Node, attribute: &str) -> f64 {
    node.attribute(attribute)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{attribute} of {node:?}"))
}

fn elements<'a>(
    document: &'a roxmltree::Document,
    tag: &'a str,
    class: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'a>> {
    document
        .descendants()
        .filter(move |node| node.has_tag_name(tag) && node.attribute("class") == Some(class))
}

/// The texts drawn under `node`, in order.
fn texts(node: roxmltree::Node) -> Vec<String> {
    node.descendants()
        .filter(|node| node.has_tag_name("text"))
        .map(|text| text.text().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_browser_draws_the_chart_with_both_colours() {
    let Some(chromium) = browser::chromium() else {
        eprintln!(
            "skipped: no chromium on PATH (`which chromium`), so the chart is not rendered in a \
             browser; install chromium to run this test"
        );
        return;
    };
    let svg = examples();
    let root = roxmltree::Document::parse(&svg).unwrap();
    let (width, height) = (
        number(root.root_element(), "width"),
        number(root.root_element(), "height"),
    );
    let temp = tempfile::tempdir().unwrap();
    let chart = temp.path().join("week.svg");
    let picture = temp.path().join("week.png");
    std::fs::write(&chart, &svg).unwrap();
    let status = Command::new(chromium)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
            &format!("--screenshot={}", picture.display()),
            &format!("--window-size={width},{height}"),
            &format!("file://{}", chart.display()),
        ])
        .output()
        .expect("chromium runs");
    assert!(
        picture.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&picture).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    let colours: Vec<&[u8]> = pixels[..frame.buffer_size()]
        .chunks(channels)
        .map(|pixel| &pixel[..3])
        .collect();
    let near =
        |pixel: &[u8], colour: [u8; 3]| pixel.iter().zip(colour).all(|(a, b)| a.abs_diff(b) <= 8);
    let count = |colour| colours.iter().filter(|pixel| near(pixel, colour)).count();
    let blank = colours
        .iter()
        .filter(|pixel| near(pixel, [255, 255, 255]))
        .count();
    assert!(blank < colours.len(), "the picture is blank");
    assert!(count(AWAKE) > 1000, "awake bars drawn: {}", count(AWAKE));
    assert!(count(ASLEEP) > 1000, "asleep bars drawn: {}", count(ASLEEP));
}
