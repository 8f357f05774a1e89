//! Text put into HTML or SVG (XML), or onto a terminal, as a person wrote it, whatever it holds:
//! every page, chart and table shows names a tenant chose; and text read back out of double
//! quotes (PromQL's, Prometheus's exposition format).

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

/// The value of a double-quoted string at the start of `text`, and what follows it: each
/// backslash's next character read by `unescape` (`None`: no string the reader takes), a line's
/// end inside it no string either.
pub fn unquoted(text: &str, unescape: impl Fn(char) -> Option<char>) -> Option<(String, &str)> {
    let mut chars = text.strip_prefix('"')?.char_indices();
    let mut value = String::new();
    while let Some((at, c)) = chars.next() {
        match c {
            // `at` counts from after the opening quote: what follows the closing one is 2 on.
            '"' => return Some((value, &text[at + 2..])),
            '\\' => value.push(unescape(chars.next()?.1)?),
            '\n' => return None,
            c => value.push(c),
        }
    }
    None
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
