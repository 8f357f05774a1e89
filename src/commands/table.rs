//! Tables a person reads, as `kubectl get` prints them.

use std::fmt::Write as _;

use crate::escape::terminal;

/// The rows as left-aligned columns two spaces apart, control characters written out (cells hold
/// names tenants chose). The last cell of a row widens no column,
/// so a long note there (a summary, the reasons of an invalid object) stays on its own line's
/// end without pushing the others apart.
pub fn aligned(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = (rows.iter())
        .map(|row| row.iter().map(|cell| terminal(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        let leading = &row[..row.len().saturating_sub(1)];
        for (index, cell) in leading.iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(index) {
                Some(known) => *known = (*known).max(width),
                None => widths.push(width),
            }
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(index, cell)| {
                let width = widths.get(index).copied().unwrap_or(0);
                format!("{cell:<width$}")
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_the_last_cell_widens_nothing() {
        let rows = vec![
            vec!["NAME".to_string(), "STATE".into(), "NOTE".into()],
            vec!["web".into(), "asleep".into(), "".into()],
            vec![
                "a-long-name".into(),
                "a very long note that widens nothing".into(),
            ],
        ];
        assert_eq!(
            aligned(&rows),
            "NAME         STATE   NOTE\n\
             web          asleep\n\
             a-long-name  a very long note that widens nothing\n"
        );
    }

    #[test]
    fn a_cell_cannot_start_a_row_of_its_own() {
        let rows = vec![
            vec!["NODE".to_string(), "KEPT BY".into()],
            vec!["node-1".into(), "\u{1b}[2K\rnode-7  payments/db".into()],
        ];
        assert_eq!(
            aligned(&rows),
            "NODE    KEPT BY\nnode-1  \\u{1b}[2K\\rnode-7  payments/db\n"
        );
    }
}
