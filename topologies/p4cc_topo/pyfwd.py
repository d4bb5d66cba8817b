"""A tiny IPv4 forwarder for tests and debugging: the ``pyfwd`` target.

It does what the P4 program's ``ipv4_lpm``/``forward`` do, and nothing else
(no queues, no ECN, no telemetry): longest-prefix match on the destination,
source MAC := the destination MAC the sender used (the switch port's MAC),
destination MAC := the route's next hop, TTL - 1 with the header checksum
recomputed, out of the route's port. It exists so the topology builder (the
namespaces, links, addresses, ARP entries and routes) can be tested end to
end without bmv2 or the embedded switch, and it takes exactly the routes the
switch view gives the controller, so it also tests those.

Run: ``python -m p4cc_topo.pyfwd CONFIG.json`` with
``{"name": "s1", "listen": "127.0.0.1:PORT", "ports": {"1": "IFACE"},
"routes": [{"prefix": "10.0.0.1/32", "port": 1, "dst_mac": "..."}]}``.
It listens on ``listen`` (TCP, nothing served) once its ports are open, so
a launcher waits for it the way it waits for a gRPC server.
"""

from __future__ import annotations

import ipaddress
import json
import selectors
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def _csum(hdr: bytes) -> int:
    if len(hdr) % 2:
        hdr += b"\0"
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def build_table(routes: list[dict]) -> list[tuple[int, int, int, bytes]]:
    table = []
    for r in routes:
        net = ipaddress.IPv4Network(r["prefix"], strict=False)
        mask = int(net.netmask)
        table.append((net.prefixlen, int(net.network_address), mask, int(r["port"]),
                      bytes.fromhex(r["dst_mac"].replace(":", ""))))
    table.sort(key=lambda t: -t[0])
    return [(net, mask, port, mac) for _, net, mask, port, mac in table]


def lookup(table, dst: int):
    for net, mask, port, mac in table:
        if dst & mask == net:
            return port, mac
    return None


def forward(frame: bytes, table) -> tuple[int, bytes] | None:
    """The rewritten frame and its egress port, or None (dropped)."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if ihl < 20 or len(frame) < 14 + ihl:
        return None
    ttl = frame[22]
    if ttl <= 1:
        return None
    dst = int.from_bytes(frame[30:34], "big")
    hit = lookup(table, dst)
    if hit is None:
        return None
    port, mac = hit
    ip = bytearray(frame[14:14 + ihl])
    ip[8] = ttl - 1
    ip[10:12] = b"\0\0"
    ip[10:12] = _csum(bytes(ip)).to_bytes(2, "big")
    out = mac + frame[0:6] + frame[12:14] + bytes(ip) + frame[14 + ihl:]
    return port, out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m p4cc_topo.pyfwd CONFIG.json", file=sys.stderr)
        return 2
    cfg = json.load(open(argv[0]))
    table = build_table(cfg["routes"])
    socks: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    for port_s, iface in cfg["ports"].items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((iface, ETH_P_ALL))
        s.setblocking(False)
        socks[int(port_s)] = s
        sel.register(s, selectors.EVENT_READ, int(port_s))
    host, _, lport = cfg["listen"].rpartition(":")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, int(lport)))
    ls.listen(4)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ, None)

    stop = False

    def on_term(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print(f"pyfwd {cfg.get('name')}: ports {cfg['ports']}, {len(table)} routes, "
          f"listening on {cfg['listen']}", flush=True)
    fwd = drops = 0
    while not stop:
        for key, _ in sel.select(timeout=0.5):
            if key.data is None:
                try:
                    c, _ = ls.accept()
                    c.close()
                except OSError:
                    pass
                continue
            s = key.fileobj
            for _ in range(64):
                try:
                    frame, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                res = forward(frame, table)
                if res is None or res[0] not in socks:
                    drops += 1
                    continue
                try:
                    socks[res[0]].send(res[1])
                    fwd += 1
                except OSError:
                    drops += 1
    print(f"pyfwd {cfg.get('name')}: forwarded {fwd}, dropped {drops}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
