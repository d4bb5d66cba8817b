"""DCTCP Fig. 16: five flows start one by one, then stop one by one;
per-flow throughput over time, DCTCP vs TCP (star, one receiver)."""
from __future__ import annotations

import time
from pathlib import Path

from p4cc_topo import load_topology

from .. import series
from ..experiment import Arm
from ..params import Param, rate_bps, seconds, str_list
from ..stats import jain_index, mean
from .compare import CompareProtocols, cc_label

START_DELAY_S = 1.0


class DctcpConvergence(CompareProtocols):
    id = "dctcp-convergence"
    title = "Convergence: flows joining and leaving, DCTCP vs TCP"
    source = "DCTCP (SIGCOMM 2010) Fig. 16"
    description = ("N senders to one receiver. Flow i starts at i·interval and the flows "
                   "stop in reverse order, one per interval. Each phase should share the "
                   "bottleneck fairly; DCTCP converges a little slower than TCP but keeps "
                   "the queue short.")
    params = [
        Param("rate", "100Mbps", "every link's rate", rate_bps, 1e6, 1e9),
        Param("rtt", "500us", "base round-trip time", seconds, 0, 1),
        Param("buffer", 120, "bottleneck buffer, packets", int, 1, 100_000),
        Param("k", 20, "ECN threshold K, packets", int, 0, 10_000),
        Param("senders", 5, "flows (paper: 5)", int, 2, 20),
        Param("interval", 5, "seconds between joins/leaves (paper: 30)", seconds, 1, 600),
        Param("protocols", "dctcp,cubic", "kernel TCP algorithms compared", str_list),
        Param("warmup", 0.5, "seconds before the first counter reading", seconds, 0, 60),
        Param("seed", 1, "random seed", int),
    ]

    def run_seconds(self, p, arm=None):
        return (2 * p["senders"] - 1) * p["interval"] + START_DELAY_S

    def topology(self, p):
        return load_topology("dumbbell", n_senders=p["senders"], bottleneck_bps=p["rate"],
                             access_bps=p["rate"], delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                             buffer_pkts=p["buffer"], ecn_k_pkts=p["k"])

    def arms(self, p):
        return [Arm(cc, f"{cc_label(cc)} (kernel TCP)", {"cc": cc, "datapath": "kernel"})
                for cc in p["protocols"]]

    def sender_args(self, lab, arm, p, host, i, outdir):
        if not hasattr(self, "_t0") or self._t0_arm != arm.name:
            # One shared start instant for every sender of this arm.
            self._t0, self._t0_arm = time.time_ns() + int(START_DELAY_S * 1e9), arm.name
        if arm.settings["cc"] == "dctcp":
            lab.ensure_kernel_dctcp()
        # As in dctcp-queue: the TCP baseline sees a drop-tail queue.
        ecn = 1 if arm.settings["cc"] == "dctcp" else 0
        lab.net.run(host, ["sysctl", "-qw", f"net.ipv4.tcp_ecn={ecn}"], check=True)
        n, iv = p["senders"], p["interval"]
        start, stop = i * iv, (2 * n - 1 - i) * iv
        return ["gen", "--datapath", "tcp", "--cc", arm.settings["cc"],
                "--start-at-unix-ns", str(self._t0), "--flow-id-base", str(i + 1),
                "--seed", str(p["seed"] + i), "--out", str(outdir / host), "long",
                "--flow", f"{lab.ip(self.receiver)},{start:g},{stop:g}"]

    def phases(self, p):
        """(start, end, active flow ids) relative to the shared start."""
        n, iv = p["senders"], p["interval"]
        out = []
        for k in range(2 * n - 1):
            active = [i + 1 for i in range(n) if i * iv <= k * iv and (2 * n - 1 - i) * iv > k * iv]
            out.append((k * iv, (k + 1) * iv, active))
        return out

    def rates(self, r, p):
        """flow id -> [(t since the first bin, Mbps)] at 100 ms resolution."""
        raw = series.throughput([Path(r["outdir"]) / h for h in r["senders"]])
        t0 = min((s[0][0] for s in raw.values() if s), default=0)
        out = {}
        for fid, s in raw.items():
            bins: dict[int, list[float]] = {}
            for t, mbps in s:
                bins.setdefault(int((t - t0) * 10), []).append(mbps)
            out[fid] = sorted((k / 10, mean(v)) for k, v in bins.items())
        return out

    def analyse(self, p, results):
        summary, checks = {}, {}
        for name, r in results.items():
            rates = self.rates(r, p)
            phases = []
            for start, end, active in self.phases(p):
                # Skip the first second of a phase: that is convergence time.
                lo, hi = start + min(1.0, (end - start) / 2), end
                per = [mean([m for t, m in rates.get(str(f), []) if lo <= t < hi]) for f in active]
                per = [x for x in per if x == x]
                phases.append({"from_s": start, "flows": active, "jain": jain_index(per),
                               "total_mbps": sum(per)})
            summary[name] = {"label": r["label"], "phases": phases,
                             "mean_jain": mean([ph["jain"] for ph in phases if ph["jain"] == ph["jain"]]),
                             **{k: v for k, v in self.arm_summary(p, r).items()
                                if k in ("queue_mean_pkts", "queue_p95_pkts", "utilisation")}}
            checks[f"{r['label']}: fair shares (mean Jain index {summary[name]['mean_jain']:.2f} ≥ 0.9)"] = \
                summary[name]["mean_jain"] >= 0.9
        return summary, checks

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 3.6),
                                 sharey=True, squeeze=False)
        for ax, (name, r) in zip(axes[0], results.items()):
            for fid, s in sorted(self.rates(r, p).items()):
                ax.plot([t for t, _ in s], [m for _, m in s], lw=0.8, label=f"flow {fid}")
            for start, _, active in self.phases(p):
                ax.axvline(start, color="gray", lw=0.3)
            ax.set_title(r["label"])
            ax.set_xlabel("time (s)")
            ax.legend(fontsize=6, loc="upper right")
        axes[0][0].set_ylabel("throughput (Mbps)")
        fig.suptitle(f"Flows joining every {p['interval']:g} s then leaving (cf. {self.source})")
        fig.tight_layout()
        path = outdir / "throughput_over_time.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
