//! Quantities with units, as written in scenario files: durations ("50ms"), rates ("20Mbit/s")
//! and sizes ("32KiB"). Parsing accepts a number, optional spaces and a unit; formatting picks the
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

/// "50ms", "1.5 s", "200us", "200µs", "3min", or "0". Microsecond resolution (the clock's).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split(text)?;
    let micros_per_unit = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "min" => 60e6,
        "" if value == 0.0 => 1.0,
        "" => return Err(format!("`{text}` needs a unit: us, ms, s or min (e.g. \"50ms\")")),
        _ => return Err(format!("`{text}`: unknown time unit `{unit}` (use us, ms, s or min)")),
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

/// "20Mbit/s", "20 Mbps", "1.5Gbit/s", "500kbit/s", "10Mibit/s" (binary prefixes as in dFEC's
/// "Mibps"), "9600bit/s".
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split(text)?;
    let unit_lower = unit.to_ascii_lowercase();
    let bits_per_unit = match unit_lower.as_str() {
        "bit/s" | "bps" => 1.0,
        "kbit/s" | "kbps" => 1e3,
        "mbit/s" | "mbps" => 1e6,
        "gbit/s" | "gbps" => 1e9,
        "kibit/s" | "kibps" => 1024.0,
        "mibit/s" | "mibps" => 1_048_576.0,
        "gibit/s" | "gibps" => 1_073_741_824.0,
        "" => {
            return Err(format!("`{text}` needs a unit: bit/s, kbit/s, Mbit/s or Gbit/s (e.g. \"20Mbit/s\")"))
        }
        _ => return Err(format!("`{text}`: unknown rate unit `{unit}` (use bit/s, kbit/s, Mbit/s, Gbit/s)")),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_round_trip() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.5 s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
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
        assert_eq!(parse_rate("1.5Gbit/s").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("20Mibps").unwrap(), 20 * 1_048_576);
        for bps in [1u64, 9600, 64_000, 20_000_000, 3_000_000_000, 20 * 1_048_576] {
            assert_eq!(parse_rate(&format_rate(bps)).unwrap(), bps);
        }
        assert!(parse_rate("0Mbit/s").unwrap_err().contains("positive"));
        assert!(parse_rate("20").unwrap_err().contains("needs a unit"));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("11492499B").unwrap(), 11_492_499);
        assert_eq!(parse_size("32KiB").unwrap(), 32_768);
        assert_eq!(parse_size("1.5MB").unwrap(), 1_500_000);
        assert!(parse_size("3 bananas").is_err());
    }
}
