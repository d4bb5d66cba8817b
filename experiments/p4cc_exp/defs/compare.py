"""Protocols side by side on one bottleneck: each arm runs the same long
flows with one algorithm, and the switch's postcards say what the queue
did. TIMELY's incast table and PCC's lossy-link figure are instances."""
from __future__ import annotations

from pathlib import Path

from .. import series
from ..experiment import Arm, Experiment
from ..lab import stop
from ..stats import mean, percentile

TCP_PORT = 7361
KERNEL_CCS = {"reno", "cubic", "bbr"}


def cc_label(cc: str) -> str:
    return {"timely": "TIMELY", "oracle-timely": "oracle TIMELY", "vegas": "Vegas",
            "dctcp": "DCTCP", "cubic": "Cubic", "reno": "Reno", "pcc": "PCC Allegro",
            "pcc-allegro": "PCC Allegro", "pcc-vivace": "PCC Vivace"}.get(cc, cc)


class CompareProtocols(Experiment):
    """Subclasses give params, topology(), arms() and the receiver host;
    arms' settings: cc, datapath ("user"/"kernel"), cc_params, and
    optionally loss (probability on the bottleneck link)."""

    receiver = "rx"

    def senders(self, p) -> list[str]:
        return [f"h{i}" for i in range(1, p["senders"] + 1)]

    def arm_senders(self, p, arm) -> list[str]:
        """The sending hosts of one arm (arms may differ in topology)."""
        return self.senders(p)

    def run_seconds(self, p, arm=None) -> float:
        """How long the senders of an arm send."""
        return p["duration"]

    def arm_seconds(self, p, arm=None):
        return self.run_seconds(p, arm) + 2

    def sender_args(self, lab, arm, p, host, i, outdir) -> list[str]:
        s = arm.settings
        common = ["--cc", s["cc"], "--duration-s", f"{p['duration']}",
                  "--flow-id-base", str(i + 1), "--seed", str(p["seed"] + i),
                  "--out", str(outdir / host)]
        if s.get("datapath", "user") == "kernel":
            return ["tcp-send", "--dst", f"{lab.ip(self.receiver)}:{TCP_PORT}", *common]
        extra = [a for k, v in s.get("cc_params", {}).items() for a in ("--cc-param", f"{k}={v}")]
        return ["send", "--dst", lab.ip(self.receiver), *common, *extra,
                "--line-rate-mbps", f"{p['rate'] / 1e6:g}"]

    def run_arm(self, lab, arm, p, progress, outdir: Path) -> dict:
        s = arm.settings
        kernel = s.get("datapath", "user") == "kernel"
        switch, port = lab.port_of(self.receiver)
        # Per-arm link settings of the bottleneck (a sweep's variable).
        knobs = {k: s[k] for k in ("loss", "depth_pkts") if k in s}
        if knobs:
            lab.ops[switch].set_queue(port, **knobs)
        procs = [lab.start_collector(outdir / "queue.csv")]
        rx_args = (["tcp-recv", "--listen", f"0.0.0.0:{TCP_PORT}", "--cc", s["cc"]] if kernel
                   else ["recv"])
        procs.append(lab.start(self.receiver, [*rx_args, "--out", str(outdir / "rx")],
                               log="rx.log"))
        progress.sleep(0.5)
        senders = self.arm_senders(p, arm)
        running = [lab.start(h, self.sender_args(lab, arm, p, h, i, outdir), log=f"{h}.log")
                   for i, h in enumerate(senders)]
        m = self.measure(lab, arm, p, progress, switch, port, running, procs)
        return {"outdir": str(outdir), "port": port, "senders": senders, "label": arm.label,
                "settings": s, **m}

    def measure(self, lab, arm, p, progress, switch, port, running, procs) -> dict:
        """Reads the bottleneck's counters over the run after the warm-up,
        waits for the senders, stops the rest: tx_bytes, ce_marks and
        window_s of that span."""
        progress.sleep(p["warmup"], lab.check_alive)
        c0 = lab.counters(switch, port)
        window = max(0.5, self.run_seconds(p, arm) - p["warmup"] - 0.5)
        progress.sleep(window, lab.check_alive)
        c1 = lab.counters(switch, port)
        for proc in running:
            try:
                proc.wait(timeout=15)
            except Exception:
                pass
        stop(procs)
        return {"tx_bytes": c1["tx_bytes"] - c0["tx_bytes"],
                "ce_marks": c1["ce_marks"] - c0["ce_marks"], "window_s": window}

    def arm_summary(self, p, r) -> dict:
        out = Path(r["outdir"])
        cards = series.postcards(out / "queue.csv", r["port"])
        t0 = min((c["t"] for c in cards), default=0) + p["warmup"]
        depths = [c["depth"] for c in cards if c["t"] >= t0]
        dirs = [out / h for h in r["senders"]]
        rtts = [rtt for s in series.rtts(dirs).values() for (t, rtt, _) in s if t >= t0]
        flows = series.flows(dirs)
        per_flow = []
        for f in flows:
            secs = (int(f["end_unix_ns"]) - int(f["start_unix_ns"])) / 1e9
            per_flow.append(int(f["bytes_acked"]) * 8 / secs / 1e6 if secs > 0 else 0.0)
        return {
            "label": r["label"],
            "throughput_mbps": sum(per_flow),
            "utilisation": r["tx_bytes"] * 8 / (p["rate"] * r["window_s"]),
            "per_flow_mbps": per_flow,
            "queue_mean_pkts": mean(depths),
            "queue_p95_pkts": percentile(depths, 95),
            "rtt_mean_us": mean(rtts),
            "rtt_p95_us": percentile(rtts, 95),
            "flows": len(flows),
        }

    def queue_plot(self, p, results, outdir, title) -> Path:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        n = len(results)
        fig, axes = plt.subplots(n, 1, figsize=(9, 1.9 * n + 0.6), sharex=True, squeeze=False)
        for ax, (name, r) in zip(axes[:, 0], results.items()):
            cards = series.postcards(Path(r["outdir"]) / "queue.csv", r["port"])
            t0 = cards[0]["t"] if cards else 0
            ax.plot([c["t"] - t0 for c in cards], [c["depth"] for c in cards], lw=0.5)
            ax.set_ylabel("pkts")
            ax.set_title(r["label"], fontsize=9, loc="left")
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(title)
        fig.tight_layout()
        path = outdir / "queue_over_time.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
