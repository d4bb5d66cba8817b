"""p4cc's BBRv1 (hosts/cc, over its user-space transport) against the
kernel's (Linux tcp_bbr) on the same bottleneck: one flow; two flows of
the same implementation; one BBR flow against one kernel Cubic flow. The
two are different implementations on different stacks, so each
comparison has a tolerance for what differs:

* segments: kernel TCP sends 1448-byte segments in 1514-byte frames
  (timestamps on), p4cc's transport 1336 payload bytes in 1454-byte
  frames; throughput is compared as the bottleneck's utilisation (bytes on
  the wire), which does not depend on it;
* quantisation: the kernel budgets 3 TSO quanta in cwnd even with GSO off
  (p4cc's bbr computes the same goal, `tso_segs=0`), but it sends from
  skbs and its receiver ACKs every other segment (delayed ACKs), which
  the ACK-aggregation estimate adds to cwnd; p4cc's receiver ACKs every
  packet;
* timers: the kernel paces with hrtimers on its departure-time schedule
  (EDT), p4cc's sender in a user-space loop (ppoll and a spin, docs/
  transport.md §7), and in real time its ACKs take ~0.5 ms of user-space
  stack; ProbeRTT's 10 s and 200 ms are jiffies in the kernel, exact in
  p4cc;
* RTT samples: p4cc logs one per ACK, kernel TCP its smoothed RTT
  (tcpi_rtt) once per 10 ms bin.

There is no kernel in virtual time (its kernel bbr is p4cc's bbr), so this
experiment runs in real time only."""
from __future__ import annotations

import math

from .. import blocks, metrics
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import QUEUE, RATE, fmt, verdict
from . import bbr_common as bc

SCENARIOS = ("one", "two", "cubic")
#: Utilisation: one PROBE_RTT (200 ms at 4 packets, ~2 % of a 10 s cycle)
#: more or less inside a 20-30 s window, and user-space pacing on a shared
#: machine (docs/transport.md §7).
UTIL_TOL = 0.05
#: Queue depths: a quarter of a BDP (the 1.25 probe's extra data, which the
#: two place at different instants, and the delayed-ACK aggregation and
#: quantisation budgets) or a quarter of the kernel's own value.
QUEUE_TOL_BDP = 0.25
QUEUE_TOL_REL = 0.25
#: RTT over base RTT: 0.1 (a tenth of a BDP of queue, plus ~0.5 ms of
#: user-space stack per RTT in real time and the kernel's smoothing).
RTT_TOL = 0.10
#: BBR's share against Cubic: ±0.1 of the link (Ware et al.'s model of
#: BBRv1 against Cubic has a 5 % median error; two stacks, two runs).
SHARE_TOL = 0.10
SOURCE = "p4cc's bbr (hosts/cc/src/bbr/v1.rs) written after Linux net/ipv4/tcp_bbr.c"


