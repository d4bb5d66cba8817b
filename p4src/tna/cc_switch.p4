/*
 * cc_switch for Tofino and Tofino 2 (TNA / T2NA): the data plane of
 * p4src/v1model/cc_switch.p4 on hardware, with the same tables, actions,
 * counters and register under the same P4Info names, so the controller
 * drives both alike.
 *   - IPv4 LPM forwarding, TTL, checksum; ECMP over a hash of the 5-tuple
 *     (buckets the controller maps to next hops);
 *   - ECN CE when the egress queue at enqueue was >= K (per port, in
 *     80-byte cells), or RED between Kmin and Kmax (DCQCN's switch);
 *   - the p4cc telemetry shim (units 0x11: depths in cells, hop records
 *     in ns), path maximum; version 2 adds the queue in bytes, the port's
 *     transmitted bytes and its line rate (HPCC, PowerTCP);
 *   - per-port random loss; per-port counters;
 *   - postcards: 1-in-N packets are mirrored egress-to-egress (session
 *     POSTCARD_SESSION) with a mirror header carrying their queue report;
 *     the mirror session truncates the copy, and the copy's own trip
 *     through egress rewrites it into the 96-byte postcard frame.
 * The architecture-neutral parts are p4src/include/cc_controls.p4, shared
 * with the v1model program. docs/tofino.md lists what differs.
 *
 * Compiled with bf-p4c (make p4-tna); type-checked with p4test
 * (make p4-tna-check, run by make test).
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
#include "../include/udp.p4"
#include "../include/telemetry.p4"
#include "../include/cc_controls.p4"

/* ----------------------- Tofino-only definitions ---------------------- */

// The first byte after the egress intrinsic metadata says what a packet
// is: a forwarded packet with its bridged metadata, or a postcard copy
// with its mirror header.
const bit<8> PKT_KIND_BRIDGED  = 0xB1;
const bit<8> PKT_KIND_POSTCARD = 0xC1;
const MirrorType_t MIRROR_TYPE_POSTCARD = 1;

// The shim's units byte as Tofino writes it: depths in 80-byte cells (low
// nibble), hop records' delay and timestamp in ns (high nibble), the same
// encoding as a postcard's units byte. Tofino counts ns and has no divider;
// a shift across the 48-bit timestamp's 16-bit containers is not one ALU
// operation either, so the records carry ns exactly and hosts convert
// (docs/wire-format.md).
const bit<8> SHIM_UNITS_TOFINO = DEPTH_UNIT_CELLS80 | (TIME_UNIT_NS << 4);

// Tofino's egress packet length counts the Ethernet FCS; bmv2's does not.
const bit<16> FCS_BYTES = 4;

// What ingress tells egress about a forwarded packet.
// Its fields have the postcard's widths (see postcard_mirror_h).
header bridged_md_h {
    bit<8>   kind;                  // PKT_KIND_BRIDGED
    bit<16>  ingress_port;
    bit<64>  ingress_ts;            // ns (ingress parser's global timestamp)
}

// The postcard mirror header: what a copy must remember of the packet it
// reports on (the copy's own queueing would overwrite the queue figures,
// and egress has no ingress port). Fields are byte-aligned with the
// postcard field they become, so rewriting a copy into a postcard moves
// whole containers (a field cut mid-byte would make a postcard container
// depend on more PHV sources than an action may read). Timestamps keep
// Tofino's 48 bits and the length 16: Tofino 1 carries at most 32 bytes of
// mirror metadata (bfas: "mirror digest limited to 32 bytes").
// POSTCARD_MIRROR_BYTES long; the mirror session truncates a copy to this
// header plus POSTCARD_REPORTED_BYTES of the packet (the controller sets
// the session's packet_length_bytes).
header postcard_mirror_h {
    bit<8>   kind;                  // PKT_KIND_POSTCARD
    bit<16>  ingress_port;
    bit<16>  egress_port;
    bit<32>  enq_qdepth;            // 80-byte cells
    bit<32>  deq_qdepth;            // 80-byte cells
    bit<32>  deq_timedelta;         // ns
    bit<48>  ingress_ts;            // ns
    bit<48>  egress_ts;             // ns
    bit<16>  pkt_len;               // bytes at ingress, FCS excluded
}
const bit<16> POSTCARD_MIRROR_BYTES = 31;

