#ifndef P4CC_IPV4_P4
#define P4CC_IPV4_P4

typedef bit<32> ipv4_addr_t;

// The TOS byte is split so ECN can be matched and rewritten alone.
header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

#endif
