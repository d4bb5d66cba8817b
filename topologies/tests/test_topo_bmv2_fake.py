"""The bmv2 launcher against stand-ins for simple_switch_grpc and
simple_switch_CLI: command line, readiness, and the controller's bmv2
target setting queue rate and depth through the CLI."""
import sys
import textwrap

import pytest

from topo_nshelpers import assert_clean
from p4cc_topo.builtin import dumbbell
from p4cc_topo.network import Network

pytestmark = pytest.mark.usefixtures("netns_ok")

FAKE_SWITCH = textwrap.dedent("""\
    #!{py}
    import socket, sys, time
    args = sys.argv[1:]
    print("fake simple_switch_grpc", " ".join(args), flush=True)
    addr = args[args.index("--grpc-server-addr") + 1]
    host, port = addr.rsplit(":", 1)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port))); s.listen(1)
    while True:
        time.sleep(1)
""")

FAKE_CLI = textwrap.dedent("""\
    import os, sys
    with open(os.environ["FAKE_CLI_LOG"], "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\\n" + sys.stdin.read())
""")


@pytest.fixture
def fake_bmv2(tmp_path, monkeypatch):
    sw = tmp_path / "simple_switch_grpc"
    sw.write_text(FAKE_SWITCH.format(py=sys.executable))
    sw.chmod(0o755)
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(FAKE_CLI)
    monkeypatch.setenv("P4CC_BMV2_BIN", str(sw))
    monkeypatch.setenv("P4CC_SIMPLE_SWITCH_CLI", str(cli))
    monkeypatch.setenv("FAKE_CLI_LOG", str(tmp_path / "cli.log"))
    import p4cc_topo.targets as targets
    monkeypatch.setattr(targets, "_netem_cache", None)
    return tmp_path


def test_bmv2_start_and_queue_config(fake_bmv2):
    from p4cc_control.targets import Bmv2Target
    from p4cc_topo.plan import switch_configs

    topo = dumbbell(delay_us=0)
    with Network(topo, target="bmv2", log_dir=fake_bmv2 / "logs") as net:
        rid = net.run_id
        sw = net.switches["s1"]
        log = sw.log_path.read_text()
        assert f"-i 3@p4cc{rid}s1e3" in log and "--no-p4" in log
        assert f"--grpc-server-addr {sw.grpc_addr}" in log
        ep = net.endpoints()["s1"]
        assert ep["thrift_port"] == sw.thrift_port and ep["target"] == "bmv2"
        t = Bmv2Target(thrift_port=ep["thrift_port"], port_ifaces=ep["port_ifaces"])
        t.ports = lambda: None     # the fake CLI lists no ports
        for port, c in switch_configs(topo)["s1"].ports.items():
            model = {k: v for k, v in c.link_model().items() if v}
            if model:
                t.set_port(port, **model)
        cli = (fake_bmv2 / "cli.log").read_text().split("\n")
        assert cli[0] == f"--thrift-port {sw.thrift_port} --thrift-ip 127.0.0.1"
        # 100 Mbps in 1514-byte frames (1500-byte packets) = 8256 frames/s
        assert "set_queue_rate 8256 3" in cli and "set_queue_depth 120 3" in cli
    assert_clean(rid)
