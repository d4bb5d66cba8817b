"""Unit tests of the runner's building blocks (no network needed)."""
import json
import math

import pytest

from p4cc_exp.params import Param, ParamError, fraction, rate_bps, resolve, seconds
from p4cc_exp.report import write_report
from p4cc_exp.stats import jain_index, percentile
from p4cc_exp.theory import dctcp_sawtooth


def test_units():
    assert rate_bps("100Mbps") == 100_000_000
    assert rate_bps("1gbit") == 1_000_000_000
    assert seconds("500us") == pytest.approx(500e-6)
    assert seconds("10ms") == pytest.approx(0.01)
    assert fraction("2%") == pytest.approx(0.02)
    with pytest.raises(ParamError):
        rate_bps("fast")
    with pytest.raises(ParamError):
        seconds("3 parsecs")
    with pytest.raises(ParamError):
        fraction("150%")


def test_resolve_overrides_and_errors():
    ps = [Param("rate", "100Mbps", "", rate_bps, 1e6, 1e9), Param("k", 20, "", int, 0, 100)]
    assert resolve(ps, []) == {"rate": 100_000_000, "k": 20}
    assert resolve(ps, ["k=30", "rate=1Gbps"]) == {"rate": 1_000_000_000, "k": 30}
    with pytest.raises(ParamError, match="unknown parameter 'kk'"):
        resolve(ps, ["kk=1"])
    with pytest.raises(ParamError, match="within"):
        resolve(ps, ["rate=10Gbps"])
    with pytest.raises(ParamError, match="name=value"):
        resolve(ps, ["k"])


def test_percentile_and_jain():
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile([0, 10], 95) == pytest.approx(9.5)
    assert math.isnan(percentile([], 50))
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([10, 0, 0, 0]) == pytest.approx(0.25)


def test_dctcp_theory_matches_paper_formulas():
    # N=2, K=20, 100 Mbps, 500 µs, 1500 B: C·RTT = 4.17 packets.
    t = dctcp_sawtooth(2, 20, 100e6, 500e-6)
    assert t["bdp_pkts"] == pytest.approx(4.1667, rel=1e-3)
    assert t["q_max"] == 22
    assert t["amplitude"] == pytest.approx(0.5 * math.sqrt(4 * 24.1667), rel=1e-4)


def test_report_is_self_contained(tmp_path):
    png = tmp_path / "queue.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    from p4cc_exp.verdicts import judge, verdict
    vs = judge([verdict("queue near K", 19.0, True, "K = 20", "±1", "paper Fig. 1", arms=["a"]),
                verdict("link busy", 0.5, True, "100 %", "≥ 95 %", "paper", arms=["b"])],
               {"a": {"ok": {"queue": True, "rate": True}},
                "b": {"ok": {"queue": True, "rate": False},
                      "violations": {"rate": ["p99 departure slip 900 µs > 120 µs"]}}})
    facts = {"commit": "abc", "time": "real time", "fidelity": {"b": "slip too large"}}
    path = write_report(tmp_path, "T", "d", facts, {"k": 20}, {"a": {"x": 1.5}}, [png], vs)
    text = path.read_text()
    assert "data:image/png;base64," in text and "src='queue.png'" not in text
    assert "1 pass, 0 fail, 1 void" in text and "p99 departure slip 900 µs" in text
    assert "<td class='pass'>pass</td>" in text and "paper Fig. 1" in text
