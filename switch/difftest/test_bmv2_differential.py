"""Differential test: the same p4c JSON, entries and packets through bmv2
(simple_switch_grpc) and the embedded target; every output frame and port
must match, except the switch clocks (timestamps, queue delay), which are
masked. Skips when bmv2 or root is absent.

Packets go one at a time, so every queue is empty and the depths compare
exactly; the corpus is seeded: valid TCP/UDP, misses, TTL expiry, every
ECN codepoint, shims of versions 1 and 2 with 0-5 hops and other versions, truncated frames
and random bytes.
"""
from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest
from p4cc_topo.listen_ports import free_tcp_port as free_port
from p4cc_topo.targets import TargetUnavailable, find_bmv2

ROOT = Path(__file__).resolve().parents[2]


def _bmv2():
    """simple_switch_grpc as p4cc finds it ($P4CC_BMV2_BIN, else PATH), or None."""
    try:
        return find_bmv2()
    except TargetUnavailable:
        return None


BMV2 = _bmv2()
P4INFO = ROOT / "p4src/build/cc_switch.p4info.bin"
JSON = ROOT / "p4src/build/cc_switch.json"
PORTS = (1, 2, 3, 4)
SWITCH_MAC = bytes.fromhex("00cc00000001")
SHIM_PORT, POSTCARD_SPORT = 7360, 7361
N_PACKETS = 160

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (veth, raw sockets)"),
    pytest.mark.skipif(BMV2 is None,
                       reason="bmv2 (simple_switch_grpc) not installed: it is in no package "
                              "registry (docs/building-p4c.md)"),
]

TARGETS = {
    "bmv2": dict(tag="b", grpc=free_port(), thrift=free_port()),
    "embedded": dict(tag="e", grpc=free_port(), admin=free_port()),
}
# Interface names are fixed (what a killed run leaves, the next removes),
# so two runs on one machine take turns.
LOCK = Path("/run/lock/p4cc-difftest.lock")


def sh(*cmd):
    subprocess.run(cmd, check=False, capture_output=True)


def names(tag, p):
    return f"p4ccdf{tag}s{p}", f"p4ccdf{tag}t{p}"


