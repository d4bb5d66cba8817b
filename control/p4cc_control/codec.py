"""Values <-> P4Runtime byte strings.

Everything the user types is parsed against the bitwidth the P4Info gives
its field, range-checked, then encoded in the canonical form of P4Runtime
1.3+ (shortest big-endian string, zero as one 0x00 byte), which is what a
server must accept and what it sends back on reads (read-write symmetry).

Accepted spellings of a value for a bit<W> field:
  int                         42
  decimal / hex / binary str  "42", "0x2a", "0b101010"
  IPv4 (W = 32)               "10.0.0.1"
  IPv6 (W = 128)              "2001:db8::1"
  MAC (W = 48)                "00:11:22:33:44:55" (or with '-')
  bytes                       b"\\x0a\\x00\\x00\\x01" (big-endian, must fit)
  bool (W = 1)                True/False
Match values add: LPM "10.0.1.0/24" or (value, prefix_len); ternary
"value&&&mask" or (value, mask); range "lo..hi" or (lo, hi).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Optional, Tuple

from .errors import ValueOutOfRange
from .p4info import FieldInfo

from p4.v1 import p4runtime_pb2  # noqa: E402

_MAC_RE = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$")


def _bad(where: str, bitwidth: int, value: Any, why: str = "") -> ValueOutOfRange:
    hi = (1 << bitwidth) - 1
    detail = f": {why}" if why else ""
    return ValueOutOfRange(
        f"value {value!r} does not fit {where} (bit<{bitwidth}>, 0..{hi}){detail}")


def parse_int(value: Any, bitwidth: int, where: str = "field") -> int:
    """Turn any accepted spelling into an int, checked against bit<W>."""
    if isinstance(value, bool):
        n = int(value)
    elif isinstance(value, int):
        n = value
    elif isinstance(value, (bytes, bytearray)):
        n = int.from_bytes(bytes(value), "big")
    elif isinstance(value, str):
        n = _parse_str(value.strip(), bitwidth, where)
    else:
        raise _bad(where, bitwidth, value, f"unsupported type {type(value).__name__}")
    if n < 0 or n >= (1 << bitwidth):
        raise _bad(where, bitwidth, value)
    return n


def _parse_str(s: str, bitwidth: int, where: str) -> int:
    if not s:
        raise _bad(where, bitwidth, s, "empty")
    if _MAC_RE.match(s):
        if bitwidth != 48:
            raise _bad(where, bitwidth, s, "a MAC address needs a 48-bit field")
        return int("".join(p.zfill(2) for p in re.split("[:-]", s)), 16)
    if s.count(".") == 3 and all(p.isdigit() for p in s.split(".")):
        try:
            ip = ipaddress.IPv4Address(s)
        except ValueError:
            raise _bad(where, bitwidth, s, "not an IPv4 address") from None
        if bitwidth != 32:
            raise _bad(where, bitwidth, s, "an IPv4 address needs a 32-bit field")
        return int(ip)
    if ":" in s:
        try:
            ip6 = ipaddress.IPv6Address(s)
        except ValueError:
            raise _bad(where, bitwidth, s, "not a MAC or IPv6 address") from None
        if bitwidth != 128:
            raise _bad(where, bitwidth, s, "an IPv6 address needs a 128-bit field")
        return int(ip6)
    try:
        n = int(s, 0)  # 42, 0x2a, 0o52, 0b101010; "1_000" too
    except ValueError:
        raise _bad(where, bitwidth, s, "not a number, IPv4/IPv6 or MAC address") from None
    return n


def encode_int(n: int, bitwidth: Optional[int] = None) -> bytes:
    """Canonical P4Runtime byte string: shortest, 0 -> b'\\x00'."""
    if n < 0:
        raise ValueOutOfRange(f"negative value {n} for an unsigned field")
    if bitwidth is not None and n >= (1 << bitwidth):
        raise ValueOutOfRange(f"value {n} does not fit bit<{bitwidth}>")
    return n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big")


def decode_int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def encode_value(value: Any, f: FieldInfo) -> bytes:
    return encode_int(parse_int(value, f.bitwidth, f.where), f.bitwidth)


# -- match fields ----------------------------------------------------------

def _split_lpm(value: Any, f: FieldInfo) -> Tuple[Any, int]:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], int(value[1])
    if isinstance(value, str) and "/" in value:
        v, plen = value.rsplit("/", 1)
        try:
            return v, int(plen)
        except ValueError:
            raise _bad(f.where, f.bitwidth, value, "bad prefix length") from None
    return value, f.bitwidth


def encode_match(value: Any, f: FieldInfo) -> Optional["p4runtime_pb2.FieldMatch"]:
    """A FieldMatch for `value`, or None for a don't-care (which P4Runtime
    spells by omitting the field: LPM /0, ternary mask 0)."""
    fm = p4runtime_pb2.FieldMatch(field_id=f.id)
    kind = f.match_type
    w = f.bitwidth
    if kind == "exact":
        fm.exact.value = encode_value(value, f)
    elif kind == "lpm":
        v, plen = _split_lpm(value, f)
        if not 0 <= plen <= w:
            raise _bad(f.where, w, value, f"prefix length must be 0..{w}")
        n = parse_int(v, w, f.where)
        host_bits = (1 << (w - plen)) - 1
        if n & host_bits:
            # ipaddress' strict rule: silently masking hides typos.
            raise _bad(f.where, w, value, f"bits beyond the /{plen} prefix are set")
        if plen == 0:
            return None
        fm.lpm.value = encode_int(n, w)
        fm.lpm.prefix_len = plen
    elif kind == "ternary":
        if isinstance(value, (tuple, list)) and len(value) == 2:
            v, m = value
        elif isinstance(value, str) and "&&&" in value:
            v, m = value.split("&&&", 1)
        else:
            v, m = value, (1 << w) - 1
        n, mask = parse_int(v, w, f.where), parse_int(m, w, f.where)
        if n & ~mask:
            raise _bad(f.where, w, value, "value has bits outside the mask")
        if mask == 0:
            return None
        fm.ternary.value = encode_int(n, w)
        fm.ternary.mask = encode_int(mask, w)
    elif kind == "range":
        if isinstance(value, (tuple, list)) and len(value) == 2:
            lo, hi = value
        elif isinstance(value, str) and ".." in value:
            lo, hi = value.split("..", 1)
        else:
            lo = hi = value
        lo_n, hi_n = parse_int(lo, w, f.where), parse_int(hi, w, f.where)
        if lo_n > hi_n:
            raise _bad(f.where, w, value, "range low > high")
        if lo_n == 0 and hi_n == (1 << w) - 1:
            return None
        fm.range.low = encode_int(lo_n, w)
        fm.range.high = encode_int(hi_n, w)
    elif kind == "optional":
        if value is None:
            return None
        fm.optional.value = encode_value(value, f)
    else:
        raise ValueOutOfRange(f"match kind of {f.where} is not supported by this controller")
    return fm


# -- decoding for humans ---------------------------------------------------

def format_value(n: int, bitwidth: int, name: str = ""):
    """Show a value the way a network person writes it: MAC and IP
    addresses as strings (by width and name), anything else as the int."""
    lname = name.lower()
    if bitwidth == 48 and ("mac" in lname or "addr" in lname or "eth" in lname):
        h = f"{n:012x}"
        return ":".join(h[i:i + 2] for i in range(0, 12, 2))
    if bitwidth == 32 and ("ip" in lname or "addr" in lname):
        return str(ipaddress.IPv4Address(n))
    if bitwidth == 128 and ("ip" in lname or "addr" in lname):
        return str(ipaddress.IPv6Address(n))
    return n


def decode_match(fm: "p4runtime_pb2.FieldMatch", f: FieldInfo):
    """FieldMatch -> the spelling encode_match accepts (round-trips)."""
    w = f.bitwidth
    kind = fm.WhichOneof("field_match_type")
    if kind == "exact":
        return format_value(decode_int(fm.exact.value), w, f.name)
    if kind == "lpm":
        return f"{format_value(decode_int(fm.lpm.value), w, f.name)}/{fm.lpm.prefix_len}"
    if kind == "ternary":
        return (f"{format_value(decode_int(fm.ternary.value), w, f.name)}"
                f"&&&{hex(decode_int(fm.ternary.mask))}")
    if kind == "range":
        return f"{decode_int(fm.range.low)}..{decode_int(fm.range.high)}"
    if kind == "optional":
        return format_value(decode_int(fm.optional.value), w, f.name)
    return None


def canonical_bytes(b: bytes) -> bytes:
    """Strip leading zero bytes (servers may send padded strings)."""
    return encode_int(decode_int(b))
