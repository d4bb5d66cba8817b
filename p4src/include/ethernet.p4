#ifndef P4CC_ETHERNET_P4
#define P4CC_ETHERNET_P4

typedef bit<48> mac_addr_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

#endif
