"""The CLI: parsing, output, and one-line errors with their exit codes
(against the fake server; test_integration_* repeat them on real switches)."""
import json

import pytest

from p4cc_control.cli import main
from test_ctl_protocol import ServerThread


@pytest.fixture
def server():
    s = ServerThread()
    s.start()
    yield s
    s.stop()
    s.loop.call_soon_threadsafe(s.loop.stop)


@pytest.fixture
def files(tmp_path, p4info):
    p = tmp_path / "x.p4info.bin"
    p.write_bytes(p4info.serialize())
    j = tmp_path / "x.json"
    j.write_text('{"fake": 1}')
    return ["--p4info", str(p), "--bmv2-json", str(j)]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "set-k 1,2 20" in out and "exit codes" in out


def test_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["set-k"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


def test_unreachable(capsys, files):
    code, out, err = run(capsys, ["--addr", "127.0.0.1:1", "--timeout", "0.5", "counters"] + files)
    assert code == 3 and len(err.strip().splitlines()) == 1 and "unreachable" in err


def test_session(capsys, server, files):
    a = ["--addr", server.addr] + files
    assert run(capsys, a + ["counters"])[0] == 4  # no pipeline yet
    code, out, err = run(capsys, a + ["push"])
    assert code == 0 and "pipeline pushed" in out
    code, out, _ = run(capsys, a + ["set-k", "1-2", "30000", "--unit", "bytes"])
    assert code == 0 and "port 2: K = 30000 bytes -> k_depth 20 packets" in out
    code, out, _ = run(capsys, a + ["--json", "set-loss", "3", "1%"])
    assert json.loads(out)[0]["threshold_16"] == 655
    assert run(capsys, a + ["switch-id", "9"])[0] == 0
    code, out, _ = run(capsys, a + ["postcards", "--collector-port", "4", "--collector-ip",
                                    "10.0.0.100", "--collector-mac", "00:00:0a:00:00:64",
                                    "--switch-ip", "10.0.0.254", "--sample", "10"])
    assert code == 0 and "clone session 100 -> port 4" in out
    code, out, _ = run(capsys, a + ["add-entry", "ipv4_lpm", "-m", "dst_addr=10.0.1.0/24",
                                    "-a", "forward", "-p", "port=1",
                                    "-p", "dst_mac=00:00:0a:00:01:01"])
    assert code == 0
    code, out, _ = run(capsys, a + ["--json", "show"])
    state = json.loads(out)
    assert state["k"] == {"1": 20, "2": 20} and state["switch_id"] == 9
    assert state["postcards"]["clone_session"]["packet_length_bytes"] == 0  # P4 truncates
    assert state["routes"][0]["match"] == {"dst_addr": "10.0.1.0/24"}
    code, out, _ = run(capsys, a + ["counters", "--json", "--port", "1"])
    assert json.loads(out)["1"]["rx_packets"] == 0
    assert run(capsys, a + ["reset-counters"])[0] == 0
    code, out, _ = run(capsys, a + ["watch", "--interval", "0.1", "--count", "2", "--json"])
    assert code == 0 and len(out.strip().splitlines()) == 2


@pytest.mark.parametrize("argv,code,needle", [
    (["add-entry", "nosuch", "-a", "x"], 5, "no table 'nosuch'"),
    (["add-entry", "ipv4_lpm", "-m", "src=1", "-a", "drop"], 5, "no match field 'src'"),
    (["add-entry", "ipv4_lpm", "-m", "dst_addr=10.0.0.1", "-a", "forward", "-p", "port=600",
      "-p", "dst_mac=00:00:00:00:00:01"], 6, "bit<9>"),
    (["set-k", "600", "20"], 5, "port 600 out of range"),
    (["set-k", "1", "2e10"], 6, "bit<32>"),
    (["set-loss", "1", "150%"], 6, "0..1"),
    (["read-register", "nope"], 5, "no register"),
    (["switch-id", "70000"], 6, "bit<16>"),
])
def test_errors(capsys, server, files, argv, code, needle):
    a = ["--addr", server.addr] + files
    assert run(capsys, a + ["push"])[0] == 0
    got, out, err = run(capsys, a + argv)
    assert got == code, err
    assert needle in err and len(err.strip().splitlines()) == 1


TOPO = """
name: t
hosts: [{name: h1, ip: 10.0.0.1}, {name: h2, ip: 10.0.0.2}]
switches: [{name: s1, id: 3}]
links:
  - {endpoints: [h1, "s1:1"]}
  - {endpoints: [h2, "s1:2"], ecn_k_pkts: 15}
"""


def test_route_and_apply_from_a_topology(capsys, server, files, tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text(TOPO)
    a = ["--addr", server.addr] + files
    run(capsys, a + ["push"])
    code, out, _ = run(capsys, a + ["route", "-t", str(topo)])
    assert code == 0 and "2 route(s) on s1" in out
    assert "10.0.0.2/32 -> port 2 dst_mac 02:00:0a:00:00:02  (host h2)" in out
    code, out, _ = run(capsys, a + ["apply", "-t", str(topo), "--json"])
    res = json.loads(out)
    assert res["switch_id"] == 3 and res["ports"]["2"]["k"]["k_depth"] == 15
    code, out, _ = run(capsys, a + ["--json", "show"])
    shown = json.loads(out)
    assert shown["k"] == {"2": 15} and shown["switch_id"] == 3


def test_apply_from_a_plan_names_its_arms(capsys, server, files, tmp_path):
    from p4cc_exp.registry import get
    from p4cc_exp.runner import make_plan

    plan = make_plan(get("dctcp-queue")).write(tmp_path / "plan.json")
    a = ["--addr", server.addr] + files
    run(capsys, a + ["push"])
    code, _, err = run(capsys, a + ["route", "--plan", str(plan)])
    assert code == 6 and "4 arms: choose one with --arm (kernel-dctcp" in err
    code, out, _ = run(capsys, a + ["route", "--plan", str(plan), "--arm", "user-cubic"])
    assert code == 0 and "4 route(s) on s1" in out
    code, _, err = run(capsys, a + ["route", "-t", "two_hosts", "--switch", "s9"])
    assert code == 6 and "no switch 's9'" in err
