"""Common set-up of the p4cc PTF tests.

The runner (ptf-tests/run.py) starts the switch, pushes the pipeline and
passes where to reach it as PTF test params. Every test starts from a
clean switch: tables emptied, defaults restored, counters zeroed, clone
session removed and every port's queue unthrottled. Entities are addressed
by their P4Info names through the p4cc controller library.

The tests are written once for every target; what differs comes from the
test params, never from a test:
  * port numbering: the tests number the PTF ports 1..4; the switch's own
    number of each (`switch_ports`, e.g. "0,1,2,3": tofino-model's device
    ports) is what goes into entries, counters and expected reports
    (sw_port());
  * units: K is set in the target's own queue unit, the one hop records
    and postcards report (packets on bmv2/embedded, 80-byte cells on
    Tofino), and expected shims/postcards carry the target's unit codes;
  * queue shaping: a target whose ports p4cc cannot slow through its
    controller (Tofino: shaping is Stratum's chassis config) skips the
    tests that need a standing queue, saying so.
"""
import atexit
import os
import sys
import time

import ptf
from ptf import testutils as tu
from ptf.base_tests import BaseTest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "control"))  # noqa: E402
from p4cc_control.switch import Switch  # noqa: E402
from p4cc_control.targets import make_target  # noqa: E402

# The PTF ports; sw_port() gives the switch's number of each.
PORTS = (1, 2, 3, 4)
SWITCH_MAC = "00:cc:00:00:00:01"
HOST_MAC = {1: "00:00:00:00:01:01", 2: "00:00:00:00:02:02",
            3: "00:00:00:00:03:03", 4: "00:00:00:00:04:04"}
HOST_IP = {1: "10.0.1.1", 2: "10.0.2.2", 3: "10.0.3.3", 4: "10.0.4.4"}
SWITCH_ID = 7
SWITCH_IP = "10.0.0.254"
COLLECTOR_PORT = 4
COLLECTOR_UDP = 9999

TABLES = ("ipv4_lpm", "ecn_threshold", "port_loss")
#: Tables of features a program may lack (p4cc_control.operations.FEATURE_NAMES).
OPTIONAL_TABLES = ("ecn_red", "port_rate", "ecmp_bucket")
KEYLESS_DEFAULTS = ("switch_config", "postcard_config")
COUNTERS = ("CcIngress.rx.port_packets", "CcEgress.tx.port_packets",
            "ingress_drops", "loss_drops", "ce_marks")
POSTCARD_SESSION = 100


def params():
    return tu.test_params_get()


def sw_port(port: int) -> int:
    """The switch's number of PTF port `port` (test param switch_ports,
    comma-separated, in PTF port order; default: the same numbers)."""
    given = params().get("switch_ports")
    if not given:
        return port
    return [int(x) for x in str(given).split(",")][PORTS.index(port)]


def depth_unit_code() -> int:
    """The shim's units byte this target writes: 0x00 (packets, µs), or on
    Tofino 0x11 (80-byte cells, hop records in ns)."""
    return 0x11 if params()["target"] == "tofino" else 0


def postcard_units() -> int:
    """The postcard units byte this target writes."""
    return 0x11 if params()["target"] == "tofino" else 0x00


class SwitchPortOps:
    """The lab operations (CcOps) with PTF port numbers and K in the
    target's queue unit: what a test writes reads the same on every target."""

    def __init__(self, ops, target):
        self._ops, self._target = ops, target

    def set_k(self, port, value, unit=None):
        return self._ops.set_k(sw_port(port), value, unit or self._target.depth_unit)

    def clear_k(self, port):
        return self._ops.clear_k(sw_port(port))

    def set_loss(self, port, p):
        return self._ops.set_loss(sw_port(port), p)

    def enable_postcards(self, collector_port, **kw):
        return self._ops.enable_postcards(sw_port(collector_port), **kw)

    def __getattr__(self, name):
        return getattr(self._ops, name)


_SESSION = {}


def session():
    """One controller connection for the whole PTF run: the tests share the
    switch, and one gRPC channel avoids an event loop per test."""
    if not _SESSION:
        p = params()
        links = [int(x) for x in str(p.get("link_ports") or "").split(",") if x]
        _SESSION["target"] = make_target(p["target"], admin_addr=p.get("admin_addr"),
                                         thrift_port=p.get("thrift_port"), chip=p.get("chip"),
                                         ports=[sw_port(x) for x in PORTS],
                                         link_admin_addr=p.get("link_admin_addr"),
                                         link_ports=links or None)
        _SESSION["sw"] = Switch.connect(p["grpc_addr"], device_id=int(p.get("device_id", 1)),
                                        p4info=p["p4info"], device_config=p["device_config"],
                                        push=False, reconnect=False,
                                        device_config_loader=_SESSION["target"].load_device_config)
        atexit.register(_SESSION["sw"].close)
    return _SESSION["sw"], _SESSION["target"]


class P4ccTest(BaseTest):
    """One switch connection per test; state reset before each."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.target_name = params()["target"]
        self.sw, self.target = session()
        self.ops = SwitchPortOps(self.sw.ops(self.target), self.target)
        self.reset_switch()

    def tearDown(self):
        try:
            self.unthrottle()
        finally:
            BaseTest.tearDown(self)

    # -- state --------------------------------------------------------
    def reset_switch(self):
        for t in TABLES:
            self.sw.tables[t].clear()
        for t in OPTIONAL_TABLES:
            if t in self.sw.tables:
                self.sw.tables[t].clear()
        self.sw.tables["switch_config"].set_default("set_switch_id", {"switch_id": SWITCH_ID})
        self.sw.tables["postcard_config"].set_default("NoAction")
        self.sw.clone_sessions.delete(POSTCARD_SESSION, missing_ok=True)
        # Through P4Runtime, or Thrift on bmv2 (its P4Runtime server has no
        # register support).
        self.ops.write_register("postcard_sample_count", 0, 0)
        for c in COUNTERS:
            self.sw.counters[c].reset()
        self.unthrottle()

    def unthrottle(self):
        if self.target.shapes_ports:
            for port in PORTS:
                self.target.set_port(sw_port(port), rate_pps=0)

    def route(self, port, prefix=None):
        """Route HOST_IP[port] (or a prefix) to `port`."""
        self.sw.tables["ipv4_lpm"].insert(
            match={"dst_addr": prefix or HOST_IP[port] + "/32"}, action="forward",
            params={"port": sw_port(port), "dst_mac": HOST_MAC[port]})

    def throttle(self, port, pps):
        """Slow `port`'s queue so a burst builds a real queue there (the
        test is skipped where the controller cannot shape ports)."""
        if not self.target.shapes_ports:
            self.skipTest(f"needs a standing queue: the {self.target.name} target's ports are "
                          "shaped outside P4Runtime (docs/tofino.md, Ports and shaping)")
        self.target.set_port(sw_port(port), rate_pps=pps)

    def packets(self, counter, index):
        """Packet count of one index (a PTF port) of a counter."""
        i = sw_port(index)
        return self.sw.counters[counter].read(i)[i][0]

    # -- packets ------------------------------------------------------
    def poll_packets(self, port, count, timeout=5.0):
        """The next `count` packets out of `port`, as bytes, in order."""
        got, deadline = [], time.time() + timeout
        while len(got) < count and time.time() < deadline:
            res = tu.dp_poll(self, device_number=0, port_number=port,
                             timeout=max(0.01, deadline - time.time()))
            if isinstance(res, self.dataplane.PollSuccess):
                got.append(bytes(res.packet))
        self.assertEqual(len(got), count, f"expected {count} packets on port {port}, got {len(got)}")
        return got
