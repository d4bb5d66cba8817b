"""The controller driving Tofino through Stratum, without the SDE:

  * the committed Tofino P4Infos (bf-p4c's, p4src/build/tofino/) load and
    every name the controller uses resolves in them;
  * the device config is Stratum's BfPipelineConfig, checked against the
    message as stratum/hal/lib/barefoot/bf.proto declares it (a descriptor
    built here from that declaration) and against hand-computed bytes;
  * the pipeline push carries it (fake P4Runtime server: no real switch
    takes a Tofino device config here);
  * entry writes and counter reads through the Tofino target (K converted
    to cells, the mirror session's truncation) on the embedded target,
    where the same P4Runtime calls apply.
"""
import json
import os
import re

import pytest

from ctl_helpers import REPO, real_build
from test_ctl_protocol import ServerThread

from p4cc_control import Switch
from p4cc_control.cli import main as cli_main
from p4cc_control.errors import PipelineMismatch, TargetError, ValueOutOfRange
from p4cc_control.operations import CONTROLLER_NAMES, FEATURE_NAMES, features, missing_names
from p4cc_control.p4info import load_p4info
from p4cc_control.targets import TofinoTarget, make_target
from p4cc_control.tofino import (BfPipelineConfig, Profile, committed_p4info, device_config,
                                 pack_bfp4c_output, unpack)

CHIPS = ("tofino", "tofino2")


# -- the committed P4Info ------------------------------------------------------------

def tofino_p4info(chip):
    path = committed_p4info(chip)
    build = os.path.dirname(path)
    if not os.path.exists(os.path.join(build, "cc_switch.tna.stamp.json")):
        # Never compiled: bf-p4c is in no registry (tools/p4build.py TNA_NOT_BUILT).
        pytest.skip(f"{build} not compiled yet: needs bf-p4c (`make p4-tna`, docs/tofino.md)")
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: compile with `make p4-tna` (bf-p4c) and commit "
                    "p4src/build/tofino/")
    return load_p4info(path)


@pytest.mark.parametrize("chip", CHIPS)
def test_tofino_p4info_has_every_controller_name(chip):
    """Every name, and the features the Tofino program has: the INT line
    rate, RED and ECMP (its clock is always ns: no clock_config)."""
    info = tofino_p4info(chip)
    assert info.msg.pkg_info.arch in ("tna", "t2na"), info.msg.pkg_info.arch
    assert missing_names(info, ("int", "red", "ecmp")) == []
    assert features(info) == {"int", "red", "ecmp"}


@pytest.mark.parametrize("chip", CHIPS)
def test_tofino_p4info_widths(chip):
    """What the controller encodes against: Tofino's 9-bit device ports,
    K in 19 bits (the queue depth's width), the shared parameters."""
    info = tofino_p4info(chip)
    assert info.table("ecn_threshold").field("egress_port").bitwidth == 9
    assert info.action("set_threshold").param("k_depth").bitwidth == 19
    assert info.action("forward").param("port").bitwidth == 9
    assert info.action("set_loss").param("threshold_16").bitwidth == 32
    assert info.register("postcard_sample_count").bitwidth == 32
    for name in CONTROLLER_NAMES["counters"]:
        assert info.counter(name).size == 512


def test_v1model_p4info_has_every_controller_name(real_p4info):
    assert missing_names(real_p4info, tuple(FEATURE_NAMES)) == []
    assert features(real_p4info) == set(FEATURE_NAMES)


def test_controller_names_cover_what_the_code_uses():
    """Every table/counter/register name written in the controller, its
    CLI and the PTF suite is in CONTROLLER_NAMES (so the test above covers
    all of them)."""
    used = {"tables": set(), "counters": set(), "registers": set()}
    for rel in ("control/p4cc_control/operations.py", "control/p4cc_control/cli.py",
                "ptf-tests/tests/base.py"):
        text = open(os.path.join(REPO, rel)).read()
        for kind in used:
            used[kind] |= set(re.findall(rf'{kind}\["([\w.]+)"\]', text))
        used["tables"] |= set(re.findall(r'build_table_entry\([^,]+, "(\w+)"', text))
    text = open(os.path.join(REPO, "ptf-tests/tests/base.py")).read()
    used["tables"] |= set(re.findall(r'"(\w+)"', text.split("TABLES = ")[1].split("\n")[0]))
    used["counters"] |= set(re.findall(r'"([\w.]+)"', text.split("COUNTERS = ")[1]
                                       .split(")")[0]))
    features = {t for tables in FEATURE_NAMES.values() for t in tables}
    assert used["tables"] <= set(CONTROLLER_NAMES["tables"]) | features
    assert used["counters"] <= set(CONTROLLER_NAMES["counters"])
    assert used["registers"] | {"postcard_sample_count"} <= set(CONTROLLER_NAMES["registers"])


