// The parts of cc_switch's logic that do not depend on the architecture:
// core P4 only (header operations and assignments, no externs, no
// intrinsic metadata), applied by both p4src/v1model/cc_switch.p4 and
// p4src/tna/cc_switch.p4. Each program reads its own architecture's queue
// metadata, converts it to the values below and applies these controls.
// docs/tofino.md says what differs between the two programs and why.
#ifndef P4CC_CC_CONTROLS_P4
#define P4CC_CC_CONTROLS_P4

#include "constants.p4"
#include "ethernet.p4"
#include "ipv4.p4"
#include "udp.p4"
#include "telemetry.p4"

// What this hop writes into its telemetry record (docs/wire-format.md).
struct hop_values_t {
    bit<16> switch_id;
    bit<16> egress_port;
    bit<32> enq_qdepth;
    bit<32> deq_timedelta_us;
    bit<64> egress_ts_us;
}

// In-band telemetry, the record: this hop's record goes right after the
// shim's fixed part, in `new_hop` (a header the deparser emits between the
// shim and the records already there, so older records stay where they
// are: no header-stack shift). A full stack gets the overflow flag
// instead. The path maximum is the caller's (a comparison of two fields:
// an if on v1model, max() on Tofino).
control PushHopRecord(inout p4cc_shim_h shim,
                      inout p4cc_hop_h new_hop,
                      inout ipv4_h ipv4,
                      inout udp_h udp,
                      in bit<8> depth_unit,
                      in hop_values_t v) {
    apply {
        shim.depth_unit = depth_unit;
        if (shim.hop_count < P4CC_MAX_HOPS_B) {
            new_hop.setValid();
            new_hop.switch_id = v.switch_id;
            new_hop.egress_port = v.egress_port;
            new_hop.enq_qdepth = v.enq_qdepth;
            new_hop.deq_timedelta_us = v.deq_timedelta_us;
            new_hop.egress_ts_us = v.egress_ts_us;
            shim.hop_count = shim.hop_count + 1;
            ipv4.total_len = ipv4.total_len + HOP_LEN_BYTES;
            udp.length = udp.length + HOP_LEN_BYTES;
        } else {
            shim.flags = shim.flags | SHIM_FLAG_OVERFLOW;
        }
        // The payload changed; zero means "no checksum" for UDP over IPv4.
        udp.checksum = 0;
    }
}

// What this hop adds to a version-2 record (docs/wire-format.md).
struct int_values_t {
    bit<32> qlen_bytes;
    bit<32> tx_bytes;
    bit<32> rate_kbps;
}

// In-band telemetry for INT-based congestion control (shim version 2):
// this hop's record goes right after the shim's fixed part, as in
// PushHopRecord. The records already there are never parsed: they follow
// the emitted headers as payload, in the order they came, so a version-2
// packet is as long to parse with four records as with none.
control PushIntRecord(inout p4cc_shim_h shim,
                      inout p4cc_int_hop_h new_hop,
                      inout ipv4_h ipv4,
                      inout udp_h udp,
                      in bit<8> units,
                      in hop_values_t v,
                      in int_values_t w) {
    apply {
        shim.depth_unit = units;
        if (shim.hop_count < P4CC_MAX_HOPS_B) {
            new_hop.setValid();
            new_hop.switch_id = v.switch_id;
            new_hop.egress_port = v.egress_port;
            new_hop.enq_qdepth = v.enq_qdepth;
            new_hop.deq_timedelta = v.deq_timedelta_us;
            new_hop.egress_ts = v.egress_ts_us;
            new_hop.qlen_bytes = w.qlen_bytes;
            new_hop.tx_bytes = w.tx_bytes;
            new_hop.rate_kbps = w.rate_kbps;
            shim.hop_count = shim.hop_count + 1;
            ipv4.total_len = ipv4.total_len + INT_HOP_LEN_BYTES;
            udp.length = udp.length + INT_HOP_LEN_BYTES;
        } else {
            shim.flags = shim.flags | SHIM_FLAG_OVERFLOW;
        }
        udp.checksum = 0;
    }
}

// What a postcard reports of one packet, in the units `units` names.
struct postcard_report_t {
    bit<8>  units;            // POSTCARD_UNITS_*
    bit<16> switch_id;
    bit<16> ingress_port;
    bit<16> egress_port;
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;
    bit<64> ingress_ts;
    bit<64> egress_ts;
    bit<16> src_port;         // 0 unless TCP or UDP
    bit<16> dst_port;
    bit<32> pkt_len;          // frame length at ingress, no FCS
}

// Where postcards go (postcard_config's action parameters).
struct postcard_dest_t {
    mac_addr_t  collector_mac;
    ipv4_addr_t switch_ip;
    ipv4_addr_t collector_ip;
    bit<16>     collector_port;
}

// Rewrites a copy of a reported packet into a postcard: Ethernet to the
// collector (the source stays the switch MAC the packet was addressed to),
// IPv4 and UDP headers of their own, the 54-byte report. `reported` is the
// copy's own IPv4 header (as the packet left, so ECN after marking). The
// caller removes the reported packet's headers and cuts the frame to
// POSTCARD_FRAME_LEN. The IPv4 checksum is the deparser's.
control BuildPostcard(inout ethernet_h eth,
                      inout ipv4_h pc_ipv4,
                      inout udp_h pc_udp,
                      inout p4cc_postcard_h card,
                      in ipv4_h reported,
                      in postcard_report_t r,
                      in postcard_dest_t d) {
    apply {
        card.setValid();
        card.version = POSTCARD_VERSION;
        card.units = r.units;
        card.switch_id = r.switch_id;
        card.ingress_port = r.ingress_port;
        card.egress_port = r.egress_port;
        card.enq_qdepth = r.enq_qdepth;
        card.deq_qdepth = r.deq_qdepth;
        card.deq_timedelta = r.deq_timedelta;
        card.ingress_ts = r.ingress_ts;
        card.egress_ts = r.egress_ts;
        card.src_addr = reported.src_addr;
        card.dst_addr = reported.dst_addr;
        card.protocol = reported.protocol;
        card.ecn = (bit<8>)reported.ecn;
        card.src_port = r.src_port;
        card.dst_port = r.dst_port;
        card.pkt_len = r.pkt_len;

        pc_udp.setValid();
        pc_udp.src_port = POSTCARD_UDP_SRC;
        pc_udp.dst_port = d.collector_port;
        pc_udp.length = 8 + POSTCARD_LEN_BYTES;
        pc_udp.checksum = 0;

        pc_ipv4.setValid();
        pc_ipv4.version = 4;
        pc_ipv4.ihl = 5;
        pc_ipv4.dscp = 0;
        pc_ipv4.ecn = ECN_NOT_ECT;
        pc_ipv4.total_len = 20 + 8 + POSTCARD_LEN_BYTES;
        pc_ipv4.identification = 0;
        pc_ipv4.flags = 0;
        pc_ipv4.frag_offset = 0;
        pc_ipv4.ttl = POSTCARD_IP_TTL;
        pc_ipv4.protocol = IP_PROTO_UDP;
        pc_ipv4.hdr_checksum = 0;
        pc_ipv4.src_addr = d.switch_ip;
        pc_ipv4.dst_addr = d.collector_ip;

        eth.dst_addr = d.collector_mac;
        eth.ether_type = ETHERTYPE_IPV4;
    }
}

#endif