// A copy's first four bytes of TCP/UDP: the reported packet's ports.
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

/* ----------------------------- ingress ------------------------------ */

struct ig_headers_t {
    bridged_md_h bridge;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    l4_ports_h   l4_ports;      // TCP/UDP: the ports ECMP hashes
}

struct ig_meta_t { }

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
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): parse_l4_ports;
            (5, 0, IP_PROTO_UDP): parse_l4_ports;
            default: accept;
        }
    }
    state parse_l4_ports {
        pkt.extract(hdr.l4_ports);
        transition accept;
    }
}

control PortCounters(in PortId_t port) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) port_packets;
    apply { port_packets.count(port); }
}

control Forwarding(inout ig_headers_t hdr,
                   in PortId_t ingress_port,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) ingress_drops;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) flow_hash;
    bool dropped = false;
    bool ecmp = false;
    bit<16> group = 0;
    bit<16> bucket = 0;
    bit<16> src_port = 0;
    bit<16> dst_port = 0;

    action forward(PortId_t port, mac_addr_t dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        // The sender addressed the switch: its MAC becomes our source.
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
        dropped = true;
    }

    // A route over several equal-cost next hops: ecmp_bucket forwards.
    action set_ecmp_group(bit<16> group_id) {
        ecmp = true;
        group = group_id;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { forward; drop; set_ecmp_group; }
        default_action = drop();
        size = 1024;
    }

    // The flow's 5-tuple picks one of ECMP_BUCKETS buckets (its low bits).
    action pick_bucket() {
        bucket = flow_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                 src_port, dst_port }) & (bit<16>)(ECMP_BUCKETS - 1);
    }
    @hidden table ecmp_hash {
        actions = { pick_bucket; }
        default_action = pick_bucket();
        size = 1;
    }

    // A group's buckets, each naming the member (next hop) its flows take.
    table ecmp_bucket {
        key = {
            group: exact @name("group_id");
            bucket: exact @name("bucket");
        }
        actions = { forward; drop; }
        default_action = drop();
        size = ECMP_GROUPS * ECMP_BUCKETS;
    }

    apply {
        if (hdr.l4_ports.isValid()) {
            src_port = hdr.l4_ports.src_port;
            dst_port = hdr.l4_ports.dst_port;
        }
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            ipv4_lpm.apply();
            if (ecmp) {
                ecmp_hash.apply();
                ecmp_bucket.apply();
            }
        }
        if (dropped) {
            ingress_drops.count(ingress_port);
        }
    }
}

