"""In-band telemetry: the shim across one and two hops, a full stack,
max tracking, and shims the switch must leave alone."""
from ptf import testutils as tu
from ptf.mask import Mask

from base import P4ccTest
from p4cc_headers import P4ccHop, P4ccShim
from shim_util import ECN_ECT0, OVERFLOW, after_switch, read_shim, send_burst, shim_packet


# Byte offset of the newest hop record: Ethernet, IPv4, UDP, shim.
NEWEST_HOP = 14 + 20 + 8 + 8


def masked_hop(exp):
    """The queue delay and the timestamp of this hop are not predictable
    (scapy cannot locate a record inside the shim's list, hence offsets)."""
    m = Mask(exp)
    m.set_do_not_care((NEWEST_HOP + 8) * 8, 32)    # deq_timedelta_us
    m.set_do_not_care((NEWEST_HOP + 12) * 8, 64)   # egress_ts_us
    return m


def prior_hop(switch_id, depth):
    return P4ccHop(switch_id=switch_id, egress_port=9, enq_qdepth=depth,
                   deq_timedelta_us=3, egress_ts_us=123456)


class OneHopTest(P4ccTest):
    """An empty shim gets one record: this switch, its port, depth 0."""

    def runTest(self):
        self.route(2)
        sent = shim_packet(1, 2)
        tu.send_packet(self, 1, sent)
        exp = after_switch(sent, 2, ECN_ECT0, depth=0, delay_us=0, ts_us=0)
        tu.verify_packet(self, masked_hop(exp), 2)
        tu.verify_no_other_packets(self)


class SecondHopTest(P4ccTest):
    """A shim filled by a previous switch: our record goes on top, the
    previous one is kept, and the path maximum stays the previous hop's."""

    def runTest(self):
        self.route(2)
        sent = shim_packet(1, 2, hops=[prior_hop(1, 17)], max_qdepth=17)
        tu.send_packet(self, 1, sent)
        frame = self.poll_packets(2, 1)[0]
        _, shim = read_shim(frame)
        self.assertEqual(shim.hop_count, 2)
        self.assertEqual([h.switch_id for h in shim.hops], [7, 1])
        self.assertEqual(shim.max_qdepth, 17)
        hop = shim.hops[0]
        exp = after_switch(sent, 2, ECN_ECT0, 0, hop.deq_timedelta_us, hop.egress_ts_us)
        self.assertEqual(frame, bytes(exp))


class MaxTrackingTest(P4ccTest):
    """On a real queue, max_qdepth follows the deepest hop: our depth when
    it is deeper than what the packet carried, the carried value otherwise."""

    def runTest(self):
        self.route(2)
        self.throttle(2, 200)
        sent = [shim_packet(1, 2, hops=[prior_hop(1, 5)], max_qdepth=5, sport=41000 + i)
                for i in range(20)]
        send_burst(self, 1, sent)
        for s, frame in zip(sent, self.poll_packets(2, 20, timeout=10)):
            _, shim = read_shim(frame)
            self.assertEqual(shim.max_qdepth, max(5, shim.hops[0].enq_qdepth))
            hop = shim.hops[0]
            self.assertEqual(frame, bytes(after_switch(s, 2, ECN_ECT0, hop.enq_qdepth,
                                                       hop.deq_timedelta_us, hop.egress_ts_us)))


class StackFullTest(P4ccTest):
    """Four records already: no fifth, the overflow flag is set, and the
    maximum is still updated."""

    def runTest(self):
        self.route(2)
        self.throttle(2, 200)
        hops = [prior_hop(i, 1) for i in range(1, 5)]
        sent = [shim_packet(1, 2, hops=hops, max_qdepth=1, sport=42000 + i) for i in range(15)]
        send_burst(self, 1, sent)
        frames = self.poll_packets(2, 15, timeout=10)
        for s, frame in zip(sent, frames):
            _, shim = read_shim(frame)
            self.assertEqual(shim.hop_count, 4)
            self.assertEqual(shim.flags & OVERFLOW, OVERFLOW)
            self.assertEqual([h.switch_id for h in shim.hops], [1, 2, 3, 4])
        self.assertGreater(max(read_shim(f)[1].max_qdepth for f in frames), 1,
                           "a deeper queue than the carried maximum must raise max_qdepth")


class MalformedShimUntouchedTest(P4ccTest):
    """Another version, too many hops, or a shim cut short: forwarded as
    plain UDP (L2/L3 rewrite only), shim bytes unchanged."""

    def runTest(self):
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Ether
        from base import HOST_MAC, SWITCH_MAC
        self.route(2)
        cases = [shim_packet(1, 2, version=3),
                 shim_packet(1, 2, hops=[prior_hop(1, 1)], hop_count=5),
                 shim_packet(1, 2, hops=[prior_hop(1, 1)], hop_count=3, payload=b"")]
        for sent in cases:
            raw = bytes(sent)
            tu.send_packet(self, 1, raw)
            exp = Ether(raw)
            exp[Ether].src, exp[Ether].dst = SWITCH_MAC, HOST_MAC[2]
            exp[IP].ttl -= 1
            del exp[IP].chksum
            exp = Ether(bytes(exp))
            self.assertEqual(bytes(exp[UDP]), bytes(Ether(raw)[UDP]))
            tu.verify_packet(self, exp, 2)
        tu.verify_no_other_packets(self)


class NonShimUntouchedTest(P4ccTest):
    """UDP to another port carries no shim: only L2/L3 are rewritten."""

    def runTest(self):
        from base import HOST_IP, HOST_MAC, SWITCH_MAC
        self.route(2)
        pkt = tu.simple_udp_packet(eth_dst=SWITCH_MAC, eth_src=HOST_MAC[1], ip_src=HOST_IP[1],
                                   ip_dst=HOST_IP[2], udp_dport=7361, ip_ttl=64)
        exp = tu.simple_udp_packet(eth_dst=HOST_MAC[2], eth_src=SWITCH_MAC, ip_src=HOST_IP[1],
                                   ip_dst=HOST_IP[2], udp_dport=7361, ip_ttl=63)
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, exp, 2)
