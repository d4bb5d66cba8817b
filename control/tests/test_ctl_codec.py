import pytest

from p4cc_control import codec
from p4cc_control.errors import ValueOutOfRange
from p4cc_control.p4info import FieldInfo


def f(w, kind=None, name="x"):
    return FieldInfo(1, name, w, kind, "t")


@pytest.mark.parametrize("n,b", [(0, b"\x00"), (1, b"\x01"), (255, b"\xff"), (256, b"\x01\x00"),
                                 (0x0a000001, b"\x0a\x00\x00\x01")])
def test_canonical_encoding(n, b):
    assert codec.encode_int(n) == b
    assert codec.decode_int(b) == n


@pytest.mark.parametrize("value,width,expected", [
    (42, 9, 42), ("42", 9, 42), ("0x1ff", 9, 511), ("0b101", 3, 5), (True, 1, 1),
    ("10.0.0.1", 32, 0x0a000001), ("00:11:22:33:44:55", 48, 0x001122334455),
    ("00-11-22-33-44-55", 48, 0x001122334455), ("2001:db8::1", 128, 0x20010db8 << 96 | 1),
    (b"\x01\x00", 16, 256),
])
def test_parse(value, width, expected):
    assert codec.parse_int(value, width) == expected


@pytest.mark.parametrize("value,width", [
    (512, 9), (-1, 9), ("0x200", 9), ("10.0.0.1", 48), ("00:11:22:33:44:55", 32),
    ("10.0.0.256", 32), ("banana", 32), ("", 8), (1.5, 8), (b"\x01\x00", 8),
])
def test_out_of_range(value, width):
    with pytest.raises(ValueOutOfRange) as e:
        codec.parse_int(value, width, "tbl.fld")
    assert "tbl.fld" in str(e.value) and f"bit<{width}>" in str(e.value)
    assert "\n" not in str(e.value)


def test_lpm():
    fm = codec.encode_match("10.0.1.0/24", f(32, "lpm"))
    assert fm.lpm.value == b"\x0a\x00\x01\x00" and fm.lpm.prefix_len == 24
    fm = codec.encode_match(("10.0.1.1", 32), f(32, "lpm"))
    assert fm.lpm.prefix_len == 32
    assert codec.encode_match("10.0.1.1", f(32, "lpm")).lpm.prefix_len == 32
    assert codec.encode_match("0.0.0.0/0", f(32, "lpm")) is None  # don't care
    with pytest.raises(ValueOutOfRange, match="beyond the /24"):
        codec.encode_match("10.0.1.5/24", f(32, "lpm"))
    with pytest.raises(ValueOutOfRange, match="prefix length"):
        codec.encode_match("10.0.1.0/33", f(32, "lpm"))


def test_ternary_range_optional():
    fm = codec.encode_match("0x0a00&&&0xff00", f(16, "ternary"))
    assert fm.ternary.value == b"\x0a\x00" and fm.ternary.mask == b"\xff\x00"
    assert codec.encode_match((0, 0), f(16, "ternary")) is None
    with pytest.raises(ValueOutOfRange, match="outside the mask"):
        codec.encode_match("0x0a01&&&0xff00", f(16, "ternary"))
    fm = codec.encode_match("10..20", f(16, "range"))
    assert (fm.range.low, fm.range.high) == (b"\x0a", b"\x14")
    with pytest.raises(ValueOutOfRange, match="low > high"):
        codec.encode_match((5, 1), f(16, "range"))
    assert codec.encode_match(None, f(8, "optional")) is None
    assert codec.encode_match(7, f(8, "optional")).optional.value == b"\x07"


def test_decode_roundtrip():
    for value, w, kind, name in [("10.0.1.0/24", 32, "lpm", "dst_addr"),
                                 ("00:11:22:33:44:55", 48, "exact", "dst_mac"),
                                 (7, 9, "exact", "egress_port")]:
        fi = f(w, kind, name)
        fm = codec.encode_match(value, fi)
        assert codec.decode_match(fm, fi) == value
        assert codec.encode_match(codec.decode_match(fm, fi), fi) == fm


def test_format_value():
    assert codec.format_value(0x0a000001, 32, "collector_ip_addr") == "10.0.0.1"
    assert codec.format_value(0x001122334455, 48, "dst_mac") == "00:11:22:33:44:55"
    assert codec.format_value(20, 32, "k_depth") == 20
