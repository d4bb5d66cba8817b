/*
 * cc_switch: the p4cc data plane for v1model (bmv2 simple_switch_grpc and
 * the p4cc embedded target).
 *
 * It tells end hosts about congestion in two ways:
 *   - ECN: an ECT packet becomes CE when the queue it joined at its egress
 *     port was at least K deep (K per port, set at run time);
 *   - telemetry: UDP datagrams to P4CC_SHIM_UDP_PORT carry a shim in which
 *     each hop records its queue, and the path maximum is kept up to date
 *     (version 2: also the queue in bytes, the port's transmitted bytes and
 *     line rate, what HPCC and PowerTCP read); sampled postcards report
 *     any packet's queue to a collector.
 * ECN marking is a step at K, or RED between Kmin and Kmax (DCQCN's switch).
 * docs/data-plane.md lists every table, action, counter and register.
 */
#include <core.p4>
#include <v1model.p4>

#include "../include/constants.p4"
#include "../include/ethernet.p4"
#include "../include/ipv4.p4"
#include "../include/tcp.p4"
#include "../include/udp.p4"
#include "../include/telemetry.p4"
#include "../include/cc_controls.p4"

struct headers_t {
    ethernet_h                      ethernet;
    // Postcard headers are valid only on postcard clones.
    ipv4_h                          pc_ipv4;
    udp_h                           pc_udp;
    p4cc_postcard_h                 postcard;
    ipv4_h                          ipv4;
    tcp_h                           tcp;
    udp_h                           udp;
    p4cc_shim_h                     shim;
    // This hop's record, emitted before the records already there.
    p4cc_hop_h                      new_hop;
    p4cc_hop_h[P4CC_MAX_HOPS]       hops;
    // A version-2 shim's record (the ones already there are payload).
    p4cc_int_hop_h                  new_int_hop;
}

struct local_meta_t {
    bit<8>  hops_left;
    bool    shim_len_ok;
    bool    shim_ok;
    bool    shim_int_ok;      // a version-2 shim with at most P4CC_MAX_HOPS records
    bit<16> switch_id;
    bit<8>  time_unit;        // TIME_UNIT_*: this switch's clock (clock_config)
    bool    dropped;
    // What a postcard clone must remember of the packet it reports on:
    // E2E clones keep headers but lose metadata, and their own queueing
    // would overwrite the queue fields.
    @field_list(1) bit<16> l4_src_port;
    @field_list(1) bit<16> l4_dst_port;
    @field_list(1) bit<16> pc_ingress_port;
    @field_list(1) bit<16> pc_egress_port;
    @field_list(1) bit<32> pc_enq_qdepth;
    @field_list(1) bit<32> pc_deq_qdepth;
    @field_list(1) bit<32> pc_deq_timedelta;
    @field_list(1) bit<64> pc_ingress_ts;
    @field_list(1) bit<64> pc_egress_ts;
    @field_list(1) bit<32> pc_pkt_len;
}

/* ------------------------------------------------------------------ */

parser CcParser(packet_in packet,
                out headers_t hdr,
                inout local_meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        // Options or fragments: forward on the IPv4 header alone.
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP): parse_tcp;
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src_port = hdr.tcp.src_port;
        meta.l4_dst_port = hdr.tcp.dst_port;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src_port = hdr.udp.src_port;
        meta.l4_dst_port = hdr.udp.dst_port;
        transition select(hdr.udp.dst_port) {
            P4CC_SHIM_UDP_PORT: parse_shim;
            default: accept;
        }
    }

    // A shim of another version, or claiming more hops than the stack
    // holds, is left alone: the packet is forwarded untouched.
    state parse_shim {
        packet.extract(hdr.shim);
        meta.hops_left = hdr.shim.hop_count;
        meta.shim_len_ok = hdr.shim.hop_count <= P4CC_MAX_HOPS_B;
        transition select(hdr.shim.version, meta.shim_len_ok) {
            (P4CC_SHIM_VERSION, true): parse_hops;
            (P4CC_SHIM_VERSION_INT, true): shim_int_complete;
            default: accept;
        }
    }

    state shim_int_complete {
        meta.shim_int_ok = true;
        transition accept;
    }

    state parse_hops {
        transition select(meta.hops_left) {
            0: shim_complete;
            default: parse_hop;
        }
    }

    state parse_hop {
        packet.extract(hdr.hops.next);
        meta.hops_left = meta.hops_left - 1;
        transition parse_hops;
    }

    state shim_complete {
        meta.shim_ok = true;
        transition accept;
    }
}

control CcVerifyChecksum(inout headers_t hdr, inout local_meta_t meta) {
    // Checksums are recomputed on the way out; a bad one is not our call.
    apply { }
}

