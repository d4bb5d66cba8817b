"""Per-port random loss at probability 0 and 1, counted."""
from ptf import testutils as tu

from base import HOST_IP, P4ccTest
from test_forwarding import forwarded, tcp_from

N = 50


class LossZeroTest(P4ccTest):
    """p = 0 on the port: every packet goes through."""

    def runTest(self):
        self.route(2)
        self.ops.set_loss(2, 0.0)
        for i in range(N):
            tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], tcp_sport=2000 + i))
        for i in range(N):
            tu.verify_packet(self, forwarded(2, HOST_IP[2], tcp_sport=2000 + i), 2)
        self.assertEqual(self.packets("loss_drops", 2), 0)


class LossOneTest(P4ccTest):
    """p = 1 on port 2: nothing leaves there, all counted; port 3 unaffected."""

    def runTest(self):
        self.route(2)
        self.route(3)
        self.ops.set_loss(2, 1.0)
        for i in range(N):
            tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], tcp_sport=2000 + i))
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[3]))
        tu.verify_packet(self, forwarded(3, HOST_IP[3]), 3)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.packets("loss_drops", 2), N)
        self.assertEqual(self.packets("CcEgress.tx.port_packets", 2), 0)
