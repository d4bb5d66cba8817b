"""A port's link model as the controller sets it: propagation delay and
random loss on the egress link. The embedded target has them itself; on
bmv2 they are p4cc's link emulator's, spliced in front of the port
(p4cc_topo.links). Tofino shapes its ports outside P4Runtime: skipped."""
import time

from ptf import testutils as tu

from base import HOST_IP, P4ccTest, sw_port
from test_forwarding import forwarded, tcp_from

DELAY_US = 30_000
#: How much later than its delay a frame may arrive here: the test side's
#: own receive path (PTF's thread wakes up to poll) on a busy 2-core machine.
SLACK_S = 0.25


class _LinkTest(P4ccTest):
    def set_link(self, port, **settings):
        if not self.target.shapes_ports or self.target.name == "tofino":
            self.skipTest(f"the {self.target.name} target's links are set outside P4Runtime")
        self.target.set_port(sw_port(port), **settings)

    def tearDown(self):
        try:
            if self.target.shapes_ports and self.target.name != "tofino":
                self.target.set_port(sw_port(2), delay_us=0, loss=0.0)
        finally:
            P4ccTest.tearDown(self)


class LinkDelayTest(_LinkTest):
    """A frame leaves port 2 its delay after it was sent, not before; the
    reverse direction (port 1) is not delayed."""

    def runTest(self):
        self.route(2)
        self.route(1)
        self.set_link(2, delay_us=DELAY_US)
        self.dataplane.flush()
        t0 = time.monotonic()
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2]))
        (got,) = self.poll_packets(2, 1, timeout=2.0)
        took = time.monotonic() - t0
        self.assertEqual(got, bytes(forwarded(2, HOST_IP[2])))
        self.assertGreaterEqual(took, DELAY_US / 1e6, f"arrived after {took * 1e3:.1f} ms")
        self.assertLess(took, DELAY_US / 1e6 + SLACK_S, f"arrived after {took * 1e3:.1f} ms")
        t0 = time.monotonic()
        tu.send_packet(self, 2, tcp_from(2, HOST_IP[1]))
        self.poll_packets(1, 1, timeout=2.0)
        self.assertLess(time.monotonic() - t0, DELAY_US / 1e6, "port 1 has no delay of its own")


class LinkLossTest(_LinkTest):
    """Loss 1 on port 2's link: nothing arrives there; loss 0: everything."""

    def runTest(self):
        self.route(2)
        self.set_link(2, loss=1.0)
        for i in range(20):
            tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], tcp_sport=3000 + i))
        tu.verify_no_other_packets(self, timeout=0.5)
        self.set_link(2, loss=0.0)
        for i in range(20):
            tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], tcp_sport=3000 + i))
        for i in range(20):
            tu.verify_packet(self, forwarded(2, HOST_IP[2], tcp_sport=3000 + i), 2)
