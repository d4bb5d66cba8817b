#ifndef P4CC_UDP_P4
#define P4CC_UDP_P4

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

#endif
