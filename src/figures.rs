//! Numbers as people read them in a table or a bill: thousands grouped, two decimals.

/// Two decimals, thousands separated: `1,234.50`.
pub fn amount(value: Option<f64>) -> String {
    let Some(value) = value else {
        return "-".into();
    };
    let cents = (value * 100.0).round();
    // Far beyond any window's hours or any bill; printed plainly rather than wrapped.
    if !(0.0..1e15).contains(&cents) {
        return format!("{value:.2}");
    }
    let cents = cents as u64;
    format!("{}.{:02}", thousands(cents / 100), cents % 100)
}

/// `1,234,567`: groups of three.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