def test_missing_names_are_one_line_each(p4info):
    from p4cc_control.p4info import P4Info
    from p4.config.v1 import p4info_pb2

    empty = P4Info(p4info_pb2.P4Info(), "empty")
    missing = missing_names(empty)
    assert len(missing) == len(CONTROLLER_NAMES["tables"]) + len(CONTROLLER_NAMES["counters"]) \
        + len(CONTROLLER_NAMES["registers"])
    assert all("\n" not in m for m in missing)


# -- the device config -------------------------------------------------------------

def stratum_message():
    """stratum.hal.barefoot.BfPipelineConfig as bf.proto declares it,
    built as a descriptor (no .proto file in the repository)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FileDescriptorProto(name="p4cc_test_bf.proto",
                                            package="stratum.hal.barefoot", syntax="proto3")
    m = fd.message_type.add(name="BfPipelineConfig")
    F = descriptor_pb2.FieldDescriptorProto
    prof = m.nested_type.add(name="Profile")
    prof.field.add(name="profile_name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    prof.field.add(name="context", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    prof.field.add(name="binary", number=3, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    prof.field.add(name="pipe_scope", number=4, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
    m.field.add(name="p4_name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="bfruntime_info", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    m.field.add(name="profiles", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                type_name=".stratum.hal.barefoot.BfPipelineConfig.Profile")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("stratum.hal.barefoot.BfPipelineConfig")
    return message_factory.GetMessageClass(desc)


SAMPLE = BfPipelineConfig("cc_switch", b'{"schema_version": "1.0.0"}',
                          [Profile("pipe", b'{"context": 1}', b"\x00\x01tofino-bin\xff",
                                   [0, 1, 2, 3])])


def test_encoding_is_stratums_message():
    Msg = stratum_message()
    m = Msg()
    m.ParseFromString(SAMPLE.encode())
    assert m.p4_name == "cc_switch"
    assert m.bfruntime_info == SAMPLE.bfruntime_info
    assert len(m.profiles) == 1
    p = m.profiles[0]
    assert (p.profile_name, p.context, p.binary, list(p.pipe_scope)) == \
        ("pipe", b'{"context": 1}', b"\x00\x01tofino-bin\xff", [0, 1, 2, 3])
    # ... and protobuf's own serialisation of it is byte for byte ours.
    assert m.SerializeToString(deterministic=True) == SAMPLE.encode()
    # The other way: what protobuf writes (here unpacked scope too), we read.
    m.profiles[0].pipe_scope[:] = [2, 0]
    assert BfPipelineConfig.decode(m.SerializeToString()).profiles[0].pipe_scope == [2, 0]


def test_encoding_golden_bytes():
    cfg = BfPipelineConfig("p", b"{}", [Profile("pipe", b"c", b"b", [0, 1, 2, 3])])
    profile = (b"\x0a\x04pipe" b"\x12\x01c" b"\x1a\x01b" b"\x22\x04\x00\x01\x02\x03")
    assert cfg.encode() == b"\x0a\x01p" b"\x12\x02{}" b"\x1a" + bytes([len(profile)]) + profile
    assert BfPipelineConfig.decode(cfg.encode()) == cfg


def fake_bfp4c_output(root, absolute=True, chip="tofino"):
    """A folder laid out as bf-p4c -o writes it, with the .conf its
    p4c-gen-conf writes (paths under --installdir, absolute)."""
    out = root / "out"
    (out / "pipe").mkdir(parents=True)
    (out / "bf-rt.json").write_text('{"tables": []}')
    (out / "pipe" / "context.json").write_text('{"program_name": "cc_switch"}')
    binname = f"{chip}.bin"
    (out / "pipe" / binname).write_bytes(b"\x7fBIN" * 100)
    base = str(out) if absolute else "/gone/elsewhere"
    conf = {"chip_list": [{"chip_family": chip, "instance": 0}],
            "p4_devices": [{"device-id": 0, "p4_programs": [{
                "program-name": "cc_switch", "bfrt-config": f"{base}/bf-rt.json",
                "p4_pipelines": [{"p4_pipeline_name": "pipe",
                                  "context": f"{base}/pipe/context.json",
                                  "config": f"{base}/pipe/{binname}",
                                  "pipe_scope": [0, 1, 2, 3], "path": base}]}]}]}
    (out / "cc_switch.conf").write_text(json.dumps(conf))
    return out


@pytest.mark.parametrize("absolute", [True, False])
def test_pack_bfp4c_output(tmp_path, absolute):
    out = fake_bfp4c_output(tmp_path, absolute)
    cfg = pack_bfp4c_output(str(out))
    assert cfg.p4_name == "cc_switch"
    assert cfg.bfruntime_info == b'{"tables": []}'
    (p,) = cfg.profiles
    assert (p.profile_name, p.pipe_scope) == ("pipe", [0, 1, 2, 3])
    assert p.context == b'{"program_name": "cc_switch"}' and p.binary == b"\x7fBIN" * 100
    assert device_config(str(out / "cc_switch.conf")) == cfg.encode()


@pytest.mark.parametrize("chip", CHIPS)
def test_packs_this_machines_bf_p4c_output(chip):
    """Where `make p4-tna` has run (build/tofino/CHIP/, not committed): the
    real compiler output packs, the program and pipe are what the .conf
    names, and its P4Info is the committed one."""
    out = os.path.join(REPO, "build", "tofino", chip)
    if not os.path.exists(os.path.join(out, "cc_switch.conf")):
        pytest.skip(f"{out}/cc_switch.conf absent: bf-p4c has not run here (make p4-tna)")
    cfg = BfPipelineConfig.decode(pack_bfp4c_output(out).encode())
    assert cfg.p4_name == "cc_switch"
    assert "tables" in json.loads(cfg.bfruntime_info)
    (p,) = cfg.profiles
    assert p.profile_name == "pipe" and p.pipe_scope == [0, 1, 2, 3]
    ctx = json.loads(p.context)
    assert ctx["program_name"] == "cc_switch", ctx.get("program_name")
    assert len(p.binary) > 100_000
    tofino_p4info(chip)  # committed and loadable
    with open(os.path.join(out, "cc_switch.p4info.bin"), "rb") as built, \
            open(committed_p4info(chip), "rb") as committed:
        assert built.read() == committed.read(), \
            "build/tofino's P4Info differs from p4src/build/tofino/: run make p4-tna and commit"


def test_pack_tofino2_binary_name(tmp_path):
    out = fake_bfp4c_output(tmp_path, absolute=False, chip="tofino2")
    assert pack_bfp4c_output(str(out)).profiles[0].binary == b"\x7fBIN" * 100


def test_packed_file_passes_through_and_unpacks(tmp_path):
    data = pack_bfp4c_output(str(fake_bfp4c_output(tmp_path))).encode()
    f = tmp_path / "device_config.pb.bin"
    f.write_bytes(data)
    assert device_config(str(f)) == data
    # bf_pipeline_builder -unpack_dir's layout.
    files = unpack(data, str(tmp_path / "unpacked"))
    assert sorted(files) == ["bfrt.json", "pipe/context.json", "pipe/tofino.bin"]
    assert open(files["pipe/tofino.bin"], "rb").read() == b"\x7fBIN" * 100


def test_device_config_errors_are_one_line(tmp_path):
    with pytest.raises(PipelineMismatch, match="no bf-p4c output"):
        device_config(str(tmp_path))
    out = fake_bfp4c_output(tmp_path)
    os.remove(out / "pipe" / "context.json")
    with pytest.raises(PipelineMismatch, match="context.json not found") as e:
        device_config(str(out))
    assert "\n" not in str(e.value)
    bogus = tmp_path / "cc_switch.json"
    bogus.write_text('{"bmv2": "json"}')
    with pytest.raises(PipelineMismatch, match="not a BfPipelineConfig"):
        device_config(str(bogus))
    with pytest.raises(PipelineMismatch, match="make p4-tna"):
        TofinoTarget().load_device_config(str(tmp_path / "nowhere"))


# -- the target ----------------------------------------------------------------------

def test_tofino_target_facts(tmp_path, monkeypatch):
    t = TofinoTarget()
    assert (t.chip, t.depth_unit, t.shapes_ports) == ("tofino", "cells", False)
    assert t.default_p4info().endswith("p4src/build/tofino/cc_switch.tofino.p4info.bin")
    assert t.default_device_config().endswith("build/tofino/tofino")
    assert make_target("tofino", chip="tofino2").default_p4info().endswith(
        "cc_switch.tofino2.p4info.bin")
    monkeypatch.setenv("P4CC_TOFINO_CHIP", "tofino2")
    assert TofinoTarget().chip == "tofino2"
    with pytest.raises(ValueOutOfRange, match="unknown Tofino chip"):
        TofinoTarget(chip="tofino9")
    with pytest.raises(ValueOutOfRange, match="port 0"):
        t.check_mirror_port(0)
    t.check_mirror_port(132)
    with pytest.raises(TargetError, match="chassis config"):
        t.set_port(1, rate_bps=10**9)
    assert TofinoTarget(ports=[4, 0]).ports() == [0, 4]


def test_tofino_push_carries_the_bf_pipeline_config(tmp_path, p4info):
    """SetForwardingPipelineConfig with the P4Info and Stratum's device
    config, as stratum_bfrt's ExtractBfPipelineConfig reads it."""
    out = fake_bfp4c_output(tmp_path)
    server = ServerThread()
    server.start()
    try:
        target = TofinoTarget()
        with Switch.connect(server.addr, p4info=p4info, device_config=str(out), push=True,
                            timeout=3, device_config_loader=target.load_device_config) as sw:
            assert sw.pipeline_pushed
        cfg = server.state.config
        assert cfg.p4info == p4info.msg
        m = stratum_message()()
        m.ParseFromString(cfg.p4_device_config)
        assert m.p4_name == "cc_switch" and m.profiles[0].binary == b"\x7fBIN" * 100
        assert cfg.cookie.cookie != 0
        # The CLI does the same from --target tofino.
        rc = cli_main(["--addr", server.addr, "--target", "tofino", "--p4info",
                       real_build()[0] or p4info.source, "--device-config", str(out), "push"])
        assert rc == 0
        assert BfPipelineConfig.decode(server.state.config.p4_device_config).p4_name == "cc_switch"
    finally:
        server.stop()
        server.loop.call_soon_threadsafe(server.loop.stop)


