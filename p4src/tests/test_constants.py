"""Wire constants have one source, p4src/include/constants.p4: every copy
in Rust and Python (each language needs its own) is checked against it, so
a change in one place that the others miss fails here."""
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSTANTS_P4 = REPO / "p4src/include/constants.p4"

# constants.p4 name -> every copy: ("rust", file, const name) or ("py", module, attribute)
COPIES = {
    "P4CC_SHIM_UDP_PORT": [("rust", "hosts/telemetry/src/shim.rs", "DATA_PORT"),
                           ("py", "p4cc_exp.agents", "UDP_PORT")],
    "P4CC_SHIM_VERSION": [("rust", "hosts/telemetry/src/shim.rs", "SHIM_VERSION")],
    "P4CC_MAX_HOPS": [("rust", "hosts/telemetry/src/shim.rs", "MAX_HOPS")],
    "SHIM_FLAG_OVERFLOW": [("rust", "hosts/telemetry/src/shim.rs", "FLAG_OVERFLOW"),
                           ("py", "shim_util", "OVERFLOW")],
    "SHIM_LEN_BYTES": [("rust", "hosts/telemetry/src/shim.rs", "SHIM_FIXED_LEN")],
    "HOP_LEN_BYTES": [("rust", "hosts/telemetry/src/shim.rs", "HOP_LEN")],
    "POSTCARD_SESSION": [("py", "p4cc_control.operations", "POSTCARD_SESSION")],
    "POSTCARD_VERSION": [("rust", "hosts/telemetry/src/postcard.rs", "POSTCARD_VERSION")],
    "POSTCARD_UDP_SRC": [("py", "p4cc_control.operations", "POSTCARD_UDP_PORT")],
    "POSTCARD_LEN_BYTES": [("rust", "hosts/telemetry/src/postcard.rs", "POSTCARD_LEN")],
    "POSTCARD_FRAME_LEN": [("py", "p4cc_control.operations", "POSTCARD_FRAME_LEN")],
    "LOSS_SCALE": [("py", "p4cc_control.operations", "LOSS_SCALE")],
    "POSTCARD_REPORTED_BYTES": [("py", "p4cc_control.targets", "POSTCARD_REPORTED_BYTES")],
    "POSTCARD_UNITS_V1MODEL": [("rust", "hosts/telemetry/src/postcard.rs", "UNITS_V1MODEL")],
    "POSTCARD_UNITS_TOFINO": [("rust", "hosts/telemetry/src/postcard.rs", "UNITS_TOFINO")],
}
# Units that constants.p4 names by their code; the cell's size is in the name.
CELL_BYTES = [("rust", "hosts/telemetry/src/shim.rs", "CELL_BYTES"),
              ("py", "p4cc_control.targets", "CELL_BYTES")]


def p4_constants() -> dict[str, int]:
    text = CONSTANTS_P4.read_text()
    out = {m.group(1): int(m.group(2), 0) for m in re.finditer(
        r"^const\s+bit<\d+>\s+(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", text, re.M)}
    out.update({m.group(1): int(m.group(2), 0) for m in re.finditer(
        r"^#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", text, re.M)})
    return out


def rust_constant(path: str, name: str) -> int:
    text = (REPO / path).read_text()
    m = re.search(rf"pub const {name}: \w+ = (0x[0-9a-fA-F_]+|[\d_]+);", text)
    assert m, f"{path}: no `pub const {name}` with a literal value"
    return int(m.group(1).replace("_", ""), 0)


def py_constant(module: str, name: str) -> int:
    if module == "shim_util":
        sys.path.insert(0, str(REPO / "ptf-tests/tests"))
    import importlib
    return getattr(importlib.import_module(module), name)


def copy_value(kind: str, where: str, name: str) -> int:
    return rust_constant(where, name) if kind == "rust" else py_constant(where, name)


@pytest.mark.parametrize("p4_name", sorted(COPIES))
def test_every_copy_matches_constants_p4(p4_name):
    p4 = p4_constants()
    assert p4_name in p4, f"{p4_name} is no longer in {CONSTANTS_P4.name}"
    for kind, where, name in COPIES[p4_name]:
        assert copy_value(kind, where, name) == p4[p4_name], \
            f"{where}:{name} differs from constants.p4 {p4_name} = {p4[p4_name]}"


def test_cell_size_is_the_one_constants_p4_names():
    assert "DEPTH_UNIT_CELLS80" in p4_constants()
    for kind, where, name in CELL_BYTES:
        assert copy_value(kind, where, name) == 80, f"{where}:{name}"


TNA_P4 = REPO / "p4src/tna/cc_switch.p4"


def tna_mirror_header_bits() -> int:
    """Total width of postcard_mirror_h as p4src/tna/cc_switch.p4 declares
    it (PortId_t is 9 bits on both chips)."""
    text = TNA_P4.read_text()
    body = re.search(r"header postcard_mirror_h \{(.*?)\n\}", text, re.S).group(1)
    bits = 0
    for m in re.finditer(r"^\s*(?:@padding\s+)?(bit<(\d+)>|PortId_t)\s+\w+\s*;", body, re.M):
        bits += int(m.group(2)) if m.group(2) else 9
    return bits


def test_tna_mirror_header_size_everywhere():
    """The mirror session truncates postcard copies to the mirror header
    plus what the copy's parser reads: the controller's truncation, the
    constant in the TNA program and the header must agree."""
    from p4cc_control.targets import POSTCARD_MIRROR_BYTES_TNA, TofinoTarget

    m = re.search(r"const bit<16> POSTCARD_MIRROR_BYTES = (\d+);", TNA_P4.read_text())
    assert m, "POSTCARD_MIRROR_BYTES is no longer in p4src/tna/cc_switch.p4"
    assert tna_mirror_header_bits() == 8 * int(m.group(1))
    assert POSTCARD_MIRROR_BYTES_TNA == int(m.group(1))
    assert TofinoTarget.postcard_truncate == int(m.group(1)) + \
        p4_constants()["POSTCARD_REPORTED_BYTES"]
    # What the copy's parser extracts after the mirror header: Ethernet,
    # IPv4 and the 4-byte L4 ports.
    assert p4_constants()["POSTCARD_REPORTED_BYTES"] == 14 + 20 + 4


def test_the_parser_sees_the_constants():
    p4 = p4_constants()
    assert p4["P4CC_SHIM_UDP_PORT"] == 7360 and p4["P4CC_MAX_HOPS"] == 4
    assert len(p4) >= 20
