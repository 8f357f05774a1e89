//! Text put into HTML or SVG (XML), or onto a terminal, as a person wrote it, whatever it holds:
//! every page, chart and table shows names a tenant chose.

/// `text` with the five characters that could end an element, an attribute or an entity
/// escaped; valid in HTML and XML alike.
pub fn markup(text: &str) -> String {
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

/// `text` with every control character written out (`\u{1b}`): a name a tenant chose (an owner
/// reference's, which the API server checks for nothing but being there) cannot move a
/// terminal's cursor, erase a line or start a row of its own.
pub fn terminal(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c.is_control() {
            true => escaped.extend(c.escape_default()),
            false => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    #[test]
    fn nothing_a_name_holds_ends_an_element_or_attribute() {
        assert_eq!(
            super::markup(r#"<a href='x'>"&"</a>"#),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn nothing_a_name_holds_moves_a_terminal() {
        assert_eq!(
            super::terminal("\u{1b}[2K\rnode-7\tdefault\nü"),
            r"\u{1b}[2K\rnode-7\tdefault\nü"
        );
    }
}