def test_cli_tofino_without_a_build_says_what_to_do(tmp_path, capsys, p4info):
    server = ServerThread()
    server.start()
    try:
        rc = cli_main(["--addr", server.addr, "--target", "tofino", "--p4info", p4info.source,
                       "--device-config", str(tmp_path / "none"), "push"])
    finally:
        server.stop()
        server.loop.call_soon_threadsafe(server.loop.stop)
    err = capsys.readouterr().err.strip()
    assert rc == PipelineMismatch.exit_code and len(err.splitlines()) == 1, err
    assert "make p4-tna" in err


# -- the same P4Runtime calls on a real server -----------------------------------------

def test_tofino_operations_on_the_embedded_target(tmp_path):
    """What `p4cc ctl --target tofino` writes and reads (K converted to
    cells, the mirror session's truncation, counters by name), on the
    embedded target: its P4Runtime server takes the same calls Stratum
    does (only the pipeline it runs is the v1model one)."""
    from ctl_switches import SwitchProcess, Veths, why_not
    from test_ctl_integration import ipv4_frame, send_and_capture

    from p4cc_control.errors import UnknownPort

    p4info_path, bmv2_json = real_build()
    reason = why_not("embedded") or (None if bmv2_json else "compiled P4 program missing")
    if reason:
        pytest.skip(f"embedded: {reason}")
    veths = Veths(3)
    sp = SwitchProcess("embedded", veths, str(tmp_path))
    try:
        sp.start()
        with Switch.connect(sp.addr, p4info=p4info_path, device_config=bmv2_json, push=True,
                            timeout=10) as sw:
            ops = sw.ops(TofinoTarget(ports=[0, 1, 2, 3]))
            r = ops.set_k(2, 20)
            assert (r["k_depth"], r["depth_unit"]) == (380, "cells")   # 20 x 19 cells
            assert ops.set_k(3, 30000, "bytes")["k_depth"] == 375
            assert ops.read_k() == {2: 380, 3: 375}
            assert ops.set_loss(3, 0.01)["threshold_16"] == 655
            assert ops.read_loss() == {3: 655 / 65536}
            pc = ops.enable_postcards(3, "10.0.0.100", "00:00:0a:00:00:64", "10.0.0.254", 10)
            assert pc["truncate"] == TofinoTarget.postcard_truncate == 69
            cs = ops.read_postcards()["clone_session"]
            assert (cs["session_id"], cs["replicas"], cs["packet_length_bytes"]) == \
                (100, [(3, 0)], 69)
            with pytest.raises(UnknownPort, match="has ports 0, 1, 2, 3"):
                ops.set_k(7, 1)
            with pytest.raises(ValueOutOfRange, match="port 0"):
                ops.enable_postcards(0, "10.0.0.100", "00:00:0a:00:00:64", "10.0.0.254")
            ops.disable_postcards()
            ops.set_loss(3, 0)
            sw.tables["ipv4_lpm"].insert({"dst_addr": "10.0.2.0/24"}, "forward",
                                         {"port": 2, "dst_mac": "00:00:0a:00:02:01"})
            ops.reset_port_counters()
            (_, b1), (_, b2), _ = veths.pairs
            got = send_and_capture(b1, b2, [ipv4_frame("10.0.2.1", ecn=2) for _ in range(3)])
            assert len(got) == 3, sp.log_tail()
            c = ops.port_counters([1, 2])
            assert (c[1]["rx_packets"], c[2]["tx_packets"], c[2]["ce_marks"]) == (3, 3, 0)
    finally:
        sp.stop()
        veths.delete()


