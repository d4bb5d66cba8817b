"""ECN marking at K on a real queue.

The egress queue is slowed (bmv2 `set_queue_rate`, or the embedded
target's rate) and a burst is sent, so later packets of the burst find a
deeper queue. Each packet carries the telemetry shim, so its hop record
says which depth it found at enqueue: the test checks that exactly the ECT
packets that found depth >= K came out CE, byte for byte.
"""
from ptf import testutils as tu

from base import P4ccTest
from shim_util import (ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, after_switch,
                       read_shim, send_burst, shim_packet)

BURST = 30
SLOW_PPS = 200


class EcnTest(P4ccTest):
    def burst(self, port_out, ecn=ECN_ECT0, n=BURST, throttle=True):
        if throttle:
            self.throttle(port_out, SLOW_PPS)
        sent = [shim_packet(1, port_out, ecn=ecn, sport=40000 + i) for i in range(n)]
        send_burst(self, 1, sent)
        got = self.poll_packets(port_out, n, timeout=n / SLOW_PPS + 5)
        return sent, got

    def check_exact(self, sent, got, port_out, k, ecn_in):
        """Every output is exactly the input after the switch, with CE iff
        (ECT and a K and depth >= K); returns the depths seen."""
        depths = []
        for s, frame in zip(sent, got):
            _, shim = read_shim(frame)
            hop = shim.hops[0]
            depth = hop.enq_qdepth
            depths.append(depth)
            ect = ecn_in in (ECN_ECT0, ECN_ECT1)
            ecn_out = ECN_CE if (ect and k is not None and depth >= k) else ecn_in
            exp = after_switch(s, port_out, ecn_out, depth, hop.deq_timedelta_us, hop.egress_ts_us)
            self.assertEqual(frame, bytes(exp),
                             f"packet sport={s.sport} depth={depth} K={k}: not the expected bytes")
        return depths


class MarkAtBoundaryTest(EcnTest):
    """K=10: packets that found 0..9 stay ECT(0), 10 and deeper become CE."""

    def runTest(self):
        self.route(2)
        self.ops.set_k(2, 10)
        sent, got = self.burst(2)
        depths = self.check_exact(sent, got, 2, 10, ECN_ECT0)
        self.assertTrue(any(d < 10 for d in depths) and any(d >= 10 for d in depths),
                        f"burst must straddle K: depths {depths}")
        marked = sum(1 for d in depths if d >= 10)
        self.assertEqual(self.packets("ce_marks", 2), marked)


class Ect1MarkedTest(EcnTest):
    """ECT(1) is ECN-capable too."""

    def runTest(self):
        self.route(2)
        self.ops.set_k(2, 5)
        sent, got = self.burst(2, ecn=ECN_ECT1)
        depths = self.check_exact(sent, got, 2, 5, ECN_ECT1)
        self.assertTrue(any(d >= 5 for d in depths))


class PerPortKTest(EcnTest):
    """K is per port: the same burst marks from depth 5 on port 2, from 15
    on port 3."""

    def runTest(self):
        self.route(2)
        self.route(3)
        self.ops.set_k(2, 5)
        self.ops.set_k(3, 15)
        sent, got = self.burst(2)
        self.check_exact(sent, got, 2, 5, ECN_ECT0)
        self.unthrottle()
        sent, got = self.burst(3)
        depths = self.check_exact(sent, got, 3, 15, ECN_ECT0)
        self.assertTrue(any(5 <= d < 15 for d in depths), f"depths {depths}")


class NoKNeverMarksTest(EcnTest):
    """A port without K never marks, however deep its queue."""

    def runTest(self):
        self.route(2)
        self.route(3)
        self.ops.set_k(3, 1)           # another port's K must not leak
        sent, got = self.burst(2)
        depths = self.check_exact(sent, got, 2, None, ECN_ECT0)
        self.assertGreaterEqual(max(depths), 10)
        self.assertEqual(self.packets("ce_marks", 2), 0)


class KZeroMarksAllTest(EcnTest):
    """K=0 marks every ECT packet, even on an empty queue."""

    def runTest(self):
        self.route(2)
        self.ops.set_k(2, 0)
        sent, got = self.burst(2, n=5, throttle=False)
        self.check_exact(sent, got, 2, 0, ECN_ECT0)
        self.assertEqual(self.packets("ce_marks", 2), 5)


class NotEctNeverMarkedTest(EcnTest):
    """Not-ECT packets are never marked, even above K."""

    def runTest(self):
        self.route(2)
        self.ops.set_k(2, 0)
        sent, got = self.burst(2, ecn=ECN_NOT_ECT, throttle=False)
        self.check_exact(sent, got, 2, 0, ECN_NOT_ECT)
        self.assertEqual(self.packets("ce_marks", 2), 0)


class CeStaysCeTest(EcnTest):
    """CE in stays CE out, below K and with no K at all; it is not counted
    as a new mark."""

    def runTest(self):
        self.route(2)
        self.route(3)
        self.ops.set_k(2, 1000)
        for port in (2, 3):
            sent, got = self.burst(port, ecn=ECN_CE, n=3, throttle=False)
            for s, frame in zip(sent, got):
                ecn, shim = read_shim(frame)
                self.assertEqual(ecn, ECN_CE)
        self.assertEqual(self.packets("ce_marks", 2), 0)


class TcpMarkedTest(EcnTest):
    """Marking is not tied to the shim: a plain ECT TCP packet is marked
    at K=0 and forwarded exactly."""

    def runTest(self):
        from test_forwarding import forwarded, tcp_from
        from base import HOST_IP
        self.route(2)
        self.ops.set_k(2, 0)
        tu.send_packet(self, 1, tcp_from(1, HOST_IP[2], ip_ecn=ECN_ECT0))
        tu.verify_packet(self, forwarded(2, HOST_IP[2], ip_ecn=ECN_CE), 2)
