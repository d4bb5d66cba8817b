"""The fidelity monitor's one-line summary: a lag seen at many places reads
as one entry per bound (how many places, the worst and where)."""
from p4cc_exp.fidelity import grouped, summary_line
from p4cc_exp.verdicts import QUEUE, RATE

Q = "120 µs (1 packet at 100 Mb/s)"
R = "1200 µs (10 packets at 100 Mb/s)"


def test_one_lateness_at_many_places_is_one_entry_with_the_worst():
    v = [f"s1's link emulator port {p}: p99 release slip {us} µs > {Q}"
         for p, us in ((1, 300), (2, 7864), (257, 983))]
    v += ["sender h1: p99 wake-up lateness 181 µs > " + Q,
          "p99 departure slip 4719 µs > " + Q,
          "s1 port 2: 40 of 1000 arriving frames (4.0%) dropped by the full receive ring"]
    out = grouped(v)
    assert f"p99 release slip > {Q} at 3 places, worst 7864 µs (s1's link emulator port 2)" in out
    # One place: as measured.
    assert f"sender h1: p99 wake-up lateness 181 µs > {Q}" in out
    # Not a lateness at a place: unchanged.
    assert f"p99 departure slip 4719 µs > {Q}" in out
    assert v[-1] in out
    assert len(out) == 4


def test_the_summary_groups_each_bound_apart():
    v = [f"s{s}'s link emulator port {p}: p99 release slip {us} µs > {b}"
         for s, p, us, b in ((1, 1, 1300, Q), (1, 1, 1300, R), (2, 5, 900, Q))]
    line = summary_line({"violations": {QUEUE: v[::2], RATE: v[1:]}})
    assert line == (f"p99 release slip > {Q} at 2 places, worst 1300 µs (s1's link emulator port 1); "
                    f"s1's link emulator port 1: p99 release slip 1300 µs > {R}")
    assert summary_line({"violations": {QUEUE: [], RATE: []}}) == "within bounds"
