//! The layout docs/design.md's map promises: every import of production code points down the
//! map, no file outside tests has more than 700 lines, and no folder holds more than a quarter
//! of the code.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

const MAX_LINES: usize = 700;
const MAX_SHARE: f64 = 0.25;

/// The top-level modules of `src/` in the map's order, top first: a line `- `a/`, `b.rs`: ...`
/// names one rank.
fn ranks() -> BTreeMap<String, usize> {
    let design = fs::read_to_string("docs/design.md").unwrap();
    let map = design
        .split("## The map")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    let mut ranks = BTreeMap::new();
    for (rank, line) in map
        .lines()
        .filter(|line| line.starts_with("- `"))
        .enumerate()
    {
        let names = line.split(':').next().unwrap();
        for name in names.split('`').skip(1).step_by(2) {
            let name = name.trim_end_matches('/').trim_end_matches(".rs");
            ranks.insert(name.to_string(), rank);
        }
    }
    ranks
}

fn is_test(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || path.components().any(|part| part.as_os_str() == "tests")
}

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") && !is_test(&path) {
            found.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to.
fn top(path: &Path) -> String {
    let inside = path.strip_prefix("src").unwrap();
    let first = inside.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The production code of a file: what comes before its inline test module, if any, without
/// its comments (a doc link is no import).
fn production(text: &str) -> String {
    let code = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or(text);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module a file's code names after `crate::`, in paths and in grouped `use`s.
fn imported(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find("\n}").unwrap_or(group.len())];
            names.extend(group.lines().filter_map(|line| {
                let name: String = line
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                (!name.is_empty()).then_some(name)
            }));
            if let Some(first) = group.split([':', ',', '}']).next() {
                names.push(first.trim().to_string());
            }
        } else {
            names.push(
                rest.chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect(),
            );
        }
    }
    names
}

#[test]
fn every_import_of_production_code_points_down_the_map() {
    let ranks = ranks();
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    let mut upward = Vec::new();
    for file in &files {
        let module = top(file);
        let Some(&rank) = ranks.get(&module) else {
            continue;
        };
        let text = fs::read_to_string(file).unwrap();
        for name in imported(&production(&text)) {
            if ranks.get(&name).is_some_and(|&above| above < rank) {
                upward.push(format!("{} imports {name}", file.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports pointing up the map: {upward:#?}"
    );
}

#[test]
fn every_top_level_module_is_on_the_map() {
    let ranks = ranks();
    let unmapped: Vec<String> = fs::read_dir("src")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| top(&path))
        .filter(|name| !["lib", "main", "mock_api", "committed"].contains(&name.as_str()))
        .filter(|name| !ranks.contains_key(name))
        .collect();
    assert!(unmapped.is_empty(), "not on design.md's map: {unmapped:?}");
}

#[test]
fn no_file_is_over_700_lines_and_no_folder_holds_over_a_quarter_of_the_code() {
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    let mut total = 0;
    let mut by_folder: BTreeMap<String, usize> = BTreeMap::new();
    let mut long = Vec::new();
    for file in &files {
        let lines = fs::read_to_string(file).unwrap().lines().count();
        total += lines;
        if file.parent() != Some(Path::new("src")) {
            *by_folder.entry(top(file)).or_default() += lines;
        }
        if lines > MAX_LINES {
            long.push(format!("{}: {lines}", file.display()));
        }
    }
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
    let heavy: Vec<String> = by_folder
        .iter()
        .filter(|(_, lines)| **lines as f64 > MAX_SHARE * total as f64)
        .map(|(folder, lines)| format!("{folder}: {lines} of {total}"))
        .collect();
    assert!(heavy.is_empty(), "over a quarter of the code: {heavy:?}");
}
