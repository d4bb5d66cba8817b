//! Small helpers to read the bmv2 JSON document (serde_json `Value`s) with
//! errors that say where in the document a problem is.

use crate::bits::bytes_to_u128;
use crate::error::{LoadError, LoadResult};
use serde_json::Value;
use std::collections::HashMap;

pub(crate) fn get<'a>(v: &'a Value, key: &str, at: &str) -> LoadResult<&'a Value> {
    match v.get(key) {
        Some(x) => Ok(x),
        None => Err(LoadError::bad(at, format!("missing attribute '{key}'"))),
    }
}

pub(crate) fn get_str<'a>(v: &'a Value, key: &str, at: &str) -> LoadResult<&'a str> {
    get(v, key, at)?
        .as_str()
        .ok_or_else(|| LoadError::bad(at, format!("attribute '{key}' is not a string")))
}

pub(crate) fn as_str<'a>(v: &'a Value, at: &str) -> LoadResult<&'a str> {
    v.as_str().ok_or_else(|| LoadError::bad(at, format!("expected a string, got {v}")))
}

pub(crate) fn get_arr<'a>(v: &'a Value, key: &str, at: &str) -> LoadResult<&'a [Value]> {
    match v.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(Value::Null) | None => Ok(&[]),
        Some(_) => Err(LoadError::bad(at, format!("attribute '{key}' is not an array"))),
    }
}

pub(crate) fn as_arr<'a>(v: &'a Value, at: &str) -> LoadResult<&'a [Value]> {
    match v {
        Value::Array(a) => Ok(a),
        _ => Err(LoadError::bad(at, format!("expected an array, got {v}"))),
    }
}

/// The first two elements of an array (`[header, field]`, `[offset, width]`, ...).
pub(crate) fn as_pair<'a>(v: &'a Value, at: &str) -> LoadResult<(&'a Value, &'a Value)> {
    match v {
        Value::Array(a) if a.len() >= 2 => Ok((&a[0], &a[1])),
        _ => Err(LoadError::bad(at, format!("expected a 2-tuple, got {v}"))),
    }
}

pub(crate) fn get_u64(v: &Value, key: &str, at: &str) -> LoadResult<u64> {
    get(v, key, at)?
        .as_u64()
        .ok_or_else(|| LoadError::bad(at, format!("attribute '{key}' is not a non-negative integer")))
}

pub(crate) fn as_i64(v: &Value, at: &str) -> LoadResult<i64> {
    v.as_i64().ok_or_else(|| LoadError::bad(at, format!("expected an integer, got {v}")))
}

pub(crate) fn get_bool_or(v: &Value, key: &str, default: bool) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// The index a name table gives `name`; the error calls it a `what`.
pub(crate) fn lookup(table: &HashMap<String, usize>, what: &str, name: &str, at: &str) -> LoadResult<usize> {
    table.get(name).copied().ok_or_else(|| LoadError::bad(at, format!("unknown {what} '{name}'")))
}

/// Name of an object, for error messages.
pub(crate) fn name_of(v: &Value) -> String {
    v.get("name").and_then(Value::as_str).unwrap_or("?").to_string()
}

/// Parses a bmv2 hexstr ("0x0800", "-0x1", "0xabc") into (negative, bytes
/// big-endian, odd hex digits left-padded).
pub(crate) fn hexstr_bytes(s: &str, at: &str) -> LoadResult<(bool, Vec<u8>)> {
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let digits = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))
        .ok_or_else(|| LoadError::bad(at, format!("'{s}' is not a hexstr")))?;
    if digits.is_empty() {
        return Err(LoadError::bad(at, format!("'{s}' is not a hexstr")));
    }
    let mut padded = String::with_capacity(digits.len() + 1);
    if digits.len() % 2 == 1 {
        padded.push('0');
    }
    padded.push_str(digits);
    let mut out = Vec::with_capacity(padded.len() / 2);
    let b = padded.as_bytes();
    for i in (0..b.len()).step_by(2) {
        let hi = hexval(b[i]).ok_or_else(|| LoadError::bad(at, format!("'{s}' is not a hexstr")))?;
        let lo = hexval(b[i + 1]).ok_or_else(|| LoadError::bad(at, format!("'{s}' is not a hexstr")))?;
        out.push(hi << 4 | lo);
    }
    Ok((neg, out))
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// A hexstr as an expression constant: the value (two's complement in
/// i128) and whether it is a non-negative value of 2^127 or more ("wide",
/// to be compared as unsigned).
pub(crate) fn hexstr_value(s: &str, at: &str) -> LoadResult<(i128, bool)> {
    let (neg, bytes) = hexstr_bytes(s, at)?;
    let mag = bytes_to_u128(&bytes).ok_or_else(|| {
        LoadError::unsupported(at, format!("constant {s} is wider than 128 bits"))
    })?;
    if neg {
        if mag > 1u128 << 127 {
            return Err(LoadError::unsupported(at, format!("constant {s} is below -2^127")));
        }
        Ok(((mag as i128).wrapping_neg(), false))
    } else {
        Ok((mag as i128, mag >= 1u128 << 127))
    }
}

/// A non-negative hexstr as u128.
pub(crate) fn hexstr_u128(s: &str, at: &str) -> LoadResult<u128> {
    let (neg, bytes) = hexstr_bytes(s, at)?;
    if neg {
        return Err(LoadError::bad(at, format!("negative value {s} not allowed here")));
    }
    bytes_to_u128(&bytes)
        .ok_or_else(|| LoadError::unsupported(at, format!("value {s} is wider than 128 bits")))
}

/// The `value` of a `{"type": "hexstr", "value": ...}` object, or a bare
/// string / integer.
pub(crate) fn hex_or_int(v: &Value, at: &str) -> LoadResult<u128> {
    match v {
        Value::String(s) => hexstr_u128(s, at),
        Value::Number(n) => n
            .as_u64()
            .map(|x| x as u128)
            .ok_or_else(|| LoadError::bad(at, format!("expected a non-negative integer, got {n}"))),
        _ => Err(LoadError::bad(at, format!("expected a hexstr, got {v}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn hexstrs() {
        assert_eq!(hexstr_value("0x0800", "t").unwrap(), (0x800, false));
        assert_eq!(hexstr_value("-0x01", "t").unwrap(), (-1, false));
        assert_eq!(hexstr_value("0xabc", "t").unwrap(), (0xabc, false));
        let (v, wide) = hexstr_value("0xffffffffffffffffffffffffffffffff", "t").unwrap();
        assert_eq!(v, -1);
        assert!(wide);
        assert!(hexstr_value("0x1ffffffffffffffffffffffffffffffff", "t").is_err());
        assert_eq!(hexstr_value("0x000000000000000000000000000000000001", "t").unwrap(), (1, false));
        assert!(hexstr_value("12", "t").is_err());
    }
}
