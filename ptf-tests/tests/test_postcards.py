"""Postcards: 1-in-N egress clones to the collector port, rewritten into a
queue report and truncated (docs/wire-format.md)."""
from ptf import testutils as tu
from ptf.mask import Mask
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from base import (COLLECTOR_PORT, COLLECTOR_UDP, HOST_IP, HOST_MAC, SWITCH_ID, SWITCH_IP,
                  SWITCH_MAC, POSTCARD_SESSION, P4ccTest, postcard_units, sw_port)
from p4cc_headers import POSTCARD_FRAME_LEN, POSTCARD_SRC_PORT, P4ccPostcard
from test_forwarding import forwarded, tcp_from


def ip_int(a):
    return int.from_bytes(bytes(int(x) for x in a.split(".")), "big")


def expected_postcard(sport, length, port_in=1, port_out=2, any_depth=False):
    card = P4ccPostcard(version=1, units=postcard_units(), switch_id=SWITCH_ID,
                        ingress_port=sw_port(port_in), egress_port=sw_port(port_out),
                        enq_qdepth=0, deq_qdepth=0,
                        src_addr=ip_int(HOST_IP[port_in]), dst_addr=ip_int(HOST_IP[port_out]),
                        protocol=6, ecn=0, src_port=sport, dst_port=80, pkt_len=length)
    pkt = (Ether(dst=HOST_MAC[COLLECTOR_PORT], src=SWITCH_MAC)
           / IP(src=SWITCH_IP, dst=HOST_IP[COLLECTOR_PORT], ttl=64, id=0, flags=0)
           / UDP(sport=POSTCARD_SRC_PORT, dport=COLLECTOR_UDP, chksum=0) / card)
    m = Mask(pkt)
    for f in ("deq_timedelta", "ingress_ts", "egress_ts"):
        m.set_do_not_care_packet(P4ccPostcard, f)
    if any_depth:   # a burst: the depths depend on how fast the target drains
        for f in ("enq_qdepth", "deq_qdepth"):
            m.set_do_not_care_packet(P4ccPostcard, f)
    return m


class PostcardTest(P4ccTest):
    def enable(self, one_in_n):
        self.ops.enable_postcards(collector_port=COLLECTOR_PORT,
                                  collector_ip=HOST_IP[COLLECTOR_PORT],
                                  collector_mac=HOST_MAC[COLLECTOR_PORT],
                                  switch_ip=SWITCH_IP, udp_port=COLLECTOR_UDP,
                                  sample_one_in_n=one_in_n)

    def send_flow(self, n):
        sent = [tcp_from(1, HOST_IP[2], tcp_sport=1000 + i) for i in range(n)]
        for p in sent:
            tu.send_packet(self, 1, p)
        return sent


class EveryPacketTest(PostcardTest):
    """N=1: each forwarded packet also yields one exact 96-byte postcard."""

    def runTest(self):
        self.route(2)
        self.enable(1)
        for i in range(3):
            # One at a time: each finds an empty queue (depths 0, as expected).
            p = tcp_from(1, HOST_IP[2], tcp_sport=1000 + i)
            tu.send_packet(self, 1, p)
            tu.verify_packet(self, forwarded(2, HOST_IP[2], tcp_sport=1000 + i), 2)
            tu.verify_packet(self, expected_postcard(1000 + i, len(p)), COLLECTOR_PORT)
        tu.verify_no_other_packets(self)


class OneInNTest(PostcardTest):
    """N=3: of 9 packets, exactly the 3rd, 6th and 9th are reported."""

    def runTest(self):
        self.route(2)
        self.enable(3)
        sent = self.send_flow(9)
        for i in range(9):
            tu.verify_packet(self, forwarded(2, HOST_IP[2], tcp_sport=1000 + i), 2)
        cards = self.poll_packets(COLLECTOR_PORT, 3)
        self.assertEqual([len(c) for c in cards], [POSTCARD_FRAME_LEN] * 3)
        sports = [Ether(c)[P4ccPostcard].src_port for c in cards]
        self.assertEqual(sports, [1002, 1005, 1008])
        for c, sp in zip(cards, sports):
            self.assertTrue(expected_postcard(sp, len(sent[sp - 1000]), any_depth=True).pkt_match(c))
        tu.verify_no_other_packets(self)


class OffTest(PostcardTest):
    """N=0 in the data plane (collector and clone session in place) sends
    no postcard at all."""

    def runTest(self):
        self.route(2)
        self.enable(1)
        params = dict(self.sw.tables["postcard_config"].read_default().params)
        params["sample_one_in_n"] = 0
        self.sw.tables["postcard_config"].set_default("enable_postcards", params)
        self.send_flow(5)
        for i in range(5):
            tu.verify_packet(self, forwarded(2, HOST_IP[2], tcp_sport=1000 + i), 2)
        tu.verify_no_packet(self, Ether(), COLLECTOR_PORT)
        tu.verify_no_other_packets(self)


class QueueReportedTest(PostcardTest):
    """On a slowed port the postcards report the real, growing queue."""

    def runTest(self):
        self.route(2)
        self.enable(1)
        self.throttle(2, 200)
        self.send_flow(20)
        cards = self.poll_packets(COLLECTOR_PORT, 20, timeout=15)
        depths = [Ether(c)[P4ccPostcard].enq_qdepth for c in cards]
        self.assertGreaterEqual(max(depths), 10, f"depths {depths}")
        self.assertEqual(depths[0], 0)
