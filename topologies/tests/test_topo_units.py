import pytest

from p4cc_topo.units import (UnitError, format_delay, format_loss, format_rate, parse_delay,
                             parse_loss, parse_pkts, parse_rate)


@pytest.mark.parametrize("text,bps", [
    ("100Mbps", 100_000_000),
    ("1Gbps", 1_000_000_000),
    ("1.5 Gbps", 1_500_000_000),
    ("42Mbps", 42_000_000),
    ("64kbps", 64_000),
    ("64Kbps", 64_000),
    ("15Mbps", 15_000_000),
    ("100000000", 100_000_000),
    (100_000_000, 100_000_000),
    (1e9, 1_000_000_000),
    ("2.4Gbps", 2_400_000_000),
])
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text,fragment", [
    ("100Mbit", 'did you mean "100Mbps"'),
    ("10 mbit", 'did you mean "10Mbps"'),
    ("100MBps", "bytes per second are not accepted"),
    ("100mbps", 'did you mean "100Mbps"'),
    ("fast", "not a number"),
    ("0Mbps", "must be positive"),
    (-5, "must be positive"),
    (True, "must be a number"),
    ("1.5bps", "whole number"),
])
def test_bad_rates(text, fragment):
    with pytest.raises(UnitError) as e:
        parse_rate(text)
    assert fragment in str(e.value)


@pytest.mark.parametrize("text,us", [
    ("500us", 500), ("10ms", 10_000), ("1s", 1_000_000), ("250µs", 250),
    ("2000ns", 2), (250, 250), ("0", 0), ("0.5ms", 500), ("400ms", 400_000),
])
def test_delays(text, us):
    assert parse_delay(text) == us


@pytest.mark.parametrize("text", ["2.5us", "3x", "-1ms", "10 min", "fast"])
def test_bad_delays(text):
    with pytest.raises(UnitError):
        parse_delay(text)


@pytest.mark.parametrize("text,p", [("2%", 0.02), ("0.5%", 0.005), (0.02, 0.02), ("0", 0.0),
                                    ("100%", 1.0), (0, 0.0), ("0.06", 0.06)])
def test_loss(text, p):
    assert parse_loss(text) == pytest.approx(p)


@pytest.mark.parametrize("text", ["150%", "-1%", 2, "2 percent", "1.5"])
def test_bad_loss(text):
    with pytest.raises(UnitError):
        parse_loss(text)


def test_pkts():
    assert parse_pkts(120) == 120
    assert parse_pkts("120pkts") == 120
    assert parse_pkts("120") == 120
    with pytest.raises(UnitError):
        parse_pkts(1.5)
    with pytest.raises(UnitError):
        parse_pkts("10KB")
    with pytest.raises(UnitError):
        parse_pkts(0, minimum=1)


def test_formats_round_trip():
    for bps in (100_000_000, 1_000_000_000, 42_000_000, 15_000_000, 1_500_000_000, 64_000, 7):
        assert parse_rate(format_rate(bps)) == bps
    for us in (0, 10, 250, 10_000, 400_000, 1500):
        assert parse_delay(format_delay(us)) == us
    for p in (0.0, 0.01, 0.06, 0.005):
        assert parse_loss(format_loss(p)) == pytest.approx(p)
