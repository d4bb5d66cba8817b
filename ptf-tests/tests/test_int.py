"""Telemetry for INT-based congestion control (shim version 2) and RED
marking (DCQCN's switch), on every target the controller can drive.

A version-2 record carries, beside version 1's fields, the bytes queued
at the egress port as the packet left, the port's transmitted bytes and
its line rate as the controller loaded it (docs/wire-format.md)."""
import math
import struct

from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from base import HOST_IP, HOST_MAC, SWITCH_ID, SWITCH_MAC, P4ccTest, depth_unit_code, sw_port
from p4cc_headers import SHIM_PORT

SHIM_LEN, INT_LEN = 8, 32
#: Where the first record starts in a received frame: Ethernet, IPv4, UDP, shim.
RECORD_AT = 14 + 20 + 8 + SHIM_LEN
MARK_SCALE = 65536


def int_packet(port_in, port_out, sport=45000, records=b"", hop_count=0, tos=2,
               payload=b"p4cc-int-payload"):
    shim = struct.pack("!BBBBI", 2, hop_count, 0, 0, 0) + records
    return (Ether(dst=SWITCH_MAC, src=HOST_MAC[port_in])
            / IP(src=HOST_IP[port_in], dst=HOST_IP[port_out], tos=tos, ttl=64, id=1)
            / UDP(sport=sport, dport=SHIM_PORT) / Raw(shim + payload))


def record(frame: bytes, i: int = 0) -> dict:
    """The i-th (newest first) version-2 record of a received frame."""
    o = RECORD_AT + i * INT_LEN
    sid, port, depth, delay, ts, qlen, tx, rate = struct.unpack("!HHIIQIII", frame[o:o + INT_LEN])
    return {"switch_id": sid, "egress_port": port, "enq_qdepth": depth, "deq_timedelta": delay,
            "egress_ts": ts, "qlen_bytes": qlen, "tx_bytes": tx, "rate_kbps": rate}


class IntRecordTest(P4ccTest):
    """One switch's record after a version-2 shim's fixed part: this switch,
    its port and queue, the line rate as loaded, and a transmitted-bytes
    counter that grows by each frame as it left (its new record included);
    an older record follows untouched."""

    def runTest(self):
        self.route(2)
        self.ops.set_port_rate(sw_port(2), 25_000_000_000)
        older = bytes(range(32))
        sent = int_packet(1, 2, records=older, hop_count=1)
        tu.send_packet(self, 1, sent)
        (a,) = self.poll_packets(2, 1)
        self.assertEqual(len(a), len(sent) + INT_LEN)
        version, hops, flags, units = struct.unpack("!BBBB", a[42:46])
        self.assertEqual((version, hops, flags), (2, 2, 0))
        self.assertEqual(units & 0x0F, depth_unit_code() & 0x0F)
        r = record(a)
        self.assertEqual((r["switch_id"], r["egress_port"]), (SWITCH_ID, sw_port(2)))
        self.assertEqual(r["rate_kbps"], 25_000_000)
        self.assertEqual(a[RECORD_AT + INT_LEN:RECORD_AT + 2 * INT_LEN], older)
        ip = Ether(a)[IP]
        self.assertEqual(ip.len, len(a) - 14)
        self.assertEqual(Ether(a)[UDP].len, len(a) - 34)
        # Bytes accumulate by frame length: a plain packet, then another shim.
        plain = tu.simple_udp_packet(eth_dst=SWITCH_MAC, eth_src=HOST_MAC[1], ip_src=HOST_IP[1],
                                     ip_dst=HOST_IP[2], udp_dport=9, pktlen=300)
        tu.send_packet(self, 1, plain)
        self.poll_packets(2, 1)
        tu.send_packet(self, 1, sent)
        (b,) = self.poll_packets(2, 1)
        grew = (record(b)["tx_bytes"] - r["tx_bytes"]) % (1 << 32)
        # Frame lengths as the switch counts them (no FCS): the plain packet
        # and the second shim packet with its new record.
        self.assertEqual(grew, len(bytes(plain)) + len(bytes(sent)) + INT_LEN)