/* ----------------------------- ingress ------------------------------ */

// Bytes that joined and that left each port's queue, so that egress can
// tell the queue in bytes (v1model reports it only in packets). Both
// count a packet's length at ingress; they are the program's globals
// because ingress adds to the first and egress to the second.
register<bit<32>>(NUM_PORTS) queue_in_bytes;
register<bit<32>>(NUM_PORTS) queue_out_bytes;

// Counts what joins a queue (ingress's side of QueueBytes, below).
control QueueIn(in bool dropped, in standard_metadata_t sm) {
    apply {
        if (!dropped) {
            bit<32> joined;
            queue_in_bytes.read(joined, (bit<32>)sm.egress_spec);
            queue_in_bytes.write((bit<32>)sm.egress_spec, joined + sm.packet_length);
        }
    }
}

control PortCounters(in bit<9> port) {
    counter(NUM_PORTS, CounterType.packets_and_bytes) port_packets;
    apply { port_packets.count((bit<32>)port); }
}

control Forwarding(inout headers_t hdr,
                   inout local_meta_t meta,
                   inout standard_metadata_t sm) {
    counter(NUM_PORTS, CounterType.packets) ingress_drops;
    bool ecmp = false;
    bit<16> group = 0;
    bit<16> bucket = 0;

    action forward(bit<9> port, mac_addr_t dst_mac) {
        sm.egress_spec = port;
        // The sender addressed the switch: its MAC becomes our source.
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action drop() {
        mark_to_drop(sm);
        meta.dropped = true;
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
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            ipv4_lpm.apply();
            if (ecmp) {
                // The flow's 5-tuple picks the bucket (0 for ports where
                // the packet is neither TCP nor UDP).
                hash(bucket, HashAlgorithm.crc16, (bit<16>)0,
                     { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                       meta.l4_src_port, meta.l4_dst_port },
                     ECMP_BUCKETS);
                ecmp_bucket.apply();
            }
        }
        if (meta.dropped) {
            ingress_drops.count((bit<32>)sm.ingress_port);
        }
    }
}

control CcIngress(inout headers_t hdr,
                  inout local_meta_t meta,
                  inout standard_metadata_t sm) {
    PortCounters() rx;
    Forwarding() forwarding;
    QueueIn() queue_in;
    apply {
        rx.apply(sm.ingress_port);
        forwarding.apply(hdr, meta, sm);
        queue_in.apply(meta.dropped, sm);
    }
}

/* ------------------------------ egress ------------------------------ */

// What left a queue (egress's side of the queue's bytes): every packet
// dequeued counts, dropped in egress or not. The queue is what joined
// minus what left, this packet included: exact while nothing is dropped
// at the queue's tail. A tail drop is counted in but never out, and the
// two counters cannot be set equal when the queue empties (packets past
// ingress may not have joined it yet), so the difference is capped at
// what the packets still queued can hold.
control QueueOut(out bit<32> qlen_bytes, in standard_metadata_t sm) {
    apply {
        bit<32> joined;
        bit<32> left;
        queue_in_bytes.read(joined, (bit<32>)sm.egress_port);
        queue_out_bytes.read(left, (bit<32>)sm.egress_port);
        left = left + sm.packet_length;
        queue_out_bytes.write((bit<32>)sm.egress_port, left);
        bit<32> most = (bit<32>)sm.deq_qdepth * MAX_FRAME_BYTES;
        qlen_bytes = joined - left;
        if (qlen_bytes > most) {
            qlen_bytes = most;
        }
    }
}

control SwitchConfig(inout local_meta_t meta) {
    action set_switch_id(bit<16> switch_id) {
        meta.switch_id = switch_id;
    }
    table switch_config {
        actions = { set_switch_id; }
        default_action = set_switch_id(0);
    }
    // The unit of this switch's timestamps and queue delays, as its
    // reports say: bmv2 counts µs; the embedded target counts ns when the
    // controller switches its clock to ns (docs/embedded-target.md).
    action set_time_unit(bit<8> time_unit) {
        meta.time_unit = time_unit;
    }
    table clock_config {
        actions = { set_time_unit; }
        default_action = set_time_unit(TIME_UNIT_US);
    }
    apply {
        switch_config.apply();
        clock_config.apply();
    }
}

