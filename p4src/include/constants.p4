// p4cc shared constants. Every number the programs depend on lives here so
// the docs (docs/wire-format.md, docs/data-plane.md) have one place to cite.
#ifndef P4CC_CONSTANTS_P4
#define P4CC_CONSTANTS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;

// ECN codepoints (RFC 3168).
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1    = 1;
const bit<2> ECN_ECT0    = 2;
const bit<2> ECN_CE      = 3;

// Telemetry shim: UDP destination port that announces it, its version, and
// how many hop records a packet may carry before the stack is full.
const bit<16> P4CC_SHIM_UDP_PORT = 7360;
const bit<8>  P4CC_SHIM_VERSION  = 1;
// Version 2: the same fixed part, and hop records for INT-based congestion
// control (HPCC, PowerTCP): the version-1 fields plus the queue in bytes,
// the port's transmitted bytes and its line rate (p4cc_int_hop_h).
const bit<8>  P4CC_SHIM_VERSION_INT = 2;
#define P4CC_MAX_HOPS 4
const bit<8>  P4CC_MAX_HOPS_B    = P4CC_MAX_HOPS;
const bit<8>  SHIM_FLAG_OVERFLOW = 0x01;
const bit<8>  SHIM_LEN_BYTES     = 8;
const bit<16> HOP_LEN_BYTES      = 20;
const bit<16> INT_HOP_LEN_BYTES  = 32;

// Unit of every queue depth this target writes (shim depth_unit byte).
const bit<8> DEPTH_UNIT_PACKETS = 0;
const bit<8> DEPTH_UNIT_CELLS80 = 1;

// Unit of the queue delay and timestamps of a postcard.
const bit<8> TIME_UNIT_US = 0;
const bit<8> TIME_UNIT_NS = 1;
// A postcard's units byte: depth unit in the low nibble, time unit in the
// high nibble. v1model targets count packets and µs; Tofino 80-byte cells
// and ns.
const bit<8> POSTCARD_UNITS_V1MODEL = 0x00;
const bit<8> POSTCARD_UNITS_TOFINO  = 0x11;

// Postcards: the clone session the controller binds to the collector port,
// the field list preserved into the clone, and the postcard's layout.
const bit<32> POSTCARD_SESSION    = 100;
const bit<8>  POSTCARD_FIELD_LIST = 1;
const bit<8>  POSTCARD_VERSION    = 1;
const bit<16> POSTCARD_UDP_SRC    = 7361;
const bit<8>  POSTCARD_IP_TTL     = 64;
// Ethernet 14 + IPv4 20 + UDP 8 + postcard 54.
const bit<16> POSTCARD_LEN_BYTES  = 54;
const bit<32> POSTCARD_FRAME_LEN  = 96;
// What a postcard needs of the packet it reports on: Ethernet 14 + IPv4 20
// + the first 4 bytes of TCP/UDP (the ports). On Tofino the mirror session
// truncates the copy to the mirror header plus these bytes.
const bit<16> POSTCARD_REPORTED_BYTES = 38;

// v1model instance_type values (bmv2 simple_switch).
const bit<32> INSTANCE_NORMAL    = 0;
const bit<32> INSTANCE_E2E_CLONE = 2;

// Random loss: a drop happens when a 16-bit uniform draw is below the
// port's threshold, so threshold = round(p * 65536); 65536 drops all.
const bit<32> LOSS_SCALE = 65536;

// Per-port arrays (counters) are indexed by the 9-bit v1model port.
const bit<32> NUM_PORTS = 512;

// ECMP: a route to a group of next hops hashes a packet's 5-tuple to one
// of ECMP_BUCKETS buckets; the controller maps each of a group's buckets to
// a member, so that removing a member moves only the flows of its buckets
// (resilient hashing). docs/data-plane.md, "ECMP".
#define ECMP_BUCKETS_N 64
const bit<32> ECMP_BUCKETS = ECMP_BUCKETS_N;
const bit<32> ECMP_GROUPS  = 256;

// The largest frame with a 1500-byte MTU (Ethernet header, no FCS): what a
// queued packet can hold at most, in bytes.
const bit<32> MAX_FRAME_BYTES = 1514;

// RED marking (DCQCN's switch): a port's profile is one entry per queue
// depth range with the probability of marking there, p = mark_16 / 65536
// (the same scale as the loss threshold); the controller spreads
// Kmin..Kmax, Pmax over the ranges.
const bit<32> MARK_SCALE = 65536;
// The v1model ECN tables a port may have: a step at K, or a RED profile.
const bit<32> RED_ENTRIES = 4096;

#endif
