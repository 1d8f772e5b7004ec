//! Durations as users type them: `90s`, `15m` or `15min`, `2h`, `1d`, `6w`, `6mo` (30
//! days), `1y` (365 days), unit words (`3months`, `2 weeks`), or combinations like `1h30m`.
//! Used by `--expires-in` and `--older-than`; an age (`--older-than`) refuses the bare `m`,
//! which reads as minutes to git and as months to people ([`parse_age`]).

use std::time::Duration;

/// The longest duration guardctl accepts: 1000 years. Longer is a typo, and seconds beyond
/// `i64` would wrap into the past.
pub const MAX_SECS: u64 = 1000 * 365 * 86_400;

const DAY: u64 = 86_400;

/// A unit's seconds, by every name it goes by.
fn unit(name: &str) -> Option<u64> {
    Some(match name {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => DAY,
        "w" | "wk" | "wks" | "week" | "weeks" => 7 * DAY,
        "mo" | "mon" | "month" | "months" => 30 * DAY,
        "y" | "yr" | "yrs" | "year" | "years" => 365 * DAY,
        _ => return None,
    })
}

/// A duration (`--expires-in`): `m` is minutes, as git and most tools read it.
pub fn parse(input: &str) -> Result<Duration, String> {
    parse_with(input, false)
}

/// An age (`--older-than`): as [`parse`], but a bare `m` is refused, since `6m` for an age
/// is as likely six months as six minutes.
pub fn parse_age(input: &str) -> Result<Duration, String> {
    parse_with(input, true)
}

fn parse_with(input: &str, age: bool) -> Result<Duration, String> {
    let s = input.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (digits, after) = rest.split_at(digits_end);
        let after = after.trim_start();
        let name_end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (name, after) = after.split_at(name_end);
        if digits.is_empty() {
            return Err(match name.is_empty() {
                true => format!(
                    "invalid duration `{input}`: unexpected `{}`",
                    after.chars().next().unwrap_or(' ')
                ),
                false => format!("invalid duration `{input}`: a number must precede `{name}`"),
            });
        }
        if name.is_empty() {
            return Err(format!(
                "invalid duration `{input}`: missing unit after `{digits}` (e.g. 15min, 2h, 1d, 6mo)"
            ));
        }
        let lower = name.to_ascii_lowercase();
        if age && lower == "m" {
            return Err(format!(
                "ambiguous age `{input}`: `m` could be minutes or months; write {digits}min or {digits}mo"
            ));
        }
        let Some(secs) = unit(&lower) else {
            return Err(format!(
                "invalid duration `{input}`: unknown unit `{name}` (use s, min, h, d, w, mo, y)"
            ));
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("invalid duration `{input}`: number too large"))?;
        total = n
            .checked_mul(secs)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("invalid duration `{input}`: too large"))?;
        rest = after.trim_start();
    }
    if total == 0 {
        return Err(format!("invalid duration `{input}`: must be greater than zero"));
    }
    if total > MAX_SECS {
        return Err(format!("invalid duration `{input}`: longer than 1000y"));
    }
    Ok(Duration::from_secs(total))
}

/// A number of seconds in words, in the largest unit that measures it exactly ("6 months",
/// "90 minutes", "1 year"): how a threshold is said to a reviewer.
pub fn words(secs: u64) -> String {
    let (n, name) = [
        (365 * DAY, "year"),
        (30 * DAY, "month"),
        (7 * DAY, "week"),
        (DAY, "day"),
        (3600, "hour"),
        (60, "minute"),
        (1, "second"),
    ]
    .into_iter()
    .find(|(u, _)| secs >= *u && secs.is_multiple_of(*u))
    .map_or((secs, "second"), |(u, name)| (secs / u, name));
    format!("{n} {name}{}", if n == 1 { "" } else { "s" })
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

    /// Issue 34 item 6: months and unit words are understood; an age refuses the bare `m`.
    #[test]
    fn months_and_words_parse_and_an_age_refuses_a_bare_m() {
        assert_eq!(parse("6mo"), Ok(Duration::from_secs(180 * DAY)));
        assert_eq!(parse("3months"), Ok(Duration::from_secs(90 * DAY)));
        assert_eq!(parse("2 weeks"), Ok(Duration::from_secs(14 * DAY)));
        assert_eq!(parse("1year"), Ok(Duration::from_secs(365 * DAY)));
        assert_eq!(parse("90min"), Ok(Duration::from_secs(5400)));
        assert_eq!(
            parse("6m"),
            Ok(Duration::from_secs(360)),
            "minutes, for an expiry"
        );
        assert_eq!(parse_age("6mo"), Ok(Duration::from_secs(180 * DAY)));
        assert_eq!(parse_age("6min"), Ok(Duration::from_secs(360)));
        let e = parse_age("6m").unwrap_err();
        assert!(e.contains("6min") && e.contains("6mo"), "{e}");
        assert!(parse("3moons").is_err());
    }

    #[test]
    fn words_say_the_largest_exact_unit() {
        assert_eq!(words(180 * DAY), "6 months");
        assert_eq!(words(365 * DAY), "1 year");
        assert_eq!(words(14 * DAY), "2 weeks");
        assert_eq!(words(90 * DAY), "3 months");
        assert_eq!(words(5400), "90 minutes");
        assert_eq!(words(1), "1 second");
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
