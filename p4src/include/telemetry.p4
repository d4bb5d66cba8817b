#ifndef P4CC_TELEMETRY_P4
#define P4CC_TELEMETRY_P4

// In-band shim, first bytes of the payload of UDP datagrams sent to
// P4CC_SHIM_UDP_PORT. docs/wire-format.md describes it byte by byte.
header p4cc_shim_h {
    bit<8>  version;
    bit<8>  hop_count;    // hop records that follow, newest first
    bit<8>  flags;        // SHIM_FLAG_OVERFLOW: a hop found the stack full
    bit<8>  depth_unit;   // DEPTH_UNIT_* of every depth in this packet
    bit<32> max_qdepth;   // path maximum of enq_qdepth
}

// One record per switch, pushed on top of the stack in egress.
header p4cc_hop_h {
    bit<16> switch_id;
    bit<16> egress_port;
    bit<32> enq_qdepth;
    bit<32> deq_timedelta_us;
    bit<64> egress_ts_us;
}

// One record per switch in a version-2 shim (INT for congestion control):
// the version-1 record, then what HPCC and PowerTCP read of the egress
// port. docs/wire-format.md has every field's unit.
header p4cc_int_hop_h {
    bit<16> switch_id;
    bit<16> egress_port;
    bit<32> enq_qdepth;       // depth unit of the shim
    bit<32> deq_timedelta;    // time unit of the shim
    bit<64> egress_ts;        // time unit of the shim
    bit<32> qlen_bytes;       // bytes queued at the port as the packet left
    bit<32> tx_bytes;         // the port's transmitted bytes, wrapping
    bit<32> rate_kbps;        // the port's line rate as loaded, kb/s (0: not loaded)
}

// Out-of-band queue report (postcard), carried in UDP to the collector.
header p4cc_postcard_h {
    bit<8>  version;
    bit<8>  units;        // POSTCARD_UNITS_*: depth unit | time unit << 4
    bit<16> switch_id;
    bit<16> ingress_port;
    bit<16> egress_port;
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;   // in the time unit of `units`
    bit<64> ingress_ts;
    bit<64> egress_ts;
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<8>  ecn;
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> pkt_len;
}

#endif
