//! Kubernetes resource quantities (`250m`, `1`, `512Mi`, `1Gi`, `1G`, `1e3`), read as numbers of
//! base units: cores for CPU, bytes for memory. k8s-openapi keeps a quantity as the string the
//! user wrote; a full arbitrary-precision parser would be a dependency for a sum that is printed
//! with two decimals.

/// Why a text is not a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a Kubernetes quantity ({reason}), e.g. `250m`, `1`, `512Mi` or `1G`")]
pub struct QuantityError {
    pub text: String,
    pub reason: &'static str,
}

/// The value of a quantity in base units, e.g. `0.25` for `250m` and `536870912` for `512Mi`.
pub fn parse_quantity(text: &str) -> Result<f64, QuantityError> {
    let error = |reason| QuantityError {
        text: text.to_string(),
        reason,
    };
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_length = unsigned
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_length);
    if !number.chars().any(|c| c.is_ascii_digit()) || number.matches('.').count() > 1 {
        return Err(error("no number"));
    }
    let magnitude: f64 = number.parse().map_err(|_| error("no number"))?;
    let scale = scale_of(suffix).ok_or_else(|| error("unknown suffix"))?;
    let value = magnitude * scale;
    if !value.is_finite() {
        return Err(error("too large"));
    }
    Ok(if text.starts_with('-') { -value } else { value })
}

fn scale_of(suffix: &str) -> Option<f64> {
    let binary = |power: i32| Some(1024_f64.powi(power));
    let decimal = |power: i32| Some(10_f64.powi(power));
    match suffix {
        "" => Some(1.0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        // `E` alone is exa; followed by a number it is an exponent, as `e` always is.
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            decimal(exponent.parse().ok()?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kubernetes_reads_them() {
        let cases = [
            ("250m", 0.25),
            ("1", 1.0),
            ("0.5", 0.5),
            (".5", 0.5),
            ("2.", 2.0),
            ("+2", 2.0),
            ("100n", 100e-9),
            ("100u", 100e-6),
            ("512Mi", 536_870_912.0),
            ("1Gi", 1_073_741_824.0),
            ("1.5Gi", 1_610_612_736.0),
            ("1G", 1e9),
            ("128k", 128_000.0),
            ("1Ki", 1024.0),
            ("2Ti", 2.0 * 1024_f64.powi(4)),
            ("1M", 1e6),
            ("1e3", 1000.0),
            ("1E3", 1000.0),
            ("5e-1", 0.5),
            ("1E", 1e18),
            ("0", 0.0),
            ("-1", -1.0),
        ];
        for (text, expected) in cases {
            let parsed = parse_quantity(text).unwrap();
            assert!(
                (parsed - expected).abs() <= expected.abs() * 1e-12,
                "{text}: {parsed} != {expected}"
            );
        }
    }

    #[test]
    fn what_is_not_a_quantity_is_refused_naming_it() {
        for text in [
            "", "Mi", "1.2.3", "1mi", "1 Gi", "1MB", "1e", "1e+", "1ee3", "abc", "--1", "1Gi ",
        ] {
            assert!(parse_quantity(text).is_err(), "{text:?} was accepted");
        }
        assert_eq!(
            parse_quantity("1MB").unwrap_err().to_string(),
            "\"1MB\" is not a Kubernetes quantity (unknown suffix), e.g. `250m`, `1`, `512Mi` or `1G`"
        );
    }
}
