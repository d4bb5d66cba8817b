"""ECMP: a route to a group of next hops spreads flows over its members by
a hash of their 5-tuple (docs/data-plane.md, "ECMP"). The controller maps
each of a group's 64 buckets to a member; removing a member moves only
the flows of its buckets."""
import math

from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from base import HOST_IP, HOST_MAC, SWITCH_MAC, P4ccTest, sw_port

DST = "10.0.9.9"
MEMBERS = (2, 3, 4)


def flow(i):
    return tu.simple_udp_packet(eth_dst=SWITCH_MAC, eth_src=HOST_MAC[1], ip_src=HOST_IP[1],
                                ip_dst=DST, udp_sport=10000 + i, udp_dport=4791)


class _EcmpTest(P4ccTest):
    def setUp(self):
        P4ccTest.setUp(self)
        if "ecmp_bucket" not in self.sw.tables:
            self.skipTest("this program has no ECMP (an older build of cc_switch)")
        from p4cc_topo.plan import EcmpGroup, NextHop
        self.group = EcmpGroup(7, tuple(NextHop(sw_port(p), HOST_MAC[p]) for p in MEMBERS))
        self.ops.install_ecmp_group(self.group)
        self.sw.tables["ipv4_lpm"].insert(match={"dst_addr": "10.0.9.0/24"},
                                          action="set_ecmp_group", params={"group_id": 7})

    def tearDown(self):
        try:
            self.sw.tables["ecmp_bucket"].clear()
        finally:
            P4ccTest.tearDown(self)

    def where(self, flows, chunk=20):
        """The PTF port each flow left on (sent in chunks the capture keeps up with)."""
        out = {}
        for c in range(0, len(flows), chunk):
            for i in flows[c:c + chunk]:
                tu.send_packet(self, 1, flow(i))
            got = 0
            while got < len(flows[c:c + chunk]):
                res = tu.dp_poll(self, device_number=0, timeout=5)
                self.assertIsInstance(res, self.dataplane.PollSuccess, f"{got} of a chunk arrived")
                pkt = Ether(bytes(res.packet))
                if UDP not in pkt or pkt[IP].dst != DST:
                    continue
                self.assertIn(res.port, MEMBERS)
                self.assertEqual(pkt[Ether].dst, HOST_MAC[res.port], "the member's next-hop MAC")
                out[pkt[UDP].sport - 10000] = res.port
                got += 1
        return out


class EcmpSpreadTest(_EcmpTest):
    """300 flows spread over 3 members, each member's share within five
    standard deviations of its buckets' share (22, 21 and 21 of 64)."""

    def runTest(self):
        n = 300
        ports = self.where(list(range(n)))
        owners = self.group.bucket_members()
        for k, p in enumerate(MEMBERS):
            share = owners.count(k) / len(owners)
            got = sum(1 for v in ports.values() if v == p)
            sd = math.sqrt(n * share * (1 - share))
            self.assertLess(abs(got - n * share), 5 * sd, f"port {p}: {got} of {n} flows")


class EcmpStickyTest(_EcmpTest):
    """A flow's packets all take one path."""

    def runTest(self):
        for i in range(5):
            ports = {self.where([i])[i] for _ in range(10)}
            self.assertEqual(len(ports), 1, f"flow {i} took {ports}")


class EcmpMemberRemovedTest(_EcmpTest):
    """Taking one member out moves exactly the flows it carried; the
    others keep their paths."""

    def runTest(self):
        flows = list(range(120))
        before = self.where(flows)
        res = self.ops.ecmp_remove_member(7, sw_port(3))
        self.assertEqual(len(res["moved_buckets"]), self.group.bucket_members().count(1))
        after = self.where(flows)
        for i in flows:
            if before[i] == 3:
                self.assertIn(after[i], (2, 4), f"flow {i} still on the removed member")
            else:
                self.assertEqual(after[i], before[i], f"flow {i} moved from {before[i]}")
        self.assertTrue(any(v == 3 for v in before.values()))
