//! Quantities with units — the one grammar for scenario files, `--emulate` specs and command-line
//! flags: durations ("50ms"), rates ("20Mbit/s", or tc's "20mbit"), sizes ("32KiB") and
//! percentages ("2%"). Parsing accepts a number, optional spaces and a unit; unit names are not
//! case-sensitive except for sizes (where "MB" and "Mb" would differ). Formatting picks the
//! largest unit that represents the value exactly, so a formatted value parses back to itself.

use std::time::Duration;

/// Split "12.5 ms" into (12.5, "ms").
fn split(text: &str) -> Result<(f64, &str), String> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(text.len());
    // An exponent 'e' must not swallow a unit that starts with 'e'; no unit here does.
    let (number, unit) = text.split_at(end);
    let cleaned: String = number.chars().filter(|&c| c != '_').collect();
    let value: f64 = cleaned.parse().map_err(|_| format!("`{text}` does not start with a number"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` must be a non-negative number"));
    }
    Ok((value, unit.trim()))
}

fn scaled(value: f64, scale: f64, text: &str) -> Result<u64, String> {
    let x = (value * scale).round();
    if x > u64::MAX as f64 / 2.0 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(x as u64)
}

/// Microseconds per time unit ("us", "µs", "ms", "s", "min"; any case).
fn micros_per(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "min" => 60e6,
        _ => return None,
    })
}

/// Bits per second per rate unit: "bit/s" style, "bps" style and tc's "mbit" style, decimal or
/// binary ("Mibit/s", as dFEC's "Mibps"); any case.
fn bits_per(unit: &str) -> Option<f64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "bit/s" | "bps" | "bit" => 1.0,
        "kbit/s" | "kbps" | "kbit" => 1e3,
        "mbit/s" | "mbps" | "mbit" => 1e6,
        "gbit/s" | "gbps" | "gbit" => 1e9,
        "kibit/s" | "kibps" | "kibit" => 1024.0,
        "mibit/s" | "mibps" | "mibit" => 1_048_576.0,
        "gibit/s" | "gibps" | "gibit" => 1_073_741_824.0,
        _ => return None,
    })
}

/// "50ms", "1.5 s", "200us", "200µs", "3min", or "0". Microsecond resolution (the clock's).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split(text)?;
    let micros_per_unit = match micros_per(unit) {
        Some(scale) => scale,
        None if unit.is_empty() && value == 0.0 => 1.0,
        None if unit.is_empty() => {
            return Err(format!("`{text}` needs a unit: us, ms, s or min (e.g. \"50ms\")"))
        }
        None => return Err(format!("`{text}`: unknown time unit `{unit}` (use us, ms, s or min)")),
    };
    Ok(Duration::from_micros(scaled(value, micros_per_unit, text)?))
}

pub fn format_duration(d: Duration) -> String {
    let us = d.as_micros() as u64;
    if us == 0 {
        "0s".into()
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// "20Mbit/s", "20 Mbps", "20mbit", "1.5Gbit/s", "500kbit/s", "10Mibit/s" (binary prefixes as in
/// dFEC's "Mibps"), "9600bit/s".
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split(text)?;
    let bits_per_unit = match bits_per(unit) {
        Some(scale) => scale,
        None if unit.is_empty() => {
            return Err(format!("`{text}` needs a unit: bit/s, kbit/s, Mbit/s or Gbit/s (e.g. \"20Mbit/s\")"))
        }
        None => {
            return Err(format!("`{text}`: unknown rate unit `{unit}` (use bit/s, kbit/s, Mbit/s, Gbit/s)"))
        }
    };
    let rate = scaled(value, bits_per_unit, text)?;
    if rate == 0 {
        return Err(format!("rate `{text}` must be positive"));
    }
    Ok(rate)
}

pub fn format_rate(bps: u64) -> String {
    if bps.is_multiple_of(1_000_000_000) {
        format!("{}Gbit/s", bps / 1_000_000_000)
    } else if bps.is_multiple_of(1_000_000) {
        format!("{}Mbit/s", bps / 1_000_000)
    } else if bps.is_multiple_of(1_000) {
        format!("{}kbit/s", bps / 1_000)
    } else {
        format!("{bps}bit/s")
    }
}

/// "11492499B", "32KiB", "1.5MB" (decimal: kB = 1000), "1GiB".
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (value, unit) = split(text)?;
    let bytes_per_unit = match unit {
        "B" | "" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        _ => return Err(format!("`{text}`: unknown size unit `{unit}` (use B, kB, MB, GB, KiB, MiB, GiB)")),
    };
    scaled(value, bytes_per_unit, text)
}

/// "2%", "0.5 %" → a fraction in [0, 1].
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let (value, unit) = split(text)?;
    if unit != "%" {
        return Err(format!("`{text}` is not a percentage such as \"2%\""));
    }
    if value > 100.0 {
        return Err(format!("`{text}` is above 100%"));
    }
    Ok(value / 100.0)
}

/// A quantity told apart by its unit, for specs whose parts come in any order
/// (`"20mbit,50ms,2%"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantity {
    /// Bits per second.
    Rate(u64),
    Duration(Duration),
    /// A percentage, as a fraction in [0, 1].
    Fraction(f64),
}

/// A rate, a duration or a percentage, whichever its unit names.
pub fn parse_quantity(text: &str) -> Result<Quantity, String> {
    let (_, unit) = split(text)?;
    if unit == "%" {
        parse_percent(text).map(Quantity::Fraction)
    } else if bits_per(unit).is_some() {
        parse_rate(text).map(Quantity::Rate)
    } else if micros_per(unit).is_some() {
        parse_duration(text).map(Quantity::Duration)
    } else if unit.is_empty() {
        Err(format!(
            "`{}` has no unit (a rate such as 20mbit, a delay such as 50ms, a loss such as 2%)",
            text.trim()
        ))
    } else {
        Err(format!("`{}`: unknown unit `{unit}` (use mbit or Mbit/s, ms, %)", text.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_round_trip() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.5 s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("250µs").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("50MS").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        for us in [0u64, 7, 1000, 1_500_000, 60_000_000, 123_456] {
            let d = Duration::from_micros(us);
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
        assert!(parse_duration("50").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("5 weeks").unwrap_err().contains("unknown time unit"));
        assert!(parse_duration("-5ms").is_err());
        assert!(parse_duration("fast").unwrap_err().contains("does not start with a number"));
    }

    #[test]
    fn rates_parse_and_round_trip() {
        assert_eq!(parse_rate("20Mbit/s").unwrap(), 20_000_000);
        assert_eq!(parse_rate("20 Mbps").unwrap(), 20_000_000);
        assert_eq!(parse_rate("20mbit").unwrap(), 20_000_000);
        assert_eq!(parse_rate("1.5Gbit/s").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("1.5gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("20Mibps").unwrap(), 20 * 1_048_576);
        for bps in [1u64, 9600, 64_000, 20_000_000, 3_000_000_000, 20 * 1_048_576] {
            assert_eq!(parse_rate(&format_rate(bps)).unwrap(), bps);
        }
        assert!(parse_rate("0Mbit/s").unwrap_err().contains("positive"));
        assert!(parse_rate("20").unwrap_err().contains("needs a unit"));
        assert!(parse_rate("20mb").unwrap_err().contains("unknown rate unit"));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("11492499B").unwrap(), 11_492_499);
        assert_eq!(parse_size("32KiB").unwrap(), 32_768);
        assert_eq!(parse_size("1.5MB").unwrap(), 1_500_000);
        assert!(parse_size("3 bananas").is_err());
    }

    #[test]
    fn percentages_and_quantities() {
        assert!((parse_percent("2%").unwrap() - 0.02).abs() < 1e-12);
        assert!(parse_percent("101%").unwrap_err().contains("above 100%"));
        assert!(parse_percent("0.02").is_err());
        assert_eq!(parse_quantity("20mbit").unwrap(), Quantity::Rate(20_000_000));
        assert_eq!(parse_quantity("20 Mbit/s").unwrap(), Quantity::Rate(20_000_000));
        assert_eq!(parse_quantity("50ms").unwrap(), Quantity::Duration(Duration::from_millis(50)));
        assert_eq!(parse_quantity("50%").unwrap(), Quantity::Fraction(0.5));
        assert!(parse_quantity("20").unwrap_err().contains("has no unit"));
        assert!(parse_quantity("20mb").unwrap_err().contains("unknown unit"));
    }
}
