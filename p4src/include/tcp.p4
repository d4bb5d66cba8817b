#ifndef P4CC_TCP_P4
#define P4CC_TCP_P4

// Fixed 20-byte part only; options stay in the payload, untouched.
header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

#endif