def start(target: str, cfg: dict, logdir: Path) -> subprocess.Popen:
    for p in PORTS:
        s, t = names(cfg["tag"], p)
        sh("ip", "link", "del", s)
        sh("ip", "link", "add", s, "type", "veth", "peer", "name", t)
        for ifc in (s, t):
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1")
            sh("ethtool", "-K", ifc, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
            sh("ip", "link", "set", ifc, "up")
    if target == "bmv2":
        cmd = [str(BMV2), "--device-id", "1",
               *[a for p in PORTS for a in ("-i", f"{p}@{names('b', p)[0]}")],
               "--thrift-port", str(cfg["thrift"]), "--no-p4", "--",
               "--grpc-server-addr", f"127.0.0.1:{cfg['grpc']}"]
    else:
        cmd = [str(ROOT / "switch/target/release/p4cc-switch"),
               *[a for p in PORTS for a in ("--interface", f"{p}@{names('e', p)[0]}")],
               "--grpc-addr", f"127.0.0.1:{cfg['grpc']}", "--admin-addr", f"127.0.0.1:{cfg['admin']}"]
    proc = subprocess.Popen(cmd, stdout=open(logdir / f"{target}.log", "w"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    end = time.time() + 20
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", cfg["grpc"]), 0.5).close()
            return proc
        except OSError:
            assert proc.poll() is None, (logdir / f"{target}.log").read_text()[-1000:]
            time.sleep(0.2)
    raise AssertionError(f"{target} did not serve gRPC")


def stop(proc: subprocess.Popen, tag: str):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    for p in PORTS:
        sh("ip", "link", "del", names(tag, p)[0])


def program(cfg: dict):
    from p4cc_control.switch import Switch
    from p4cc_control.targets import make_target
    sw = Switch.connect(f"127.0.0.1:{cfg['grpc']}", p4info=str(P4INFO), device_config=str(JSON),
                        push=True, reconnect=False)
    ops = sw.ops(make_target("bmv2" if cfg["tag"] == "b" else "embedded"))
    for p in PORTS[1:]:
        sw.tables["ipv4_lpm"].insert(match={"dst_addr": f"10.0.{p}.0/24"}, action="forward",
                                     params={"port": p, "dst_mac": f"00:00:00:00:0{p}:0{p}"})
    # An ECMP group: both targets must hash a flow to the same member.
    from p4cc_topo.plan import EcmpGroup, NextHop
    ops.install_ecmp_group(EcmpGroup(1, (NextHop(2, "00:00:00:00:02:02"),
                                         NextHop(3, "00:00:00:00:03:03"))))
    sw.tables["ipv4_lpm"].insert(match={"dst_addr": "10.0.5.0/24"}, action="set_ecmp_group",
                                 params={"group_id": 1})
    ops.set_k(2, 0)
    ops.set_k(3, 1000)
    ops.set_switch_id(7)
    ops.enable_postcards(collector_port=4, collector_ip="10.0.4.4",
                         collector_mac="00:00:00:00:04:04", switch_ip="10.0.0.254",
                         sample_one_in_n=3, udp_port=9999)
    sw.close()


def ipv4(src, dst, proto, payload, ttl=64, ecn=0):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + len(payload), 1, 0, ttl, proto, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    s = sum(struct.unpack("!10H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return hdr[:10] + struct.pack("!H", ~s & 0xFFFF) + hdr[12:] + payload


def corpus(seed=7) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    for i in range(N_PACKETS):
        dst = rnd.choice(["10.0.2.2", "10.0.3.3", "10.0.4.4", "192.168.1.1", "10.0.5.5",
                          "10.0.5.6"])
        ecn, ttl = rnd.randrange(4), rnd.choice([1, 2, 64])
        kind = rnd.choice(["tcp", "udp", "shim", "shim", "garbage", "arp"])
        if kind == "tcp":
            l4 = struct.pack("!HHIIBBHHH", 1000 + i, 80, i, 0, 0x50, 0x10, 1024, 0, 0) + b"x" * rnd.randrange(60)
            pkt = ipv4("10.0.1.1", dst, 6, l4, ttl, ecn)
        elif kind in ("udp", "shim"):
            hops = rnd.choice([0, 0, 1, 3, 4, 5])
            shim = struct.pack("!BBBBI", rnd.choice([1, 1, 1, 2]), hops, 0, 0, rnd.randrange(40))
            shim += b"".join(struct.pack("!HHIIQ", h, 9, rnd.randrange(50), 3, 99)
                             for h in range(min(hops, rnd.choice([hops, hops, max(0, hops - 1)]))))
            body = shim + b"p" * rnd.randrange(40) if kind == "shim" else b"u" * rnd.randrange(40)
            dport = SHIM_PORT if kind == "shim" else 5000
            udp = struct.pack("!HHHH", 2000 + i, dport, 8 + len(body), 0) + body
            pkt = ipv4("10.0.1.1", dst, 17, udp, ttl, ecn)
        elif kind == "arp":
            pkt = None
        else:
            pkt = bytes(rnd.randrange(256) for _ in range(rnd.randrange(20, 80)))
        frame = (b"\xff" * 6 + bytes.fromhex("000000000101") + b"\x08\x06" + b"\x00" * 28
                 if pkt is None else SWITCH_MAC + bytes.fromhex("000000000101") + b"\x08\x00" + pkt)
        if rnd.random() < 0.2:
            frame = frame[:rnd.randrange(14, len(frame) + 1)]
        out.append(frame)
    return out


def mask_clocks(frame: bytes) -> bytes:
    """Zero what only the switch's clock decides."""
    b = bytearray(frame)
    if len(b) < 42 or b[12:14] != b"\x08\x00" or b[23] != 17:
        return bytes(b)
    sport, dport = struct.unpack("!HH", b[34:38])
    if sport == POSTCARD_SPORT and len(b) >= 42 + 36:
        b[42 + 16:42 + 36] = bytes(20)          # deq_timedelta, ingress/egress ts
    elif dport == SHIM_PORT and len(b) >= 50 and b[42] == 1:
        for h in range(min(b[43], 4)):
            off = 50 + 20 * h
            if len(b) >= off + 20:
                b[off + 8:off + 20] = bytes(12)  # deq_timedelta, egress_ts
    elif dport == SHIM_PORT and len(b) >= 50 + 32 and b[42] == 2:
        # Version 2: only the newest record is this switch's; the older
        # ones are payload to it (the corpus's, already equal).
        b[50 + 8:50 + 20] = bytes(12)            # deq_timedelta, egress_ts
    return bytes(b)


def run_corpus(tag: str, frames: list[bytes]) -> list[list[tuple[int, bytes]]]:
    socks = {}
    for p in PORTS:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((names(tag, p)[1], 0))
        s.setblocking(False)
        socks[p] = s
    time.sleep(0.2)
    # A socket sees every interface until bind(): drop what it caught then.
    for s in socks.values():
        while True:
            try:
                s.recv(65535)
            except BlockingIOError:
                break
    results = []
    for f in frames:
        socks[1].send(f)
        time.sleep(0.04)
        got = []
        for p, s in socks.items():
            while True:
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] != socket.PACKET_OUTGOING:
                    got.append((p, mask_clocks(data)))
        results.append(sorted(got))
    for s in socks.values():
        s.close()
    return results


def test_bmv2_and_embedded_agree(tmp_path):
    if not (ROOT / "switch/target/release/p4cc-switch").exists():
        pytest.fail("p4cc-switch not built: run `make setup`")
    frames = corpus()
    outputs = {}
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    lock = open(LOCK, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    for target, cfg in TARGETS.items():
        proc = start(target, cfg, tmp_path)
        try:
            program(cfg)
            outputs[target] = run_corpus(cfg["tag"], frames)
        finally:
            stop(proc, cfg["tag"])
    diffs = [(i, frames[i].hex(), b, e) for i, (b, e) in
             enumerate(zip(outputs["bmv2"], outputs["embedded"])) if b != e]
    forwarded = sum(1 for o in outputs["bmv2"] if o)
    assert forwarded > N_PACKETS // 4, f"too few packets forwarded ({forwarded}) to compare"
    assert not diffs, f"{len(diffs)} of {len(frames)} packets differ; first: {diffs[0]}"
