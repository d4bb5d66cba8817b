"""Shim packets for the tests: what a sender writes, what a switch makes
of it, and how to read a received one back."""
import struct

from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from base import HOST_IP, HOST_MAC, SWITCH_ID, SWITCH_MAC, depth_unit_code, sw_port
from p4cc_headers import SHIM_PORT, P4ccHop, P4ccShim

ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
SHIM_LEN, HOP_LEN = 8, 20
OVERFLOW = 0x01


def shim_packet(port_in, port_out, ecn=ECN_ECT0, hops=(), max_qdepth=0, flags=0,
                sport=40000, payload=b"p4cc-payload", version=1, hop_count=None):
    shim = P4ccShim(version=version, flags=flags, max_qdepth=max_qdepth, hops=list(hops))
    if hop_count is not None:
        shim.hop_count = hop_count
    return (Ether(dst=SWITCH_MAC, src=HOST_MAC[port_in])
            / IP(src=HOST_IP[port_in], dst=HOST_IP[port_out], tos=ecn, ttl=64, id=1)
            / UDP(sport=sport, dport=SHIM_PORT) / shim / Raw(payload))


def after_switch(sent, port_out, ecn, depth, delay_us, ts_us, egress_port=None):
    """`sent` as the switch must emit it, given the queue it saw."""
    ip = sent[IP]
    shim = sent[P4ccShim]
    hops = list(shim.hops)
    flags = shim.flags
    if len(hops) < 4:
        hops.insert(0, P4ccHop(switch_id=SWITCH_ID, egress_port=egress_port or sw_port(port_out),
                               enq_qdepth=depth, deq_timedelta_us=delay_us, egress_ts_us=ts_us))
    else:
        flags |= OVERFLOW
    new_shim = P4ccShim(version=shim.version, flags=flags, depth_unit=depth_unit_code(),
                        max_qdepth=max(shim.max_qdepth, depth), hops=hops)
    payload = bytes(shim.payload)
    pkt = (Ether(dst=HOST_MAC[port_out], src=SWITCH_MAC)
           / IP(src=ip.src, dst=ip.dst, tos=ecn, ttl=ip.ttl - 1, id=ip.id)
           / UDP(sport=sent[UDP].sport, dport=SHIM_PORT, chksum=0) / new_shim / Raw(payload))
    return pkt


def read_shim(frame: bytes):
    """(ecn, shim layer) of a received frame."""
    pkt = Ether(frame)
    return pkt[IP].tos & 3, pkt[P4ccShim]


def newest_hop(frame: bytes) -> P4ccHop:
    return read_shim(frame)[1].hops[0]


def send_burst(test, port_in, pkts):
    for p in pkts:
        tu.send_packet(test, port_in, p)
