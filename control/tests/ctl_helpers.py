"""Helpers of the controller tests (a unique module name: pytest runs
several projects' tests in one process)."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONTROL = os.path.dirname(HERE)
REPO = os.path.dirname(CONTROL)
if CONTROL not in sys.path:
    sys.path.insert(0, CONTROL)

import p4cc_control  # noqa: E402,F401  (selects the protobuf backend first)
from p4.config.v1 import p4info_pb2  # noqa: E402

from p4cc_control.p4info import P4Info  # noqa: E402
from p4cc_topo.listen_ports import free_tcp_port as free_port  # noqa: E402,F401  (tests import it from here)

# Where the compiled program is looked for: the committed build, then the
# scratch dir the brief's p4c command writes to, then $P4CC_P4INFO.
P4INFO_CANDIDATES = [
    os.environ.get("P4CC_P4INFO", ""),
    os.path.join(REPO, "p4src", "build", "cc_switch.p4info.bin"),
    "/tmp/cc/cc_switch.p4info.bin",
]


def real_build():
    """(p4info_path, json_path) of the real compiled program, or (None, None)."""
    for p in P4INFO_CANDIDATES:
        if p and os.path.exists(p):
            j = p.replace(".p4info.bin", ".json")
            return p, (j if os.path.exists(j) else None)
    return None, None


def synthetic_p4info() -> P4Info:
    """A P4Info shaped like p4c's for cc_switch.p4 (same names, widths,
    match kinds), for logic tests that must run before p4c exists."""
    m = p4info_pb2.P4Info()
    m.pkg_info.arch = "v1model"
    nid = [0]

    def pid(prefix):
        nid[0] += 1
        return (prefix << 24) | nid[0]

    actions = {}

    def action(name, alias, params):
        a = m.actions.add()
        a.preamble.id = 21257015 if name == "NoAction" else pid(0x01)
        a.preamble.name, a.preamble.alias = name, alias
        for i, (pn, w) in enumerate(params, 1):
            a.params.add(id=i, name=pn, bitwidth=w)
        actions[name] = a.preamble.id
        return a.preamble.id

    action("NoAction", "NoAction", [])
    action("CcIngress.forwarding.forward", "forward", [("port", 9), ("dst_mac", 48)])
    action("CcIngress.forwarding.drop", "drop", [])
    action("CcEgress.config.set_switch_id", "set_switch_id", [("switch_id", 16)])
    action("CcEgress.loss.set_loss", "set_loss", [("threshold_16", 32)])
    action("CcEgress.ecn.set_threshold", "set_threshold", [("k_depth", 32)])
    action("CcEgress.postcards.enable_postcards", "enable_postcards",
           [("sample_one_in_n", 32), ("collector_mac_addr", 48), ("switch_ip_addr", 32),
            ("collector_ip_addr", 32), ("collector_udp_port", 16)])

    def table(name, alias, fields, acts, size):
        t = m.tables.add()
        t.preamble.id, t.preamble.name, t.preamble.alias = pid(0x02), name, alias
        for i, (fn, w, kind) in enumerate(fields, 1):
            t.match_fields.add(id=i, name=fn, bitwidth=w, match_type=kind)
        for a in acts:
            t.action_refs.add(id=actions[a])
        t.size = size

    E, L = p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.LPM
    table("CcIngress.forwarding.ipv4_lpm", "ipv4_lpm", [("dst_addr", 32, L)],
          ["CcIngress.forwarding.forward", "CcIngress.forwarding.drop"], 1024)
    table("CcEgress.config.switch_config", "switch_config", [],
          ["CcEgress.config.set_switch_id"], 1024)
    table("CcEgress.loss.port_loss", "port_loss", [("egress_port", 9, E)],
          ["CcEgress.loss.set_loss", "NoAction"], 512)
    table("CcEgress.ecn.ecn_threshold", "ecn_threshold", [("egress_port", 9, E)],
          ["CcEgress.ecn.set_threshold", "NoAction"], 512)
    table("CcEgress.postcards.postcard_config", "postcard_config", [],
          ["CcEgress.postcards.enable_postcards", "NoAction"], 1024)

    def counter(name, alias, unit):
        c = m.counters.add()
        c.preamble.id, c.preamble.name, c.preamble.alias = pid(0x12), name, alias
        c.spec.unit, c.size = unit, 512

    B, P = p4info_pb2.CounterSpec.BOTH, p4info_pb2.CounterSpec.PACKETS
    counter("CcIngress.rx.port_packets", "rx.port_packets", B)
    counter("CcIngress.forwarding.ingress_drops", "ingress_drops", P)
    counter("CcEgress.loss.loss_drops", "loss_drops", P)
    counter("CcEgress.ecn.ce_marks", "ce_marks", P)
    counter("CcEgress.tx.port_packets", "tx.port_packets", B)
    r = m.registers.add()
    r.preamble.id, r.preamble.name, r.preamble.alias = pid(0x13), \
        "CcEgress.postcards.postcard_sample_count", "postcard_sample_count"
    r.type_spec.bitstring.bit.bitwidth, r.size = 32, 1
    return P4Info(m, "synthetic")
