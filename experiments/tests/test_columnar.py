"""Series in Parquet: the conversion keeps every value (and the CSV's text
for the readers), a results folder analyses to the same summary.json from
CSV as from Parquet, --keep leaves what it says, and a run the disk cannot
hold is refused before it writes anything."""
import json
import shutil

import pytest

from p4cc_exp import columnar, diskest, series
from p4cc_exp.registry import get
from p4cc_exp.runner import RunError, analyse, make_plan, run
from p4cc_exp.simexec import find_sim

FLOWS = ("flow_id,workload,size_bytes,start_unix_ns,fct_ns,status,reason,mean_rtt_ns,seed,ratio\n"
         "1,poisson,1500,1700000000000000000,120000,complete,,,18446744073709551615,0.5\n"
         "2,poisson,,1700000000000100000,0,stopped,timeout,99,7,1e-3\n")
CARDS = ("recv_unix_ns,switch_id,egress_port,enq_qdepth,deq_qdepth,qdelay_us,egress_ts_us,src,"
         "dst,proto,sport,dport,ecn,len,depth_unit\n"
         "1700000000000114720,1,11,3,0,0,114,10.0.0.1,10.0.0.250,17,40000,7360,2,1434,packets\n"
         "1700000000000231040,1,11,0,18,116,231,10.0.0.2,10.0.0.250,17,40000,7360,2,1434,packets\n"
         "1700000000000331040,1,12,5,1")  # the torn last line of a killed collector


def num(v):
    try:
        return float(v)
    except ValueError:
        return v


def test_round_trip_keeps_every_value(tmp_path):
    f = tmp_path / "flows.csv"
    f.write_text(FLOWS)
    before = series.rows(f)
    out = columnar.convert(f)
    assert out.suffix == ".parquet" and not f.exists()
    # asked for the CSV, read from Parquet: the same rows, as text (a float
    # as its shortest decimal: "1e-3" comes back "0.001", the same number)
    assert [{k: num(v) for k, v in r.items()} for r in series.rows(f)] == \
        [{k: num(v) for k, v in r.items()} for r in before]
    assert series.rows(f)[0] == before[0]
    import pyarrow.parquet as pq
    t = pq.read_table(out)
    types = {n: str(t.schema.field(n).type) for n in t.column_names}
    assert t.column_names == FLOWS.split("\n")[0].split(",")
    assert types["flow_id"] == "int64" and types["ratio"] == "double"
    assert types["seed"] == "string"        # a u64 beyond int64 keeps every digit
    assert types["status"] == "string" and types["size_bytes"] == "int64"
    assert t.column("size_bytes").to_pylist() == [1500, None]


def test_postcards_the_same_from_either_form(tmp_path):
    f = tmp_path / "queue.csv"
    f.write_text(CARDS)
    before = series.postcards(f, 11, 1)
    assert len(before) == 2
    columnar.convert(f)
    assert series.postcards(f, 11, 1) == before
    assert series.postcards(tmp_path / "nothing.csv") == []


def test_logs_stay_text_and_csv_can_be_kept(tmp_path, monkeypatch):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x.csv").write_text("a\n1\n")
    (tmp_path / "h1").mkdir()
    (tmp_path / "h1" / "tput.csv").write_text("flow_id,bin_start_unix_ns,bin_ns,bytes,mbps\n1,2,3,4,5.5\n")
    monkeypatch.setenv("P4CC_SERIES", "csv")
    assert columnar.convert_folder(tmp_path) == []
    monkeypatch.delenv("P4CC_SERIES")
    assert [p.name for p in columnar.convert_folder(tmp_path)] == ["tput.parquet"]
    assert (tmp_path / "logs" / "x.csv").exists()


@pytest.fixture(scope="module")
def sim_bin():
    try:
        return find_sim()
    except Exception as e:
        pytest.fail(f"{e} (make setup builds it)")


def _numbers(folder):
    s = json.loads((folder / "summary.json").read_text())
    return s["summary"], [(v["name"], v["measured"], v["status"]) for v in s["verdicts"]]