control CcIngress(inout ig_headers_t hdr, inout ig_meta_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    PortCounters() rx;
    Forwarding() forwarding;

    apply {
        rx.apply(ig_intr_md.ingress_port);
        forwarding.apply(hdr, ig_intr_md.ingress_port, ig_dprsr_md, ig_tm_md);
        hdr.bridge.setValid();
        hdr.bridge.kind = PKT_KIND_BRIDGED;
        hdr.bridge.ingress_port = (bit<16>)ig_intr_md.ingress_port;
        hdr.bridge.ingress_ts = (bit<64>)ig_prsr_md.global_tstamp;
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

struct eg_headers_t {
    ethernet_h                ethernet;
    // Postcard headers: valid only on postcard copies.
    ipv4_h                    pc_ipv4;
    udp_h                     pc_udp;
    p4cc_postcard_h           postcard;
    ipv4_h                    ipv4;
    l4_ports_h                l4_ports;     // postcard copies only
    udp_h                     udp;
    p4cc_shim_h               shim;
    // This hop's record, emitted before the records already there.
    p4cc_hop_h                new_hop;
    // The records already there, in packet order: a packet with n of them
    // fills old_hop_n .. old_hop_1. Separate headers, not a stack: bf-p4c
    // rejects a stack's `.next` extracted from states that follow each
    // other (it sees hops[0] assigned twice). A full stack is not parsed.
    p4cc_hop_h                old_hop_3;
    p4cc_hop_h                old_hop_2;
    p4cc_hop_h                old_hop_1;
    // A version-2 shim's record; the records already there are payload
    // (never parsed: a version-2 packet parses as deep with four as with none).
    p4cc_int_hop_h            new_int_hop;
}

// What egress reports of the queue, widened once, in the first stage, from
// the intrinsic metadata. Tofino keeps intrinsic fields in fixed containers
// beside other fields (the 19-bit enq_qdepth with padding and flags); an
// ALU operation (max) or a header write that read them directly would tie
// those containers to every header the value is written into, and bf-p4c
// finds no PHV allocation for the lot. Whole-width copies break the tie.
struct queue_report_t {
    bit<16> egress_port;
    bit<32> enq_qdepth;             // 80-byte cells
    bit<32> deq_qdepth;             // 80-byte cells
    bit<32> deq_timedelta;          // ns
    bit<64> egress_ts;              // ns
    bit<16> pkt_len;                // bytes, FCS excluded
    bit<32> pkt_len32;              // the same, at the width of the byte counters
    bit<32> pkt_len32_int;          // the same with a version-2 record pushed
}

struct eg_meta_t {
    bridged_md_h      bridge;       // forwarded packets
    postcard_mirror_h pc_mirror;    // copies (parsed), sampled packets (emitted)
    MirrorId_t        pc_session;
    bit<32>           pc_last;      // sample_one_in_n - 1
    bool              shim_ok;
    bool              shim_int_ok;  // a version-2 shim with at most P4CC_MAX_HOPS records
    bit<32>           tx_frame;     // bytes this packet puts on its port (PortLoad)
    bit<16>           switch_id;
    bit<16>           l4_src_port;  // copies: the reported packet's ports
    bit<16>           l4_dst_port;
    // Copies: the mirror header's timestamps and length at the postcard's
    // widths, set by the parser so the postcard's moves are whole fields.
    bit<64>           pc_ingress_ts;
    bit<64>           pc_egress_ts;
    bit<32>           pc_pkt_len;
}

parser CcEgressParser(packet_in pkt, out eg_headers_t hdr, out eg_meta_t meta,
                      out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        meta.pc_session = 0;
        meta.pc_last = 0;
        meta.shim_ok = false;
        meta.shim_int_ok = false;
        meta.tx_frame = 0;
        meta.switch_id = 0;
        meta.l4_src_port = 0;
        meta.l4_dst_port = 0;
        meta.pc_ingress_ts = 0;
        meta.pc_egress_ts = 0;
        meta.pc_pkt_len = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            PKT_KIND_POSTCARD: parse_postcard_copy;
            default: parse_bridged;
        }
    }

    state parse_bridged {
        pkt.extract(meta.bridge);
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
    // A shim of another version, or claiming more hops than the stack
    // holds, is left alone; so is one whose records are cut short (the
    // parser stops, shim_ok stays false). No parser loops on Tofino: one
    // state per hop count.
    //
    // A full stack (P4CC_MAX_HOPS records) is not parsed: this hop only
    // sets the overflow flag and the records go out as payload, unchanged.
    // Parsing them would make the longest egress path 168 bytes, past
    // Tofino's 160-byte parse depth (egress metadata 27 + bridge 11 +
    // Ethernet, IPv4, UDP 42 + shim 8 + 4 x 20). The one difference from
    // v1model (docs/tofino.md): a full stack whose records are cut short
    // gets the overflow flag instead of being left alone.
    state parse_shim {
        pkt.extract(hdr.shim);
        transition select(hdr.shim.version, hdr.shim.hop_count) {
            (P4CC_SHIM_VERSION, 0): shim_complete;
            (P4CC_SHIM_VERSION, 1): parse_hops_1;
            (P4CC_SHIM_VERSION, 2): parse_hops_2;
            (P4CC_SHIM_VERSION, 3): parse_hops_3;
            (P4CC_SHIM_VERSION, P4CC_MAX_HOPS_B): shim_complete;
            (P4CC_SHIM_VERSION_INT, 0): shim_int_complete;
            (P4CC_SHIM_VERSION_INT, 1): shim_int_complete;
            (P4CC_SHIM_VERSION_INT, 2): shim_int_complete;
            (P4CC_SHIM_VERSION_INT, 3): shim_int_complete;
            (P4CC_SHIM_VERSION_INT, P4CC_MAX_HOPS_B): shim_int_complete;
            default: accept;
        }
    }
    state shim_int_complete {
        meta.shim_int_ok = true;
        transition accept;
    }
    state parse_hops_3 { pkt.extract(hdr.old_hop_3); transition parse_hops_2; }
    state parse_hops_2 { pkt.extract(hdr.old_hop_2); transition parse_hops_1; }
    state parse_hops_1 { pkt.extract(hdr.old_hop_1); transition shim_complete; }
    state shim_complete {
        meta.shim_ok = true;
        transition accept;
    }

    // A postcard copy: the mirror header, then the reported packet as it
    // left (so its ECN is after marking), truncated by the mirror session
    // to Ethernet, IPv4 and the first four bytes of the L4 header.
    state parse_postcard_copy {
        pkt.extract(meta.pc_mirror);
        meta.pc_ingress_ts = (bit<64>)meta.pc_mirror.ingress_ts;
        meta.pc_egress_ts = (bit<64>)meta.pc_mirror.egress_ts;
        meta.pc_pkt_len = (bit<32>)meta.pc_mirror.pkt_len;
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): copy_l4_ports;
            (5, 0, IP_PROTO_UDP): copy_l4_ports;
            default: copy_other;
        }
    }
    state copy_l4_ports {
        pkt.extract(hdr.l4_ports);
        meta.l4_src_port = hdr.l4_ports.src_port;
        meta.l4_dst_port = hdr.l4_ports.dst_port;
        transition accept;
    }
    // Options or fragments: no ports (0), as on v1model; the four bytes
    // are consumed all the same.
    state copy_other {
        pkt.extract(hdr.l4_ports);
        transition accept;
    }
}

