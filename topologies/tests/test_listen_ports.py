"""Ports chosen for the switches' servers stay out of the kernel's ephemeral
range, where any outgoing connection could take them before the switch binds."""
import socket

from p4cc_topo import listen_ports


def test_ports_are_below_the_ephemeral_range_and_bindable():
    lo, _ = listen_ports.ephemeral_range()
    got = [listen_ports.free_tcp_port() for _ in range(50)]
    assert len(set(got)) == 50, "never the same port twice in one process"
    for port in got:
        assert listen_ports.LOWEST <= port < lo
    with socket.socket() as s:
        s.bind(("127.0.0.1", got[-1]))


def test_a_narrow_range_falls_back_above_it(tmp_path, monkeypatch):
    f = tmp_path / "range"
    f.write_text("10500\t60999\n")
    monkeypatch.setattr(listen_ports, "EPHEMERAL_RANGE_FILE", str(f))
    assert listen_ports.free_tcp_port() > 60999


def test_a_taken_port_is_skipped(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        busy = taken.getsockname()[1]
        picks = iter([busy, busy, 12345])
        monkeypatch.setattr(listen_ports.random.SystemRandom, "choice", lambda self, pool: next(picks))
        monkeypatch.setattr(listen_ports, "_given", set())
        assert listen_ports.free_tcp_port() == 12345
