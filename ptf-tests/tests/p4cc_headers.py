"""scapy layers for the p4cc shim and postcards (docs/wire-format.md)."""
from scapy.fields import (ByteField, FieldLenField, IntField, LongField,
                          PacketListField, ShortField, XByteField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

SHIM_PORT = 7360
POSTCARD_SRC_PORT = 7361
MAX_HOPS = 4
POSTCARD_FRAME_LEN = 96


class P4ccHop(Packet):
    name = "P4ccHop"
    fields_desc = [ShortField("switch_id", 0), ShortField("egress_port", 0),
                   IntField("enq_qdepth", 0), IntField("deq_timedelta_us", 0),
                   LongField("egress_ts_us", 0)]

    def extract_padding(self, s):
        return b"", s


class P4ccShim(Packet):
    name = "P4ccShim"
    fields_desc = [ByteField("version", 1),
                   FieldLenField("hop_count", None, count_of="hops", fmt="B"),
                   XByteField("flags", 0), ByteField("depth_unit", 0),
                   IntField("max_qdepth", 0),
                   PacketListField("hops", [], P4ccHop, count_from=lambda p: p.hop_count)]


class P4ccPostcard(Packet):
    name = "P4ccPostcard"
    fields_desc = [ByteField("version", 1), XByteField("units", 0),
                   ShortField("switch_id", 0), ShortField("ingress_port", 0),
                   ShortField("egress_port", 0), IntField("enq_qdepth", 0),
                   IntField("deq_qdepth", 0), IntField("deq_timedelta", 0),
                   LongField("ingress_ts", 0), LongField("egress_ts", 0),
                   IntField("src_addr", 0), IntField("dst_addr", 0),
                   ByteField("protocol", 0), ByteField("ecn", 0),
                   ShortField("src_port", 0), ShortField("dst_port", 0),
                   IntField("pkt_len", 0)]


bind_layers(UDP, P4ccShim, dport=SHIM_PORT)
bind_layers(UDP, P4ccPostcard, sport=POSTCARD_SRC_PORT)
