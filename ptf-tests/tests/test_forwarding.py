"""IPv4 forwarding: LPM to port + next-hop MAC, TTL, checksum, drops."""
from ptf import testutils as tu
from scapy.layers.l2 import ARP, Ether

from base import HOST_IP, HOST_MAC, SWITCH_MAC, P4ccTest


def tcp_from(port_in, dst_ip, ttl=64, **kw):
    return tu.simple_tcp_packet(eth_dst=SWITCH_MAC, eth_src=HOST_MAC[port_in],
                                ip_src=HOST_IP[port_in], ip_dst=dst_ip, ip_ttl=ttl, **kw)


def forwarded(port_out, dst_ip, ttl=64, port_in=1, **kw):
    """What the switch must send: MACs rewritten, TTL-1, checksum redone."""
    return tu.simple_tcp_packet(eth_dst=HOST_MAC[port_out], eth_src=SWITCH_MAC,
                                ip_src=HOST_IP[port_in], ip_dst=dst_ip, ip_ttl=ttl - 1, **kw)


class ForwardTest(P4ccTest):
    """A routed packet leaves on the route's port, exactly rewritten."""

    def runTest(self):
        self.route(2)
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2]))
        tu.verify_packet(self, forwarded(2, HOST_IP[2]), 2)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.packets("CcIngress.rx.port_packets", 1), 1)
        self.assertEqual(self.packets("CcEgress.tx.port_packets", 2), 1)


class LongestPrefixTest(P4ccTest):
    """The longest matching prefix wins, whatever the insertion order."""

    def runTest(self):
        self.route(3, prefix="10.0.0.0/8")
        self.route(2, prefix="10.0.2.0/24")
        tu.send_packet(self, 1, tcp_from(1, "10.0.2.77"))
        tu.verify_packet(self, forwarded(2, "10.0.2.77"), 2)
        tu.send_packet(self, 1, tcp_from(1, "10.9.9.9"))
        tu.verify_packet(self, forwarded(3, "10.9.9.9"), 3)
        tu.verify_no_other_packets(self)


class MissDropTest(P4ccTest):
    """No route: dropped and counted at the ingress port."""

    def runTest(self):
        self.route(2)
        tu.send_packet(self, 1, tcp_from(1, "192.168.7.7"))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.packets("ingress_drops", 1), 1)


class TtlExpiredDropTest(P4ccTest):
    """TTL 1 would reach 0 here: dropped and counted; TTL 2 goes out as 1."""

    def runTest(self):
        self.route(2)
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], ttl=1))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.packets("ingress_drops", 1), 1)
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], ttl=2))
        tu.verify_packet(self, forwarded(2, HOST_IP[2], ttl=2), 2)


class NonIpv4DropTest(P4ccTest):
    """Non-IPv4 frames (ARP here) are dropped and counted, never forwarded."""

    def runTest(self):
        self.route(2)
        arp = Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_MAC[1]) / ARP(pdst=HOST_IP[2])
        tu.send_packet(self, 1, arp)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.packets("ingress_drops", 1), 1)


class TruncatedFrameTest(P4ccTest):
    """Frames cut short inside a header never crash the switch; a routed
    packet right after is still forwarded exactly."""

    def runTest(self):
        self.route(2)
        whole = bytes(tcp_from(1, HOST_IP[2]))
        for cut in (14, 20, 33, 40, 50):
            tu.send_packet(self, 1, whole[:cut])
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2]))
        tu.verify_packet(self, forwarded(2, HOST_IP[2]), 2)
