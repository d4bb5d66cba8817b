"""The one place a plan's agent becomes a ``p4cc-host`` command line
(docs/hosts.md has every subcommand)."""
from __future__ import annotations

from pathlib import Path

from p4cc_topo.plan import COLLECTOR_UDP_PORT, Agent, Workload

#: Ports the receivers listen on (p4cc-host's defaults).
UDP_PORT = 7360
TCP_PORT = 7361


def _num(x: float) -> str:
    return f"{x:.9g}"


def _sizes(w: Workload) -> list[str]:
    s = w.sizes
    if s.cdf is not None:
        return ["--cdf", s.cdf]
    if s.fixed_bytes is not None:
        return ["--fixed-bytes", str(s.fixed_bytes)]
    out = ["--pareto-shape", _num(s.pareto_shape), "--mean-bytes", _num(s.mean_bytes)]
    return out + (["--max-bytes", str(s.max_bytes)] if s.max_bytes else [])


def workload_args(w: Workload, ip, me: str | None = None) -> list[str]:
    """The workload subcommand of `p4cc-host gen`; ``ip`` maps a host to
    its address, ``me`` is the sender's host (an incast mix needs it).
    Times are seconds from the shared start."""
    if w.kind == "long":
        return ["long"] + [a for f in w.flows
                           for a in ("--flow", f"{ip(f.dst)},{_num(f.start_s)},{_num(f.stop_s)}")]
    dsts = [a for d in w.dsts for a in ("--dst", ip(d))]
    if w.kind == "poisson":
        out = ["poisson", *dsts, "--load", _num(w.load), "--link-mbps", _num(w.link_bps / 1e6),
               *_sizes(w)]
        if w.count is not None:
            out += ["--flows", str(w.count)]
        if w.duration_s is not None:
            out += ["--duration-s", _num(w.duration_s)]
        return out
    if w.kind == "incast-mix":
        out = ["incast-mix", *[a for d in w.dsts for a in ("--member", ip(d))], "--me", ip(me),
               "--fan-in", str(w.fan_in), "--size", str(w.bytes), "--share", _num(w.load),
               "--link-mbps", _num(w.link_bps / 1e6), "--schedule-seed", str(w.schedule_seed)]
        if w.count is not None:
            out += ["--events", str(w.count)]
        if w.duration_s is not None:
            out += ["--duration-s", _num(w.duration_s)]
        return out
    if w.kind == "closed":
        out = ["closed", *dsts, "--concurrency", str(w.concurrency), *_sizes(w),
               "--think-ms", _num(w.think_s * 1e3)]
        if w.count is not None:
            out += ["--flows", str(w.count)]
        if w.duration_s is not None:
            out += ["--duration-s", _num(w.duration_s)]
        return out
    if w.kind == "single":
        return ["single", "--dst", ip(w.dsts[0]), "--bytes", str(w.bytes)]
    if w.kind == "incast":
        return ["incast", "--dst", ip(w.dsts[0]), "--size", str(w.bytes),
                "--rounds", str(w.rounds or 1), "--interval-ms", _num((w.interval_s or 0) * 1e3)]
    raise ValueError(f"unknown workload {w.kind!r}")


def external_window(a: Agent) -> tuple[float, float]:
    """When an external sender runs, in seconds from the run's start: its
    long flow's window, or its one flow's start and the time it is given
    to finish (workload 'single': ``start_s``, ``duration_s``)."""
    w = a.workload
    if w.kind == "single":
        return w.start_s, w.start_s + w.duration_s
    return w.flows[0].start_s, w.flows[0].stop_s


#: Where a one-flow external sender's wrapper records the program's start,
#: exit and exit status (``external_flow_row`` reads it).
EXIT_FILE = "exit.txt"


def payload_file(a: Agent, out: Path) -> Path:
    """The file of the flow's size a one-flow external sender may send
    (``{file}``); the executor writes it before the program starts."""
    return out / f"payload-{a.workload.bytes}.bin"


