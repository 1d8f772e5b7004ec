//! Durations as users type them: `90s`, `15m`, `2h`, `1d`, `6w`, `1y` (365 days), or
//! combinations like `1h30m`. Used by `--expires-in` and `--older-than`.

use std::time::Duration;

/// The longest duration guardctl accepts: 1000 years. Longer is a typo, and seconds beyond
/// `i64` would wrap into the past.
pub const MAX_SECS: u64 = 1000 * 365 * 86_400;

pub fn parse(input: &str) -> Result<Duration, String> {
    let s = input.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
            continue;
        }
        let unit: u64 = match ch {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            'y' => 365 * 86_400,
            _ => {
                return Err(format!(
                    "invalid duration `{input}`: unknown unit `{ch}` (use s, m, h, d, w, y)"
                ));
            }
        };
        if digits.is_empty() {
            return Err(format!(
                "invalid duration `{input}`: a number must precede `{ch}`"
            ));
        }
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("invalid duration `{input}`: number too large"))?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("invalid duration `{input}`: too large"))?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(format!(
            "invalid duration `{input}`: missing unit after `{digits}` (e.g. 15m, 2h, 1d)"
        ));
    }
    if total == 0 {
        return Err(format!("invalid duration `{input}`: must be greater than zero"));
    }
    if total > MAX_SECS {
        return Err(format!("invalid duration `{input}`: longer than 1000y"));
    }
    Ok(Duration::from_secs(total))
}

/// Compact, human form of a number of seconds: `14m`, `3h`, `5d`, `2y`.
pub fn humanize(secs: i64) -> String {
    let a = secs.unsigned_abs();
    let text = if a < 60 {
        format!("{a}s")
    } else if a < 3600 {
        format!("{}m", a / 60)
    } else if a < 86_400 {
        format!("{}h", a / 3600)
    } else if a < 365 * 86_400 {
        format!("{}d", a / 86_400)
    } else {
        format!("{}y", a / (365 * 86_400))
    };
    if secs < 0 { format!("-{text}") } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_combinations() {
        assert_eq!(parse("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1y"), Ok(Duration::from_secs(365 * 86_400)));
    }

    #[test]
    fn rejects_garbage_zero_and_overflow() {
        for bad in [
            "",
            "15",
            "m",
            "1x",
            "0m",
            "-1m",
            "99999999999999999999y",
            "1.5h",
            "1001y",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("1000y"), Ok(Duration::from_secs(MAX_SECS)));
    }

    #[test]
    fn humanize_picks_the_largest_unit() {
        assert_eq!(humanize(59), "59s");
        assert_eq!(humanize(14 * 60 + 59), "14m");
        assert_eq!(humanize(3 * 86_400), "3d");
        assert_eq!(humanize(-120), "-2m");
        assert_eq!(humanize(800 * 86_400), "2y");
    }
}