// What HPCC and PowerTCP read of a port (shim version 2): its line rate as
// the controller loaded it, the bytes it transmitted, and the bytes queued
// as a packet leaves.
control PortLoad(out int_values_t w,
                 in bool record_pushed,
                 in bit<32> qlen_bytes,
                 in standard_metadata_t sm) {
    register<bit<32>>(NUM_PORTS) tx_bytes;

    action set_port_rate(bit<32> rate_kbps) {
        w.rate_kbps = rate_kbps;
    }
    table port_rate {
        key = { sm.egress_port: exact @name("egress_port"); }
        actions = { set_port_rate; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    apply {
        w.rate_kbps = 0;
        port_rate.apply();
        // Transmitted: the frame as it leaves, its new record included.
        bit<32> sent;
        tx_bytes.read(sent, (bit<32>)sm.egress_port);
        sent = sent + sm.packet_length;
        if (record_pushed) {
            sent = sent + (bit<32>)INT_HOP_LEN_BYTES;
        }
        tx_bytes.write((bit<32>)sm.egress_port, sent);
        w.tx_bytes = sent;
        w.qlen_bytes = qlen_bytes;
    }
}

// Random loss on a port, as a lossy link would drop.
control LinkLoss(inout local_meta_t meta, inout standard_metadata_t sm) {
    counter(NUM_PORTS, CounterType.packets) loss_drops;
    bit<32> threshold = 0;

    action set_loss(bit<32> threshold_16) {
        threshold = threshold_16;
    }
    table port_loss {
        key = { sm.egress_port: exact @name("egress_port"); }
        actions = { set_loss; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    apply {
        if (port_loss.apply().hit && threshold != 0) {
            bit<32> draw;
            random(draw, 0, LOSS_SCALE - 1);
            if (draw < threshold) {
                mark_to_drop(sm);
                meta.dropped = true;
                loss_drops.count((bit<32>)sm.egress_port);
            }
        }
    }
}

// ECN marking on the instantaneous queue at enqueue: a step at K (DCTCP),
// or RED's probability rising from Kmin to Kmax (DCQCN's switch).
control EcnMarking(inout headers_t hdr, inout standard_metadata_t sm) {
    counter(NUM_PORTS, CounterType.packets) ce_marks;
    bit<32> k = 0;
    bit<32> p = 0;
    bool mark = false;

    action set_threshold(bit<32> k_depth) {
        k = k_depth;
    }
    // A port with neither an entry here nor a RED profile never marks.
    table ecn_threshold {
        key = { sm.egress_port: exact @name("egress_port"); }
        actions = { set_threshold; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    action set_mark_probability(bit<32> mark_16) {
        p = mark_16;
    }
    // A port's RED profile: per queue depth range, the probability of
    // marking there (mark_16 / MARK_SCALE).
    table ecn_red {
        key = {
            sm.egress_port: exact @name("egress_port");
            sm.enq_qdepth: range @name("enq_qdepth");
        }
        actions = { set_mark_probability; NoAction; }
        default_action = NoAction();
        size = RED_ENTRIES;
    }

    apply {
        if (hdr.ipv4.isValid()
                && (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            if (ecn_threshold.apply().hit) {
                mark = (bit<32>)sm.enq_qdepth >= k;
            } else if (ecn_red.apply().hit && p != 0) {
                bit<32> draw;
                random(draw, 0, MARK_SCALE - 1);
                mark = draw < p;
            }
            if (mark) {
                hdr.ipv4.ecn = ECN_CE;
                ce_marks.count((bit<32>)sm.egress_port);
            }
        }
    }
}

// In-band telemetry: keep the path maximum, add this hop's record
// (PushHopRecord / PushIntRecord, shared with the Tofino program).
control InbandTelemetry(inout headers_t hdr,
                        in local_meta_t meta,
                        in standard_metadata_t sm,
                        in int_values_t w) {
    PushHopRecord() push;
    PushIntRecord() push_int;
    apply {
        if (hdr.shim.isValid() && (meta.shim_ok || meta.shim_int_ok)) {
            bit<32> depth = (bit<32>)sm.enq_qdepth;
            if (depth > hdr.shim.max_qdepth) {
                hdr.shim.max_qdepth = depth;
            }
            hop_values_t v;
            v.switch_id = meta.switch_id;
            v.egress_port = (bit<16>)sm.egress_port;
            v.enq_qdepth = depth;
            v.deq_timedelta_us = sm.deq_timedelta;
            v.egress_ts_us = (bit<64>)sm.egress_global_timestamp;
            bit<8> units = DEPTH_UNIT_PACKETS | (meta.time_unit << 4);
            if (meta.shim_int_ok) {
                push_int.apply(hdr.shim, hdr.new_int_hop, hdr.ipv4, hdr.udp, units, v, w);
            } else {
                push.apply(hdr.shim, hdr.new_hop, hdr.ipv4, hdr.udp, units, v);
            }
        }
    }
}


// Postcards: 1-in-N packets are cloned egress-to-egress to the collector
// port; the clone is rewritten into a queue report (BuildPostcard, shared
// with the Tofino program) and truncated.
control Postcards(inout headers_t hdr,
                  inout local_meta_t meta,
                  inout standard_metadata_t sm) {
    register<bit<32>>(1) postcard_sample_count;
    BuildPostcard() build;
    bit<32>     one_in_n = 0;
    mac_addr_t  collector_mac = 0;
    ipv4_addr_t switch_ip = 0;
    ipv4_addr_t collector_ip = 0;
    bit<16>     collector_port = 0;

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
    }

    action sample() {
        meta.pc_ingress_port = (bit<16>)sm.ingress_port;
        meta.pc_egress_port = (bit<16>)sm.egress_port;
        meta.pc_enq_qdepth = (bit<32>)sm.enq_qdepth;
        meta.pc_deq_qdepth = (bit<32>)sm.deq_qdepth;
        meta.pc_deq_timedelta = sm.deq_timedelta;
        meta.pc_ingress_ts = (bit<64>)sm.ingress_global_timestamp;
        meta.pc_egress_ts = (bit<64>)sm.egress_global_timestamp;
        meta.pc_pkt_len = sm.packet_length;
        clone_preserving_field_list(CloneType.E2E, POSTCARD_SESSION, POSTCARD_FIELD_LIST);
    }

    apply {
        postcard_config.apply();
        if (sm.instance_type == INSTANCE_E2E_CLONE) {
            postcard_report_t r;
            r.units = POSTCARD_UNITS_V1MODEL | (meta.time_unit << 4);
            r.switch_id = meta.switch_id;
            r.ingress_port = meta.pc_ingress_port;
            r.egress_port = meta.pc_egress_port;
            r.enq_qdepth = meta.pc_enq_qdepth;
            r.deq_qdepth = meta.pc_deq_qdepth;
            r.deq_timedelta = meta.pc_deq_timedelta;
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
            // The report replaces the packet it describes.
            hdr.ipv4.setInvalid();
            hdr.tcp.setInvalid();
            hdr.udp.setInvalid();
            hdr.shim.setInvalid();
            hdr.hops.pop_front(P4CC_MAX_HOPS);
            truncate(POSTCARD_FRAME_LEN);
        } else if (one_in_n != 0 && !meta.dropped) {
            bit<32> seen;
            postcard_sample_count.read(seen, 0);
            seen = seen + 1;
            if (seen >= one_in_n) {
                seen = 0;
                sample();
            }
            postcard_sample_count.write(0, seen);
        }
    }
}

control CcEgress(inout headers_t hdr,
                 inout local_meta_t meta,
                 inout standard_metadata_t sm) {
    SwitchConfig() config;
    LinkLoss() loss;
    EcnMarking() ecn;
    InbandTelemetry() telemetry;
    QueueOut() queue_out;
    PortLoad() load;
    Postcards() postcards;
    PortCounters() tx;

    apply {
        config.apply(meta);
        if (sm.instance_type == INSTANCE_NORMAL) {
            bit<32> qlen_bytes;
            queue_out.apply(qlen_bytes, sm);
            loss.apply(meta, sm);
            if (!meta.dropped) {
                ecn.apply(hdr, sm);
                // Every packet counts in its port's load; a version-2
                // record reports it.
                int_values_t w;
                load.apply(w, hdr.shim.isValid() && meta.shim_int_ok
                              && hdr.shim.hop_count < P4CC_MAX_HOPS_B, qlen_bytes, sm);
                telemetry.apply(hdr, meta, sm, w);
            }
        }
        postcards.apply(hdr, meta, sm);
        if (!meta.dropped) {
            tx.apply(sm.egress_port);
        }
    }
}

/* ------------------------------------------------------------------ */

control CcComputeChecksum(inout headers_t hdr, inout local_meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.pc_ipv4.isValid(),
            { hdr.pc_ipv4.version, hdr.pc_ipv4.ihl, hdr.pc_ipv4.dscp,
              hdr.pc_ipv4.ecn, hdr.pc_ipv4.total_len,
              hdr.pc_ipv4.identification, hdr.pc_ipv4.flags,
              hdr.pc_ipv4.frag_offset, hdr.pc_ipv4.ttl,
              hdr.pc_ipv4.protocol, hdr.pc_ipv4.src_addr,
              hdr.pc_ipv4.dst_addr },
            hdr.pc_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control CcDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.pc_ipv4);
        packet.emit(hdr.pc_udp);
        packet.emit(hdr.postcard);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.shim);
        packet.emit(hdr.new_hop);
        packet.emit(hdr.hops);
        packet.emit(hdr.new_int_hop);
    }
}

V1Switch(CcParser(),
         CcVerifyChecksum(),
         CcIngress(),
         CcEgress(),
         CcComputeChecksum(),
         CcDeparser()) main;
