//! Sizes and durations as text: the parsers of the values given to
//! [`ConfigBuilder::set`](super::ConfigBuilder::set) and the formatters that
//! `numagc info` and the error messages use.
//!
//! Invariant: [`format_size`] is exact, and [`parse_size`] reads what it
//! writes back to the same byte count; [`format_size_approx`]'s "about"
//! form is for people only, so `size_text` shows it in parentheses after
//! the exact text, never instead of it.

use super::{GIB, KIB, MIB, TIB};

/// Parses a duration in milliseconds: digits, then an optional unit `ms`
/// or `s` (no unit: milliseconds). `None` for anything else or overflow.
pub fn parse_millis(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let scale = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "ms" => 1,
        "s" => 1000,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// Parses a byte size: digits, then an optional binary unit (`K`, `KB`, `KiB`, `M`,
/// `G`, `T`, ... all multiples of 1024, case-insensitive). `None` for empty, signed,
/// fractional, unknown-unit or overflowing input.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let shift = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(1usize << shift)
}

/// A byte count for people: [`format_size`] when that has at most four
/// digits ("64 KiB", "4104 MiB"), else rounded to a tenth of the largest
/// unit it reaches ("about 17.7 GiB").
pub fn format_size_approx(bytes: usize) -> String {
    const UNITS: [(usize, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    let exact = format_size(bytes);
    if exact
        .split(' ')
        .next()
        .is_some_and(|digits| digits.len() <= 4)
    {
        return exact;
    }
    match UNITS.iter().find(|(unit, _)| bytes >= *unit) {
        Some((unit, name)) => format!("about {:.1} {name}", bytes as f64 / *unit as f64),
        None => exact,
    }
}

/// `format_size`, then `format_size_approx` in parentheses when they differ.
pub(super) fn size_text(bytes: usize) -> String {
    let (exact, approx) = (format_size(bytes), format_size_approx(bytes));
    if exact == approx {
        exact
    } else {
        format!("{exact} ({approx})")
    }
}

/// Formats a byte count in the largest binary unit that divides it exactly ("64 KiB", "1000 B").
pub fn format_size(bytes: usize) -> String {
    const UNITS: [(usize, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes != 0 && bytes.is_multiple_of(*unit))
        .map(|(unit, name)| format!("{} {name}", bytes / unit))
        .unwrap_or_else(|| format!("{bytes} B"))
}
