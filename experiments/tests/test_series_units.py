"""Queue reports in the unit the switch counted: the analysis reads
packets from bmv2/the embedded target and 80-byte cells from a Tofino
(the collector's depth_unit column) alike."""
from p4cc_exp import series

HEADER = ("recv_unix_ns,switch_id,egress_port,enq_qdepth,deq_qdepth,qdelay_us,egress_ts_us,"
          "src,dst,proto,sport,dport,ecn,len,depth_unit\n")


def test_cells_become_mtu_packets(tmp_path):
    f = tmp_path / "queue.csv"
    f.write_text(HEADER
                 + "2000000000,7,140,380,190,1234,5,10.0.1.1,10.0.2.2,6,1,2,3,1500,cells80\n"
                 + "1000000000,7,140,20,10,50,4,10.0.1.1,10.0.2.2,6,1,2,2,1500,packets\n")
    a, b = series.postcards(f)
    assert (a["depth"], a["deq_depth"], a["depth_unit"]) == (20, 10, "packets")
    # 1500-byte packets take 19 cells: 380 cells = 20 packets, as K converts.
    assert (b["depth"], b["deq_depth"], b["depth_raw"], b["depth_unit"]) == (20, 10, 380, "cells80")
    assert series.postcards(f, mtu=800)[1]["depth"] == 38


def test_files_without_the_unit_column_are_packets(tmp_path):
    f = tmp_path / "queue.csv"
    f.write_text(HEADER.replace(",depth_unit", "")
                 + "1000000000,7,2,17,16,5,4,10.0.1.1,10.0.2.2,6,1,2,2,1500\n")
    (c,) = series.postcards(f)
    assert (c["depth"], c["depth_unit"]) == (17, "packets")
