import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from p4cc_control.errors import TargetError, UnknownPort, ValueOutOfRange
from p4cc_control.operations import loss_threshold, parse_probability
from p4cc_control.targets import Bmv2Target, EmbeddedTarget, Target, TofinoTarget, make_target


def test_depth_units_packet_targets():
    for t in (Bmv2Target(cli="/nonexistent"), EmbeddedTarget()):
        assert t.depth(20, "packets") == 20
        assert t.depth(30000, "bytes") == 20          # 30 KB = 20 MTU packets
        assert t.depth(30001, "bytes") == 21          # ceil: never marks earlier than asked
        assert t.depth(375, "cells") == 20            # 375 * 80 B = 30000 B
    assert Target(mtu=1000).depth(30000, "bytes") == 30


def test_depth_units_tofino():
    t = TofinoTarget()
    assert t.depth(100, "cells") == 100
    assert t.depth(30000, "bytes") == 375
    assert t.depth(20, "packets") == 20 * 19          # a 1500 B packet takes 19 cells
    with pytest.raises(TargetError):
        t.set_port(1, rate_bps=10**9)


def test_depth_errors():
    with pytest.raises(ValueOutOfRange):
        Target().depth(-1)
    with pytest.raises(ValueOutOfRange):
        Target().depth(1, "furlongs")
    with pytest.raises(ValueOutOfRange):
        make_target("netfpga")


def test_loss_threshold():
    assert loss_threshold(0) == 0
    assert loss_threshold(0.01) == 655
    assert loss_threshold(1) == 65536
    assert parse_probability("1%") == 0.01
    with pytest.raises(ValueOutOfRange):
        loss_threshold(1.5)
    with pytest.raises(ValueOutOfRange):
        parse_probability("lots")


def test_bmv2_missing_cli_is_explained():
    t = Bmv2Target(cli=None)
    t.cli = None
    with pytest.raises(TargetError, match="simple_switch_CLI not found"):
        t.set_port(1, rate_pps=1000)
    t = Bmv2Target(cli="/bin/true")
    with pytest.raises(TargetError, match="no per-port delay or loss: port 1 has no link emulator"):
        t.set_port(1, delay_us=10)
    # Delay and loss go to p4cc's link emulator by default; netem only when asked.
    assert Bmv2Target.problems({"delay_us": 10, "loss": 0.01}) == []
    assert Bmv2Target.problems({"delay_us": 10, "loss": 0.0}, link_emulator=False) == [
        "delay_us=10 needs p4cc's link emulator (p4cc-link), which is not built: run `make setup`"]
    assert Bmv2Target.problems({"delay_us": 10, "loss": 0.0}, links="netem", netem=False) == [
        "delay_us=10 needs netem (sch_netem), which this kernel lacks; drop --links netem "
        "(p4cc's link emulator applies it)"]
    assert Bmv2Target.problems({"delay_us": 10, "loss": 0.01}, links="netem", netem=True) == []


class _Admin(BaseHTTPRequestHandler):
    """Stand-in for the embedded target's admin API (its real one is tested
    in test_integration_embedded.py)."""
    ports = {1: {"port": 1, "rate_bps": 0}, 2: {"port": 2, "rate_bps": 0}}

    def log_message(self, *a):
        pass

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, list(self.ports.values()))

    def do_PUT(self):
        n = int(self.path.rsplit("/", 1)[1])
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if n not in self.ports:
            return self._send(404, {"error": f"no port {n}"})
        if body.get("rate_bps", 0) > 10**11:
            return self._send(400, {"error": "rate_bps too large"})
        self.ports[n].update(body)
        self._send(200, self.ports[n])


@pytest.fixture
def admin():
    srv = HTTPServer(("127.0.0.1", 0), _Admin)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_embedded_admin(admin):
    t = EmbeddedTarget(admin)
    assert t.ports() == [1, 2]
    assert t.set_port(2, rate_bps=100_000_000, delay_us=250) == {"rate_bps": 100_000_000,
                                                                  "delay_us": 250}
    assert t.port_table()[2]["delay_us"] == 250
    with pytest.raises(UnknownPort, match="unknown port 7.*1, 2"):
        t.set_port(7, rate_bps=1)
    with pytest.raises(ValueOutOfRange, match="loss"):
        t.set_port(1, loss=2)
    with pytest.raises(ValueOutOfRange, match="too large"):
        t.set_port(1, rate_bps=10**12)
    _Admin.ports[2]["delay_us"] = 0  # "switch restarted"
    t.reapply()
    assert _Admin.ports[2]["delay_us"] == 250


def test_bmv2_delay_and_loss_reach_its_link_emulator(admin, tmp_path):
    """The link emulator serves the embedded target's admin API: a port's
    delay and loss are PUT there, its rate and depth still go to bmv2."""
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(FAKE_CLI)
    t = Bmv2Target(thrift_port=9999, cli=str(cli), link_admin_addr=admin, link_ports=[1])
    assert t.set_port(1, delay_us=500, loss=0.01, rate_pps=100) == {
        "delay_us": 500, "loss": 0.01, "rate_pps": 100}
    assert (_Admin.ports[1]["delay_us"], _Admin.ports[1]["loss"]) == (500, 0.01)
    t.set_port(1, loss=0.0)  # a partial change keeps the delay
    assert (_Admin.ports[1]["delay_us"], _Admin.ports[1]["loss"]) == (500, 0.0)
    assert t.link_ports_table()[1]["delay_us"] == 500
    with pytest.raises(TargetError, match="port 2 has no link emulator"):
        t.set_port(2, delay_us=10)
    t2 = Bmv2Target(thrift_port=9999, cli=str(cli), link_admin_addr="127.0.0.1:1", link_ports=[1])
    with pytest.raises(TargetError, match="bmv2's link emulator admin API unreachable"):
        t2.set_port(1, delay_us=10)


def test_embedded_unreachable():
    with pytest.raises(TargetError, match="unreachable"):
        EmbeddedTarget("127.0.0.1:1").ports()


FAKE_CLI = r'''
import sys
cmds = sys.stdin.read().split("\n")
print("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation")
for c in cmds:
    if c == "show_ports":
        # runtime_CLI.do_show_ports' format
        print("RuntimeCmd: " + "{:^10}{:^20}{:^10}{}".format("port #", "iface name", "status", "extra info"))
        print("=" * 50)
        print("{:^10}{:^20}{:^10}{}".format(1, "veth1", "UP", ""))
        print("{:^10}{:^20}{:^10}{}".format(2, "veth2", "DOWN", ""))
    elif c.startswith("set_queue_rate") or c.startswith("set_queue_depth"):
        if "777777" in c:
            print("RuntimeCmd: Error: invalid rate")
        else:
            print("RuntimeCmd: ")
print("RuntimeCmd: ")
'''


def test_bmv2_thrift_cli_driving(tmp_path):
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(FAKE_CLI)
    t = Bmv2Target(thrift_port=9999, cli=str(cli))
    assert t.ports() == [1, 2]
    # 12 Mb/s in 1514-byte frames (1500-byte packets in Ethernet): 990.8/s
    assert t.set_port(2, rate_bps=12_000_000, depth_pkts=100) == {"rate_pps": 991,
                                                                  "depth_pkts": 100}
    with pytest.raises(UnknownPort, match="has ports 1, 2"):
        t.set_port(5, rate_pps=10)
    with pytest.raises(TargetError, match="refused"):
        t.set_port(1, rate_pps=777777)
    with pytest.raises(ValueOutOfRange, match="rate_pps"):   # the one range check, first
        t.set_port(1, rate_pps=999999999999)
