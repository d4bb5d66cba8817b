/*
 * cc_switch for Tofino (TNA): the same congestion signals as the v1model
 * program, on hardware.
 *   - IPv4 LPM forwarding, TTL, checksum;
 *   - ECN CE when the egress queue at enqueue was >= K (per port, cells);
 *   - the p4cc telemetry shim (depth_unit = 1: 80-byte cells);
 *   - per-port random loss; per-port counters.
 * Postcards are not in this program yet (they need a mirror session with a
 * mirror header; docs/tofino.md).
 *
 * Type-checked with p4test against the TNA include files
 * (`make p4-tna-check`); compiled for hardware with the SDE's bf-p4c.
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../include/constants.p4"
#include "../include/ethernet.p4"
#include "../include/ipv4.p4"
#include "../include/tcp.p4"
#include "../include/udp.p4"
#include "../include/telemetry.p4"

// Tofino reports queue delay in ns; the shim carries µs. Dividing by 1000
// is not an ALU operation, so the program shifts by 10 (÷1024, 2.4% low).
const bit<8> NS_TO_US_SHIFT = 10;

struct ig_headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
}

struct eg_headers_t {
    ethernet_h                ethernet;
    ipv4_h                    ipv4;
    udp_h                     udp;
    p4cc_shim_h               shim;
    p4cc_hop_h[P4CC_MAX_HOPS] hops;
}

struct ig_meta_t { }

struct eg_meta_t {
    bool    shim_ok;
    bit<16> switch_id;
}

/* ----------------------------- ingress ------------------------------ */

parser CcIngressParser(packet_in pkt, out ig_headers_t hdr, out ig_meta_t meta,
                       out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control CcIngress(inout ig_headers_t hdr, inout ig_meta_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rx_port_packets;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) ingress_drops;

    action forward(PortId_t port, mac_addr_t dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { forward; drop; }
        default_action = drop();
        size = 1024;
    }

    apply {
        rx_port_packets.count(ig_intr_md.ingress_port);
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            ipv4_lpm.apply();
        }
        if (ig_dprsr_md.drop_ctl == 1) {
            ingress_drops.count(ig_intr_md.ingress_port);
        }
    }
}

control CcIngressDeparser(packet_out pkt, inout ig_headers_t hdr, in ig_meta_t meta,
                          in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

/* ------------------------------ egress ------------------------------ */

parser CcEgressParser(packet_in pkt, out eg_headers_t hdr, out eg_meta_t meta,
                      out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        meta.shim_ok = false;
        meta.switch_id = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            P4CC_SHIM_UDP_PORT: parse_shim;
            default: accept;
        }
    }
    // Unrolled by the compiler: one state per possible hop count.
    state parse_shim {
        pkt.extract(hdr.shim);
        transition select(hdr.shim.version, hdr.shim.hop_count) {
            (P4CC_SHIM_VERSION, 0): shim_complete;
            (P4CC_SHIM_VERSION, 1): parse_hops_1;
            (P4CC_SHIM_VERSION, 2): parse_hops_2;
            (P4CC_SHIM_VERSION, 3): parse_hops_3;
            (P4CC_SHIM_VERSION, 4): parse_hops_4;
            default: accept;
        }
    }
    state parse_hops_4 { pkt.extract(hdr.hops.next); transition parse_hops_3; }
    state parse_hops_3 { pkt.extract(hdr.hops.next); transition parse_hops_2; }
    state parse_hops_2 { pkt.extract(hdr.hops.next); transition parse_hops_1; }
    state parse_hops_1 { pkt.extract(hdr.hops.next); transition shim_complete; }
    state shim_complete {
        meta.shim_ok = true;
        transition accept;
    }
}

control CcEgress(inout eg_headers_t hdr, inout eg_meta_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) tx_port_packets;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) ce_marks;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) loss_drops;
    Random<bit<16>>() loss_draw;

    bit<19> k_cells = 0;
    bit<19> below_k = 0;
    bit<32> loss_threshold = 0;
    bit<16> draw = 0;

    action set_switch_id(bit<16> switch_id) {
        meta.switch_id = switch_id;
    }
    table switch_config {
        actions = { set_switch_id; }
        default_action = set_switch_id(0);
    }

    action set_threshold(bit<19> k_depth) {
        k_cells = k_depth;
    }
    table ecn_threshold {
        key = { eg_intr_md.egress_port: exact @name("egress_port"); }
        actions = { set_threshold; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    action set_loss(bit<32> threshold_16) {
        loss_threshold = threshold_16;
    }
    table port_loss {
        key = { eg_intr_md.egress_port: exact @name("egress_port"); }
        actions = { set_loss; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    action push_hop() {
        hdr.hops.push_front(1);
        hdr.hops[0].setValid();
        hdr.hops[0].switch_id = meta.switch_id;
        hdr.hops[0].egress_port = (bit<16>)eg_intr_md.egress_port;
        hdr.hops[0].enq_qdepth = (bit<32>)eg_intr_md.enq_qdepth;
        hdr.hops[0].deq_timedelta_us = (bit<32>)(eg_intr_md.deq_timedelta >> NS_TO_US_SHIFT);
        hdr.hops[0].egress_ts_us = (bit<64>)(eg_prsr_md.global_tstamp >> NS_TO_US_SHIFT);
        hdr.shim.hop_count = hdr.shim.hop_count + 1;
        hdr.ipv4.total_len = hdr.ipv4.total_len + HOP_LEN_BYTES;
        hdr.udp.length = hdr.udp.length + HOP_LEN_BYTES;
    }

    apply {
        switch_config.apply();
        bool dropped = false;
        if (port_loss.apply().hit && loss_threshold != 0) {
            draw = loss_draw.get();
            if ((bit<32>)draw < loss_threshold) {
                eg_dprsr_md.drop_ctl = 1;
                loss_drops.count(eg_intr_md.egress_port);
                dropped = true;
            }
        }
        if (!dropped) {
            if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
                if (ecn_threshold.apply().hit) {
                    // Saturating: zero exactly when the queue reached K.
                    below_k = k_cells |-| eg_intr_md.enq_qdepth;
                    if (below_k == 0) {
                        hdr.ipv4.ecn = ECN_CE;
                        ce_marks.count(eg_intr_md.egress_port);
                    }
                }
            }
            if (hdr.shim.isValid() && meta.shim_ok) {
                hdr.shim.max_qdepth = max(hdr.shim.max_qdepth, (bit<32>)eg_intr_md.enq_qdepth);
                hdr.shim.depth_unit = DEPTH_UNIT_CELLS80;
                if (hdr.shim.hop_count < P4CC_MAX_HOPS_B) {
                    push_hop();
                } else {
                    hdr.shim.flags = hdr.shim.flags | SHIM_FLAG_OVERFLOW;
                }
                hdr.udp.checksum = 0;
            }
            tx_port_packets.count(eg_intr_md.egress_port);
        }
    }
}

control CcEgressDeparser(packet_out pkt, inout eg_headers_t hdr, in eg_meta_t meta,
                         in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(CcIngressParser(), CcIngress(), CcIngressDeparser(),
         CcEgressParser(), CcEgress(), CcEgressDeparser()) pipe;

Switch(pipe) main;
