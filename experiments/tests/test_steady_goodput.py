"""A long flow's throughput leaves out the warm-up, as the experiments'
`warmup` parameter says: goodput over whole tput.csv bins inside the arm's
measurement window (the two counter readings), not over the flow's
lifetime with its start-up."""
import json

from p4cc_exp import metrics
from p4cc_exp.results import arm_result
from p4cc_topo.plan import ArmPlan

S = 1_000_000_000  # ns
T0 = 1_700_000_000 * S
BIN = 10_000_000  # 10 ms bins, as p4cc-host writes them

FLOWS = ("flow_id,workload,round,datapath,cc,src,dst,size_bytes,start_unix_ns,end_unix_ns,fct_ns,"
         "bytes_acked,status\n")


def write_sender(d, flow_id, start, end, mbps_at):
    """A sender folder whose flow sends mbps_at(t since T0 in s) per bin."""
    d.mkdir(parents=True)
    rows, total = [], 0
    for t in range(start, end, BIN):
        b = int(mbps_at((t - T0) / S) * 1e6 / 8 * BIN / S)
        total += b
        rows.append(f"{flow_id},{t},{BIN},{b},{b * 8 / (BIN / S) / 1e6:.3f}\n")
    (d / "tput.csv").write_text("flow_id,bin_start_unix_ns,bin_ns,bytes,mbps\n" + "".join(rows))
    (d / "flows.csv").write_text(FLOWS + f"{flow_id},long,0,udp,pcc,a,b,,{start},{end},{end - start},"
                                 f"{total},stopped\n")


def result(tmp_path, window):
    r = {"outdir": str(tmp_path), "senders": ["h1", "h2"], "window_unix_ns": window}
    # h1 climbs for its first 3 s (10 Mb/s), then holds 90; h2 joins at 4 s at 40.
    write_sender(tmp_path / "h1", 1, T0, T0 + 10 * S, lambda t: 10 if t < 3 else 90)
    write_sender(tmp_path / "h2", 2, T0 + 4 * S, T0 + 10 * S, lambda t: 40)
    return r


def test_goodput_is_counted_after_the_warm_up(tmp_path):
    r = result(tmp_path, (T0 + 3 * S, T0 + 9 * S))
    h1, h2 = metrics.steady_flow_mbps(r)
    assert abs(h1 - 90) < 0.01
    # a flow that joins inside the window counts from its own start
    assert abs(h2 - 40) < 0.01
    # over its lifetime h1 would read (3·10 + 7·90) / 10 = 66
    assert abs(metrics.flow_mbps(metrics.series.flows([tmp_path / "h1"])[0]) - 66) < 0.01


def test_without_counter_readings_the_lifetime_goodput_stays(tmp_path):
    r = result(tmp_path, None)
    h1, h2 = metrics.steady_flow_mbps(r)
    assert abs(h1 - 66) < 0.01 and abs(h2 - 40) < 0.01


def test_the_window_comes_from_the_two_counter_readings(tmp_path):
    (tmp_path / "measure.json").write_text(json.dumps({
        "t0_unix_ns": T0, "window_s": 6.0,
        "reads": {"start": {"unix_ns": T0 + 3 * S, "ports": {}},
                  "end": {"unix_ns": T0 + 9 * S, "ports": {}}}}))
    arm = ArmPlan(name="a", label="a", topology={}, switches={}, agents=(), duration_s=10, warmup_s=3)
    assert arm_result(tmp_path, arm)["window_unix_ns"] == (T0 + 3 * S, T0 + 9 * S)


def test_wire_readings_carry_their_own_instants(tmp_path):
    """Real time stamps each wire reading with the middle of its admin
    request; the window (and so the utilisation) is between those, not
    between the stamps taken before the P4Runtime reads that precede them."""
    from p4cc_exp.registry import get
    from p4cc_exp.runner import make_plan
    arm = make_plan(get("dctcp-queue"), []).arms[0]
    key = arm.measure.queue.key()

    def port(wire_bytes, at):
        return {key: {"tx_bytes": 0, "ce_marks": 0, "wire_tx_bytes": wire_bytes, "wire_unix_ns": at}}
    # 12.5 MB in 1.000 s between the wire readings: 100 Mb/s exactly; the
    # stamps before the P4Runtime reads are 0.990 s apart (101 % if used).
    (tmp_path / "measure.json").write_text(json.dumps({
        "t0_unix_ns": T0, "window_s": 0.990,
        "reads": {"start": {"unix_ns": T0 + 3 * S, "ports": port(0, T0 + 3 * S + 2_000_000)},
                  "end": {"unix_ns": T0 + 3 * S + 990_000_000, "ports": port(12_500_000, T0 + 4 * S + 2_000_000)}}}))
    r = arm_result(tmp_path, arm)
    assert r["window_s"] == 1.0
    assert metrics.utilisation(r, 100e6) == 1.0