def external_command(a: Agent, ip, out: Path, delay_s: float = 0.0) -> list[str]:
    """An external agent's command line, its fields filled in, wrapped so
    that a sender starts ``delay_s`` from now (its window's start) and is
    stopped (SIGTERM, then SIGKILL 2 s later) when the window ends. A
    one-flow sender's wrapper also records when the program started and
    exited, and how (``EXIT_FILE``): its flow completion time."""
    sender, single = a.role == "sender", a.one_flow
    start, stop = external_window(a) if sender else (0.0, 0.0)
    dst = None if not sender else a.workload.dsts[0] if single else a.workload.flows[0].dst
    fields = {"dst": ip(dst) if dst else "", "self": ip(a.host),
              "start": _num(start), "stop": _num(stop) if sender else "",
              "duration": _num(stop - start) if sender else "",
              "rate_mbps": _num((a.line_rate_bps or 0) / 1e6), "out": str(out),
              "size": str(a.workload.bytes) if single else "",
              "file": str(payload_file(a, out)) if single else ""}
    argv = [c.format(**fields) for c in a.command]
    if not sender:
        return argv
    if single:
        # The shell stays to stamp the exit: the time a flow took is the
        # program's own, from exec to exit, read from the same clock as
        # the switch's counters.
        return ["sh", "-c", 'sleep "$0"; o="$1"; d="$2"; shift 2; s=$(date +%s%N); '
                'timeout -k 2 "$d" "$@"; r=$?; echo "$s $(date +%s%N) $r" > "$o"; exit $r',
                _num(max(0.0, delay_s)), str(out / EXIT_FILE), _num(stop - start), *argv]
    # The shell waits, then becomes `timeout`, which runs the program: no
    # process of ours stays between p4cc and it.
    return ["sh", "-c", 'sleep "$0"; d="$1"; shift; exec timeout -k 2 "$d" "$@"',
            _num(max(0.0, delay_s)), _num(stop - start), *argv]


def external_flow_row(a: Agent, ip, out: Path) -> dict:
    """The flows.csv row of a one-flow external sender from what its
    wrapper recorded: complete when the program exited with status 0
    within its time. What only the program knows (bytes acknowledged,
    retransmissions, RTTs) is left empty, not guessed."""
    row = {"flow_id": a.flow_id_base, "workload": "single", "round": 0, "datapath": "external",
           "cc": "", "src": ip(a.host), "dst": ip(a.workload.dsts[0]),
           "size_bytes": a.workload.bytes, "start_unix_ns": "", "end_unix_ns": "", "fct_ns": "",
           "status": "unfinished", "reason": "the program never exited (stopped with the run)"}
    try:
        s, e, rc = (int(x) for x in (out / EXIT_FILE).read_text().split())
    except (OSError, ValueError):
        return row
    row.update(start_unix_ns=s, end_unix_ns=e)
    if rc == 0:
        row.update(status="complete", reason="", fct_ns=e - s)
    elif rc in (124, 137):
        row.update(status="timeout", reason=f"still running after its {_num(a.workload.duration_s)} s")
    else:
        row.update(status="failed", reason=f"exit status {rc}")
    return row


def command(a: Agent, ip, out: Path, start_unix_ns: int, rt_prio: int | None = None) -> list[str]:
    """``p4cc-host`` arguments of agent ``a``: its results go to ``out``
    (the agent's folder; the collector writes ``out``/../queue.csv). With
    ``rt_prio`` the user-space transport's send and receive loops run as
    SCHED_FIFO (kernel TCP's timing is the kernel's)."""
    rt = ["--rt-prio", str(rt_prio)] if rt_prio is not None else []
    if a.role in ("collector", "feed"):
        return ["collect", "--listen", f"0.0.0.0:{COLLECTOR_UDP_PORT}",
                "--out", str(out.parent / "queue.csv")] + (["--feed"] if a.role == "feed" else [])
    if a.role == "receiver":
        if a.datapath == "kernel":
            return ["tcp-recv", "--listen", f"0.0.0.0:{TCP_PORT}",
                    *(["--cc", a.cc] if a.cc else []), "--out", str(out)]
        cnp = ["--cnp-interval-us", _num(a.cnp_interval_us)] if a.cnp_interval_us else []
        acks = ["--ack-every", str(a.ack_every)] if a.ack_every != 1 else []
        if a.delayed_ack_us:
            acks += ["--delayed-ack-us", str(round(a.delayed_ack_us))]
        return ["recv", "--out", str(out), *cnp, *acks, *rt]
    kernel = a.datapath == "kernel"
    args = ["gen", "--datapath", "tcp" if kernel else "udp", "--cc", a.cc,
            "--start-at-unix-ns", str(start_unix_ns), "--flow-id-base", str(a.flow_id_base),
            "--seed", str(a.seed), "--out", str(out), "--rtt-every", str(a.rtt_every),
            "--bin-ms", f"{a.bin_ms:g}"]
    if not kernel:
        args += [x for k, v in a.cc_params.items() for x in ("--cc-param", f"{k}={v}")]
        if a.line_rate_bps:
            args += ["--line-rate-mbps", _num(a.line_rate_bps / 1e6)]
        if a.nic_rate_bps:
            args += ["--nic-rate-mbps", _num(a.nic_rate_bps / 1e6)]
        if a.init_cwnd_pkts:
            args += ["--init-cwnd", str(a.init_cwnd_pkts)]
        if not a.ecn:
            args.append("--no-ecn")
        args += rt
    return args + workload_args(a.workload, ip, a.host)


def kernel_ecn_sysctl(a: Agent) -> list[str] | None:
    """Kernel TCP negotiates ECN per namespace: a sender's sysctl, or None."""
    if a.role == "sender" and a.datapath == "kernel":
        return ["sysctl", "-qw", f"net.ipv4.tcp_ecn={int(a.ecn)}"]
    return None
