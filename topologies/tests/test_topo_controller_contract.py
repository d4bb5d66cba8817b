"""The switch view is what p4cc_control reads: check it reads it as meant."""
import json
import sys
from pathlib import Path

import pytest

from p4cc_topo.builtin import wishbone
from p4cc_topo.network import Network, switch_view
from p4cc_topo.targets import plan_ports

CONTROL = Path(__file__).resolve().parents[2] / "control"


@pytest.fixture
def control_topology():
    if str(CONTROL) not in sys.path:
        sys.path.insert(0, str(CONTROL))
    try:
        from p4cc_control import topology
    except Exception as e:  # the controller's dependencies (p4runtime) absent
        pytest.skip(f"p4cc_control not importable: {e}")
    return topology


def test_controller_reads_the_switch_view(control_topology):
    t = wishbone(n_pairs=2, ecn_k_pkts=20, loss="1%")
    rid = "7f3a"
    plan = plan_ports(t, rid)
    net = Network(t, target="pyfwd")
    net.run_id, net.ports = rid, plan
    view = switch_view(t, rid, "embedded", plan, net.routes(), {}, loss_mode="p4")
    data = json.loads(json.dumps(view))          # as written to a file
    ct = control_topology.Topology(data, "view.json")
    assert ct.is_view and set(ct.switches) == {"s1", "s2"}
    for name in ("s1", "s2"):
        ents = ct.forwarding_entries(name)
        got = sorted((e["match"]["dst_addr"], e["params"]["port"], e["params"]["dst_mac"]) for e in ents)
        want = sorted((r["prefix"], r["port"], r["dst_mac"]) for r in view["switches"][name]["routes"])
        assert got == want
        sw = ct.switch(name)
        assert sw.device_id == t.switches[name].id
        assert sw.ports[1]["k"] == 20 and sw.ports[1]["loss"] == 0.01
        assert sw.collector_port == view["switches"][name]["collector_port"]
    assert set(ct.hosts) == set(t.hosts)
    assert ct.hosts["r2"].switch == "s2" and ct.hosts["r2"].port == 3