class IntQueueBytesTest(P4ccTest):
    """On a real queue (the port slowed), each record's queue in bytes is
    the bytes still queued behind the packet as it left: every packet of
    the burst is the same length, so it is that length times the packets
    queued then (deq_qdepth, the enq depth of the ones behind it)."""

    def runTest(self):
        self.route(2)
        self.throttle(2, 200)
        n = 12
        sent = [int_packet(1, 2, sport=46000 + i) for i in range(n)]
        for s in sent:
            tu.send_packet(self, 1, s)
        got = self.poll_packets(2, n, timeout=n / 200 + 5)
        length = len(bytes(sent[0]))
        recs = [record(f) for f in got]
        depths = [r["enq_qdepth"] for r in recs]
        self.assertTrue(max(depths) >= 5, f"a queue built: {depths}")
        if self.target.depth_unit != "packets":
            return  # Tofino: 80-byte cells, checked by the hop records' own unit
        # The i-th packet left with the packets that arrived after it still
        # queued: the next one's enq depth says how many joined before it
        # left, so the last record sees an empty queue.
        self.assertEqual(recs[-1]["qlen_bytes"], 0)
        for r in recs[:-1]:
            self.assertEqual(r["qlen_bytes"] % length, 0, recs)
            self.assertLessEqual(r["qlen_bytes"] // length, n - 1)
        self.assertTrue(any(r["qlen_bytes"] > 0 for r in recs), recs)


class RedProbabilityTest(P4ccTest):
    """Between Kmin and Kmax, an ECT packet is marked with the profile's
    probability: a range covering the empty queue at p = 1/4 marks a
    binomial share of 400 packets (within 5 standard deviations); Not-ECT
    packets are never marked."""

    def runTest(self):
        self.route(2)
        t = self.sw.tables["ecn_red"]
        t.insert(match={"egress_port": sw_port(2), "enq_qdepth": (0, 1000)},
                 action="set_mark_probability", params={"mark_16": MARK_SCALE // 4}, priority=1)
        n, chunk = 400, 25
        marked = 0
        # In chunks the test side's capture keeps up with.
        for c in range(0, n, chunk):
            for i in range(c, c + chunk):
                tu.send_packet(self, 1, tu.simple_udp_packet(
                    eth_dst=SWITCH_MAC, eth_src=HOST_MAC[1], ip_src=HOST_IP[1],
                    ip_dst=HOST_IP[2], ip_tos=2, udp_sport=20000 + i, udp_dport=9))
            got = self.poll_packets(2, chunk, timeout=10)
            marked += sum(1 for f in got if Ether(f)[IP].tos & 3 == 3)
        sd = math.sqrt(n * 0.25 * 0.75)
        self.assertLess(abs(marked - n / 4), 5 * sd, f"{marked} of {n} marked, expected {n / 4}")
        self.assertEqual(self.packets("ce_marks", 2), marked)
        for i in range(50):
            tu.send_packet(self, 1, tu.simple_udp_packet(
                eth_dst=SWITCH_MAC, eth_src=HOST_MAC[1], ip_src=HOST_IP[1], ip_dst=HOST_IP[2],
                ip_tos=0, udp_sport=30000 + i, udp_dport=9))
        got = self.poll_packets(2, 50, timeout=10)
        self.assertFalse(any(Ether(f)[IP].tos & 3 for f in got), "Not-ECT marked")


class RedProfileTest(P4ccTest):
    """The controller's RED profile: no mark at or below Kmin, every packet
    above Kmax (on a slowed port, a burst whose depths straddle both), and
    it replaces a step at K on the same port."""

    def runTest(self):
        self.route(2)
        self.ops.set_k(2, 3)
        res = self.ops.set_red(sw_port(2), 4, 8, 0.5, self.target.depth_unit)
        self.assertEqual(self.sw.tables["ecn_threshold"].read(), [], "the step at K is gone")
        self.assertEqual(res["ranges"], 5)
        self.throttle(2, 200)
        n = 20
        sent = [int_packet(1, 2, sport=47000 + i) for i in range(n)]
        for s in sent:
            tu.send_packet(self, 1, s)
        got = self.poll_packets(2, n, timeout=n / 200 + 5)
        for f in got:
            depth = record(f)["enq_qdepth"]
            ce = Ether(f)[IP].tos & 3 == 3
            if depth <= 4:
                self.assertFalse(ce, f"marked at depth {depth} <= Kmin")
            if depth > 8:
                self.assertTrue(ce, f"not marked at depth {depth} > Kmax")
        self.assertTrue(max(record(f)["enq_qdepth"] for f in got) > 8)
        self.ops.clear_red(sw_port(2))
        self.assertEqual(self.ops.read_red(), {})


class ClockUnitTest(P4ccTest):
    """The switch's reports say the unit of its clock: µs by default (bmv2's
    v1model), ns where the target counts ns and the controller asks for it
    (the embedded target); a target that cannot is refused, naming it."""

    def runTest(self):
        from p4cc_control.errors import ValueOutOfRange
        if "clock_config" not in self.sw.tables:
            self.skipTest("this program has no clock_config (Tofino: always ns)")
        self.route(2)
        try:
            tu.send_packet(self, 1, int_packet(1, 2))
            (f,) = self.poll_packets(2, 1)
            self.assertEqual(f[45] >> 4, 0, "µs by default")
            if "ns" not in self.target.clock_units:
                with self.assertRaises(ValueOutOfRange):
                    self.ops.set_clock("ns")
                return
            self.ops.set_clock("ns")
            tu.send_packet(self, 1, int_packet(1, 2))
            (g,) = self.poll_packets(2, 1)
            self.assertEqual(g[45] >> 4, 1, "ns")
            # The same clock, a thousand times finer.
            self.assertGreater(record(g)["egress_ts"], 500 * record(f)["egress_ts"])
        finally:
            if "ns" in self.target.clock_units:
                self.ops.set_clock("us")
