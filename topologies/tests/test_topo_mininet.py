"""Mininet with p4cc's P4Switch (skipped where Mininet is not installed)."""
import subprocess

import pytest

pytestmark = pytest.mark.usefixtures("netns_ok")


def test_mininet_p4switch_two_hosts(tmp_path):
    pytest.importorskip("mininet.net", reason="Mininet not installed (apt-get install mininet)")
    from mininet.log import setLogLevel
    from mininet.net import Mininet

    from p4cc_topo.mininet_switch import P4ccTopo, P4Switch, endpoints

    setLogLevel("warning")
    net = Mininet(topo=P4ccTopo(topology="two_hosts", target="pyfwd"), switch=P4Switch,
                  controller=None)
    net.start()
    try:
        h1, h2 = net.get("h1"), net.get("h2")
        assert "169.254.0.1" in h1.cmd("ip route show default")
        out = h1.cmd(f"ping -c 1 -W 2 {h2.IP()}")
        assert "ttl=63" in out, out
        assert endpoints(net)["s1"]["port_ifaces"] == {1: "s1-eth1", 2: "s1-eth2"}
        pid = net.get("s1").sw.proc.pid
    finally:
        net.stop()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "s1-eth1" not in links
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0