control WidenQueueReport(out queue_report_t q,
                         in egress_intrinsic_metadata_t eg_intr_md,
                         in bit<48> egress_ts) {
    action widen() {
        q.egress_port = (bit<16>)eg_intr_md.egress_port;
        q.enq_qdepth = (bit<32>)eg_intr_md.enq_qdepth;
        q.deq_qdepth = (bit<32>)eg_intr_md.deq_qdepth;
        q.deq_timedelta = (bit<32>)eg_intr_md.deq_timedelta;
        q.egress_ts = (bit<64>)egress_ts;
        q.pkt_len = eg_intr_md.pkt_length - FCS_BYTES;
        q.pkt_len32 = (bit<32>)(eg_intr_md.pkt_length - FCS_BYTES);
        q.pkt_len32_int = (bit<32>)(eg_intr_md.pkt_length + (INT_HOP_LEN_BYTES - FCS_BYTES));
    }
    // A table of its own, so the copies are made in an action of their own.
    @hidden table queue_report {
        actions = { widen; }
        default_action = widen();
        size = 1;
    }
    apply { queue_report.apply(); }
}

control SwitchConfig(inout eg_meta_t meta) {
    action set_switch_id(bit<16> switch_id) {
        meta.switch_id = switch_id;
    }
    table switch_config {
        actions = { set_switch_id; }
        default_action = set_switch_id(0);
        size = 1;
    }
    apply { switch_config.apply(); }
}