def test_same_summary_from_csv_and_from_parquet(tmp_path, sim_bin, monkeypatch):
    monkeypatch.setenv("P4CC_SERIES", "csv")
    a = tmp_path / "csv"
    run(get("dctcp-queue"), target="sim", out=str(a),
        overrides=["duration=1.5", "warmup=0.3", "datapaths=user"])
    monkeypatch.delenv("P4CC_SERIES")
    assert list(a.rglob("queue.csv")) and not list(a.rglob("*.parquet"))
    b = tmp_path / "parquet"
    shutil.copytree(a, b)
    plan = json.loads((b / "plan.json").read_text())
    for arm in plan["arms"]:
        columnar.convert_folder(b / arm["name"])
    assert not [p for p in b.rglob("*.csv") if "logs" not in p.parts]
    analyse(a)
    analyse(b)
    assert _numbers(a) == _numbers(b)
    # and a run that writes Parquet itself gives those numbers too
    c = tmp_path / "run"
    run(get("dctcp-queue"), target="sim", out=str(c),
        overrides=["duration=1.5", "warmup=0.3", "datapaths=user"])
    assert list(c.rglob("queue.parquet")) and not list(c.rglob("queue.csv"))
    assert _numbers(c) == _numbers(a)


def test_keep_summary_leaves_the_numbers_only(tmp_path, sim_bin):
    run(get("dctcp-theory"), target="sim", out=str(tmp_path), keep="summary",
        overrides=["ns=2", "duration=0.5", "warmup=0.1"])
    names = {p.name for p in tmp_path.iterdir()}
    assert names - {p for p in names if p.endswith(".png")} == {
        "summary.json", "report.html", "plan.json", "params.json"}


def test_a_run_the_disk_cannot_hold_is_refused(tmp_path, monkeypatch):
    plan = make_plan(get("dctcp-theory"), ["ns=2", "duration=60"])
    est = diskest.estimate(plan)
    assert est.peak > est.kept > 0
    monkeypatch.setattr(diskest, "free_bytes", lambda folder: est.peak / 2)
    out = tmp_path / "never"
    with pytest.raises(RunError, match="not enough disk") as e:
        run(plan=plan, target="sim", out=str(out))
    assert len(str(e.value).splitlines()) == 1
    assert not out.exists()      # refused before anything was written


def test_the_estimate_follows_the_plan():
    exp = get("dctcp-theory")
    short = diskest.estimate(make_plan(exp, ["ns=2", "duration=10"]))
    long = diskest.estimate(make_plan(exp, ["ns=2", "duration=40"]))
    sampled = diskest.estimate(make_plan(exp, ["ns=2", "duration=40", "sample=9"]))
    assert long.rows > 3 * short.rows and sampled.rows < long.rows
    assert diskest.estimate(make_plan(exp, ["ns=2"]), keep="summary").kept < short.kept


def test_pcc_arms_count_their_monitor_intervals(tmp_path, sim_bin):
    import pyarrow.parquet as pq
    exp = get("pcc-lossy")
    plan = make_plan(exp, ["protocols=pcc-vivace", "losses=0", "duration=2", "warmup=0.5"])
    rows = diskest._arm_rows(plan.arms[0])
    cubic = make_plan(exp, ["protocols=cubic", "losses=0", "duration=2", "warmup=0.5"])
    assert rows["mi"] > 0 and diskest._arm_rows(cubic.arms[0])["mi"] == 0
    run(plan=plan, target="sim", out=str(tmp_path))
    written = pq.read_metadata(next(tmp_path.rglob("mi.parquet"))).num_rows
    assert 0 < written <= rows["mi"]
    # The report draws each PCC arm's intervals; an arm without any, none.
    assert (tmp_path / "pcc_rates.png").is_file()
    from p4cc_exp import pccplot
    (tmp_path / "empty" / "h1").mkdir(parents=True)
    results = {"cubic": {"outdir": str(tmp_path / "empty"), "senders": ["h1"]}}
    assert pccplot.mi_rates(results, {"cubic": {}}, 100.0, tmp_path, "none.png") == []