def test_apply_on_tofino_puts_loss_in_p4_and_reports_shaping(p4info):
    """A plan's switch part on Tofino: everything P4Runtime can carry is
    written (K in cells, loss in port_loss, postcards with the mirror
    truncation); the link model's rate is reported, not half-applied."""
    from p4cc_topo.plan import PortConfig, Postcards, Route, SwitchConfig

    cfg = SwitchConfig(name="s1", device_id=1, switch_id=3,
                       routes=(Route("10.0.0.2/32", 132, "00:00:0a:00:00:02", "h2"),),
                       ports={132: PortConfig(132, "h2", rate_bps=100_000_000, loss=0.01,
                                              ecn_k_pkts=20),
                              140: PortConfig(140, "c1")},
                       postcards=Postcards(port=140, collector_ip="10.0.0.100",
                                           collector_mac="00:00:0a:00:00:64",
                                           switch_ip="10.0.0.254", one_in_n=10))
    server = ServerThread()
    server.start()
    try:
        with Switch.connect(server.addr, p4info=p4info, device_config=b"x", push=True,
                            timeout=3) as sw:
            ops = sw.ops(TofinoTarget())
            done = ops.apply_switch(cfg)
            assert done["ports"][132]["k"]["k_depth"] == 380
            assert done["ports"][132]["loss"]["threshold_16"] == 655
            assert done["ports"][132]["link_not_applied"] == [
                "rate_bps=100000000 (Tofino port shaping is Stratum's chassis config, "
                "see docs/tofino.md)"]
            assert ops.read_loss() == {132: 655 / 65536}
            assert ops.read_postcards()["clone_session"]["packet_length_bytes"] == 69
    finally:
        server.stop()
        server.loop.call_soon_threadsafe(server.loop.stop)