// Random loss on a port, as a lossy link would drop.
control LinkLoss(in PortId_t port,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout bool dropped) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) loss_drops;
    Random<bit<16>>() uniform;
    bit<32> threshold = 0;
    bit<16> drawn = 0;
    bit<32> above = 0;

    action set_loss(bit<32> threshold_16) {
        threshold = threshold_16;
        drawn = uniform.get();
    }
    table port_loss {
        key = { port: exact @name("egress_port"); }
        actions = { set_loss; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    // Not zero exactly when the draw is below the threshold (a saturating
    // subtraction: Tofino compares two fields this way). An action of its
    // own: a gateway tests a field, not an expression, and the random
    // number (action data) cannot be the subtraction's second operand.
    action compare() {
        above = threshold |-| (bit<32>)drawn;
    }
    @hidden table loss_compare {
        actions = { compare; }
        default_action = compare();
        size = 1;
    }

    apply {
        if (port_loss.apply().hit) {
            loss_compare.apply();
            if (above != 0) {
                eg_dprsr_md.drop_ctl = 1;
                dropped = true;
                loss_drops.count(port);
            }
        }
    }
}

// ECN marking on the instantaneous queue at enqueue: a step at K (DCTCP),
// or RED's probability rising from Kmin to Kmax (DCQCN's switch).
control EcnMarking(inout ipv4_h ipv4, in PortId_t port, in bit<19> enq_qdepth) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) ce_marks;
    Random<bit<16>>() uniform;
    bit<19> k = 0;
    bit<19> short_of_k = 0;
    bit<32> p = 0;
    bit<16> drawn = 0;
    bit<32> below_p = 0;

    action set_threshold(bit<19> k_depth) {
        k = k_depth;
    }
    action set_mark_probability(bit<32> mark_16) {
        p = mark_16;
        drawn = uniform.get();
    }
    // A port's RED profile: per queue depth range (80-byte cells), the
    // probability of marking there (mark_16 / MARK_SCALE).
    table ecn_red {
        key = {
            port: exact @name("egress_port");
            enq_qdepth: range @name("enq_qdepth");
        }
        actions = { set_mark_probability; NoAction; }
        default_action = NoAction();
        size = RED_ENTRIES;
    }
    // Not zero exactly when the draw is below the probability (LinkLoss's
    // comparison).
    action compare_red() {
        below_p = p |-| (bit<32>)drawn;
    }
    @hidden table red_compare {
        actions = { compare_red; }
        default_action = compare_red();
        size = 1;
    }
    // Zero exactly when the queue reached K. An action of its own, as in
    // LinkLoss.
    action compare() {
        short_of_k = k |-| enq_qdepth;
    }
    @hidden table ecn_compare {
        actions = { compare; }
        default_action = compare();
        size = 1;
    }
    // A port without an entry never marks.
    table ecn_threshold {
        key = { port: exact @name("egress_port"); }
        actions = { set_threshold; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    apply {
        if (ipv4.isValid() && (ipv4.ecn == ECN_ECT0 || ipv4.ecn == ECN_ECT1)) {
            if (ecn_threshold.apply().hit) {
                ecn_compare.apply();
                if (short_of_k == 0) {
                    ipv4.ecn = ECN_CE;
                    ce_marks.count(port);
                }
            } else if (ecn_red.apply().hit) {
                red_compare.apply();
                if (below_p != 0) {
                    ipv4.ecn = ECN_CE;
                    ce_marks.count(port);
                }
            }
        }
    }
}

// What HPCC and PowerTCP read of a port (shim version 2): its line rate as
// the controller loaded it, the bytes it transmitted, and the bytes queued
// as a packet leaves (Tofino counts its queue in 80-byte cells: × 80, as
// (x << 6) + (x << 4), in two steps: no multiplier, one ALU op per action).
control PortLoad(in PortId_t port, in queue_report_t q, in bool record_pushed,
                 inout eg_meta_t meta, out int_values_t w) {
    Register<bit<32>, PortId_t>(NUM_PORTS, 0) tx_bytes;
    bit<32> cells64 = 0;
    bit<32> cells16 = 0;

    // Transmitted: the frame as it leaves, a new record included (one
    // stateful ALU op: the length comes from the PHV ready-made).
    RegisterAction<bit<32>, PortId_t, bit<32>>(tx_bytes) add_sent = {
        void apply(inout bit<32> sent, out bit<32> now) {
            sent = sent + meta.tx_frame;
            now = sent;
        }
    };

    action set_port_rate(bit<32> rate_kbps) {
        w.rate_kbps = rate_kbps;
    }
    table port_rate {
        key = { port: exact @name("egress_port"); }
        actions = { set_port_rate; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    action scale_queue() {
        cells64 = q.deq_qdepth << 6;
        cells16 = q.deq_qdepth << 4;
    }
    @hidden table queue_scale {
        actions = { scale_queue; }
        default_action = scale_queue();
        size = 1;
    }
    action sum_queue() {
        w.qlen_bytes = cells64 + cells16;
    }
    @hidden table queue_sum {
        actions = { sum_queue; }
        default_action = sum_queue();
        size = 1;
    }

    apply {
        w.rate_kbps = 0;
        port_rate.apply();
        if (record_pushed) {
            meta.tx_frame = q.pkt_len32_int;
        } else {
            meta.tx_frame = q.pkt_len32;
        }
        w.tx_bytes = add_sent.execute(port);
        queue_scale.apply();
        queue_sum.apply();
    }
}

// In-band telemetry: keep the path maximum, add this hop's record
// (PushHopRecord, shared with the v1model program).
control InbandTelemetry(inout eg_headers_t hdr,
                        in eg_meta_t meta,
                        in queue_report_t q,
                        in int_values_t w) {
    PushHopRecord() push;
    PushIntRecord() push_int;

    apply {
        if (hdr.shim.isValid() && (meta.shim_ok || meta.shim_int_ok)) {
            hdr.shim.max_qdepth = max(hdr.shim.max_qdepth, q.enq_qdepth);
            hop_values_t v;
            v.switch_id = meta.switch_id;
            v.egress_port = q.egress_port;
            v.enq_qdepth = q.enq_qdepth;
            v.deq_timedelta_us = q.deq_timedelta;   // ns: SHIM_UNITS_TOFINO
            v.egress_ts_us = q.egress_ts;           // ns
            if (meta.shim_int_ok) {
                push_int.apply(hdr.shim, hdr.new_int_hop, hdr.ipv4, hdr.udp, SHIM_UNITS_TOFINO, v, w);
            } else {
                push.apply(hdr.shim, hdr.new_hop, hdr.ipv4, hdr.udp, SHIM_UNITS_TOFINO, v);
            }
        }
    }
}

// Postcards: 1-in-N packets are mirrored egress-to-egress to session
// POSTCARD_SESSION with their queue report in the mirror header; a copy
// is rewritten into a postcard (BuildPostcard, shared with the v1model
// program).
control Postcards(inout eg_headers_t hdr,
                  inout eg_meta_t meta,
                  in queue_report_t q,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  in bool dropped) {
    Register<bit<32>, bit<1>>(1, 0) postcard_sample_count;
    BuildPostcard() build;
    bit<32>     one_in_n = 0;
    mac_addr_t  collector_mac = 0;
    ipv4_addr_t switch_ip = 0;
    ipv4_addr_t collector_ip = 0;
    bit<16>     collector_port = 0;

    // Packets seen since the last postcard; the N-th fires and restarts
    // the count (the same register values as the v1model program's).
    RegisterAction<bit<32>, bit<1>, bit<1>>(postcard_sample_count) tick = {
        void apply(inout bit<32> seen, out bit<1> fire) {
            if (seen >= meta.pc_last) {
                seen = 0;
                fire = 1;
            } else {
                seen = seen + 1;
                fire = 0;
            }
        }
    };

    action enable_postcards(bit<32> sample_one_in_n,
                            mac_addr_t collector_mac_addr,
                            ipv4_addr_t switch_ip_addr,
                            ipv4_addr_t collector_ip_addr,
                            bit<16> collector_udp_port) {
        one_in_n = sample_one_in_n;
        collector_mac = collector_mac_addr;
        switch_ip = switch_ip_addr;
        collector_ip = collector_ip_addr;
        collector_port = collector_udp_port;
    }
    table postcard_config {
        actions = { enable_postcards; NoAction; }
        default_action = NoAction();
        size = 1;
    }

    action sample() {
        eg_dprsr_md.mirror_type = MIRROR_TYPE_POSTCARD;
        meta.pc_session = (MirrorId_t)POSTCARD_SESSION;
        meta.pc_mirror.setValid();
        meta.pc_mirror.kind = PKT_KIND_POSTCARD;
        meta.pc_mirror.ingress_port = meta.bridge.ingress_port;
        meta.pc_mirror.egress_port = q.egress_port;
        meta.pc_mirror.enq_qdepth = q.enq_qdepth;
        meta.pc_mirror.deq_qdepth = q.deq_qdepth;
        meta.pc_mirror.deq_timedelta = q.deq_timedelta;
        meta.pc_mirror.ingress_ts = meta.bridge.ingress_ts[47:0];
        meta.pc_mirror.egress_ts = q.egress_ts[47:0];
        meta.pc_mirror.pkt_len = q.pkt_len;
    }

    apply {
        postcard_config.apply();
        if (meta.pc_mirror.isValid()) {
            // A copy: the report replaces the packet it describes.
            postcard_report_t r;
            r.units = POSTCARD_UNITS_TOFINO;
            r.switch_id = meta.switch_id;
            r.ingress_port = meta.pc_mirror.ingress_port;
            r.egress_port = meta.pc_mirror.egress_port;
            r.enq_qdepth = meta.pc_mirror.enq_qdepth;
            r.deq_qdepth = meta.pc_mirror.deq_qdepth;
            r.deq_timedelta = meta.pc_mirror.deq_timedelta;
            r.ingress_ts = meta.pc_ingress_ts;
            r.egress_ts = meta.pc_egress_ts;
            r.src_port = meta.l4_src_port;
            r.dst_port = meta.l4_dst_port;
            r.pkt_len = meta.pc_pkt_len;
            postcard_dest_t d;
            d.collector_mac = collector_mac;
            d.switch_ip = switch_ip;
            d.collector_ip = collector_ip;
            d.collector_port = collector_port;
            build.apply(hdr.ethernet, hdr.pc_ipv4, hdr.pc_udp, hdr.postcard, hdr.ipv4, r, d);
            hdr.ipv4.setInvalid();
            hdr.l4_ports.setInvalid();
        } else if (!dropped && one_in_n != 0) {
            meta.pc_last = one_in_n - 1;
            if (tick.execute(0) == 1) {
                sample();
            }
        }
    }
}

control CcEgress(inout eg_headers_t hdr, inout eg_meta_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    WidenQueueReport() widen;
    SwitchConfig() config;
    LinkLoss() loss;
    EcnMarking() ecn;
    InbandTelemetry() telemetry;
    PortLoad() load;
    Postcards() postcards;
    PortCounters() tx;

    apply {
        bool dropped = false;
        int_values_t w;
        queue_report_t q;
        widen.apply(q, eg_intr_md, eg_prsr_md.global_tstamp);
        config.apply(meta);
        if (!meta.pc_mirror.isValid()) {
            loss.apply(eg_intr_md.egress_port, eg_dprsr_md, dropped);
            if (!dropped) {
                ecn.apply(hdr.ipv4, eg_intr_md.egress_port, eg_intr_md.enq_qdepth);
                load.apply(eg_intr_md.egress_port, q, hdr.shim.isValid() && meta.shim_int_ok
                           && hdr.shim.hop_count < P4CC_MAX_HOPS_B, meta, w);
                telemetry.apply(hdr, meta, q, w);
            }
        }
        postcards.apply(hdr, meta, q, eg_dprsr_md, dropped);
        if (!dropped) {
            tx.apply(eg_intr_md.egress_port);
        }
    }
}

control CcEgressDeparser(packet_out pkt, inout eg_headers_t hdr, in eg_meta_t meta,
                         in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() pc_ipv4_csum;
    Mirror() mirror;
    apply {
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_POSTCARD) {
            mirror.emit<postcard_mirror_h>(meta.pc_session, meta.pc_mirror);
        }
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        if (hdr.pc_ipv4.isValid()) {
            hdr.pc_ipv4.hdr_checksum = pc_ipv4_csum.update({
                hdr.pc_ipv4.version, hdr.pc_ipv4.ihl, hdr.pc_ipv4.dscp, hdr.pc_ipv4.ecn,
                hdr.pc_ipv4.total_len, hdr.pc_ipv4.identification, hdr.pc_ipv4.flags,
                hdr.pc_ipv4.frag_offset, hdr.pc_ipv4.ttl, hdr.pc_ipv4.protocol,
                hdr.pc_ipv4.src_addr, hdr.pc_ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(CcIngressParser(), CcIngress(), CcIngressDeparser(),
         CcEgressParser(), CcEgress(), CcEgressDeparser()) pipe;

Switch(pipe) main;