class BbrKernel(Experiment):
    id = "bbr-kernel"
    title = "p4cc's BBRv1 against the kernel's BBRv1"
    source = "Linux tcp_bbr (net/ipv4/tcp_bbr.c); Cardwell et al., ACM Queue 2016"
    description = ("The same bottleneck (a BDP of buffer) carries kernel BBRv1 in one arm and "
                   "p4cc's BBRv1 over its user-space transport in the other: one flow, two "
                   "flows, and one BBR flow against one kernel Cubic flow. Throughput, the "
                   "bottleneck queue's median and p95 (postcards), RTT inflation and BBR's "
                   "share against Cubic, p4cc's beside the kernel's. Real time only: virtual "
                   "time has no kernel.")
    #: Virtual time models kernel BBR by p4cc's bbr: the comparison would be
    #: p4cc's bbr against itself.
    real_time_only = ("bbr-kernel compares p4cc's BBRv1 with the kernel's, and virtual time has "
                      "no kernel (its kernel bbr is p4cc's bbr): run it in real time "
                      "(--target auto, embedded or bmv2)")
    paper: list[str] = []
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e10),
        Param("rtt", "20ms", "base RTT", seconds, 0.001, 1),
        Param("buffer_bdp", 1.0, "bottleneck buffer in BDPs", float, 0.01, 100),
        Param("scenarios", "one,two,cubic", "one flow, two flows, one BBR against one Cubic",
              str_list),
        Param("duration", 25, "seconds per arm", seconds, 0.01, 3600),
        Param("warmup", 5, "seconds left out at the start", seconds, 0, 600),
        bc.ACK_EVERY,
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        pkts = bc.buffer_pkts(p["buffer_bdp"], p["rate"], p["rtt"])
        topo, queue = bc.wishbone(p, pkts)
        out = []
        for sc in p["scenarios"]:
            if sc not in SCENARIOS:
                raise ValueError(f"scenarios: unknown '{sc}' ({', '.join(SCENARIOS)})")
            for impl in ("kernel", "bbr"):
                cc, dp, lab = bc.IMPLS[impl]
                agents = [bc.bbr_receiver("r1", impl, p),
                          bc.flows_sender("h1", "r1", cc, dp, 1, p["duration"], 1, p["seed"],
                                          p["rate"])]
                if sc == "two":
                    agents += [bc.bbr_receiver("r2", impl, p),
                               bc.flows_sender("h2", "r2", cc, dp, 1, p["duration"], 2,
                                               p["seed"] + 1, p["rate"])]
                    what = "two flows"
                elif sc == "cubic":
                    agents += [blocks.receiver("r2", "kernel", "cubic"),
                               bc.flows_sender("h2", "r2", "cubic", "kernel", 1, p["duration"], 2,
                                               p["seed"] + 1)]
                    what = "against kernel Cubic"
                else:
                    what = "one flow"
                out.append(blocks.arm(f"{impl}-{sc}", f"{lab}, {what}", topo, agents,
                                      p["duration"], p["warmup"], queue,
                                      {"bbr": impl, "scenario": sc, "buffer_pkts": pkts}))
        return out

    def arm_row(self, p, r) -> dict:
        g = bc.goodput_by_sender(r)
        bbr_folders = ["h1"] + (["h2"] if r["settings"]["scenario"] == "two" else [])
        bbr = sum(x for f in bbr_folders for x in g.get(f, []))
        total = sum(x for v in g.values() for x in v)
        return {"label": r["label"], "bbr": r["settings"]["bbr"],
                "scenario": r["settings"]["scenario"],
                "throughput_mbps": total, "per_flow_mbps": g,
                "utilisation": metrics.utilisation(r, p["rate"]),
                "bbr_share": bc.share(bbr, total),
                "loss_rate": bc.loss_rate(r)[0],
                **bc.queue_stats(r), **bc.rtt_stats(r, p["rtt"], bbr_folders)}

    def analyse(self, p, results):
        summary = {name: self.arm_row(p, r) for name, r in results.items()}
        bdp = bc.bdp_pkts(p["rate"], p["rtt"])
        verdicts = []
        for sc in p["scenarios"]:
            k, u = summary.get(f"kernel-{sc}"), summary.get(f"bbr-{sc}")
            if not (k and u):
                continue
            arms = [f"kernel-{sc}", f"bbr-{sc}"]
            what = {"one": "one flow", "two": "two flows", "cubic": "against Cubic"}[sc]

            def compare(key, name, tol, tol_text, sensitive, digits=3):
                d = u[key] - k[key]
                verdicts.append(verdict(
                    f"{what}: {name}, p4cc − kernel (p4cc {fmt(u[key], digits)}, kernel "
                    f"{fmt(k[key], digits)})", d, abs(d) <= tol,
                    f"the kernel's {fmt(k[key], digits)}", tol_text, SOURCE, sensitive, arms))

            compare("utilisation", "utilisation", UTIL_TOL, f"±{UTIL_TOL:g}", RATE)
            for key, name in (("queue_median_pkts", "median queue (pkts)"),
                              ("queue_p95_pkts", "p95 queue (pkts)")):
                tol = max(QUEUE_TOL_BDP * bdp, QUEUE_TOL_REL * (k[key] if not math.isnan(k[key])
                                                                else 0))
                compare(key, name, tol, f"±{tol:.0f} pkts (max of {QUEUE_TOL_BDP:g} BDP and "
                        f"{QUEUE_TOL_REL:.0%} of the kernel's)", QUEUE)
            compare("rtt_inflation", "median RTT / base RTT", RTT_TOL, f"±{RTT_TOL:g}", QUEUE)
            if sc == "cubic":
                compare("bbr_share", "BBR's share against Cubic", SHARE_TOL, f"±{SHARE_TOL:g}",
                        RATE)
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        scs = [sc for sc in p["scenarios"] if f"kernel-{sc}" in summary or f"bbr-{sc}" in summary]
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
        w = 0.38
        for i, impl in enumerate(("kernel", "bbr")):
            rows = [summary.get(f"{impl}-{sc}") for sc in scs]
            xs = [k + (i - 0.5) * w for k in range(len(scs))]
            axes[0].bar(xs, [r["utilisation"] if r else 0 for r in rows], w, label=bc.label(impl))
            axes[1].bar(xs, [r["queue_median_pkts"] if r else 0 for r in rows], w,
                        label=f"{bc.label(impl)} median")
            axes[1].scatter(xs, [r["queue_p95_pkts"] if r else 0 for r in rows], marker="_",
                            s=200, color="k")
            axes[2].bar(xs, [r["rtt_inflation"] if r else 0 for r in rows], w, label=bc.label(impl))
        for ax, name in zip(axes, ("utilisation", "queue (pkts; bar median, tick p95)",
                                   "median RTT / base RTT")):
            ax.set_xticks(range(len(scs)), scs)
            ax.set_title(name, fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "p4cc_vs_kernel.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path, metrics.queue_plot(results, outdir, "bottleneck queue")]
