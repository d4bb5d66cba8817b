"""PCC's satellite-link figure: throughput against the bottleneck buffer
on a long, lossy link (42 Mbps, 800 ms RTT, about 1 % random loss), PCC
vs TCP. Loss-based TCP collapses on such a link whatever the buffer;
PCC's utility tolerates random loss below its 5 % threshold."""
from __future__ import annotations

from ..experiment import Experiment
from ..params import Param, fraction, rate_bps, seconds, str_list
from ..theory import tcp_model_bps
from ..verdicts import RATE, verdict
from .pcc_shallow import buffer_plot, buffer_summary, buffer_sweep


class PccSatellite(Experiment):
    id = "pcc-satellite"
    title = "Throughput on a satellite link"
    source = "PCC (NSDI 2015) satellite-link figure"
    description = ("One flow over a 42 Mbps link with an 800 ms RTT and 1 % random loss "
                   "(the paper's emulated satellite link), the bottleneck buffer swept. "
                   "TCP's throughput stays near zero at any buffer; PCC keeps most of the "
                   "link once the buffer is not tiny.")
    # PCC's satellite figure: 42 Mb/s, 800 ms RTT, 0.74 % loss, 100 s per point.
    paper = ["loss=0.74%", "duration=100", "warmup=20"]
    params = [
        Param("rate", "42Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("access", "1Gbps", "access link rate", rate_bps, 1e6, 1e11),
        Param("rtt", "800ms", "base round-trip time", seconds, 0.001, 5),
        Param("loss", "1%", "random loss on the bottleneck (paper: 0.74 %)", fraction),
        Param("buffers", "30,300,3000", "bottleneck buffers to sweep, packets (BDP ≈ 2800)",
              str_list),
        Param("protocols", "pcc,pcc-vivace,cubic", "arms (user-space transport)", str_list),
        Param("senders", 1, "flows", int, 1, 10),
        Param("duration", 40, "seconds per point (paper: 100)", seconds, 0.01, 3600),
        Param("warmup", 10, "seconds ignored at the start (start-up takes many RTTs)",
              seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        return buffer_sweep(p, loss=p["loss"])

    def analyse(self, p, results):
        summary = buffer_summary(p, results)
        verdicts = []
        target = (1 - p["loss"]) * 0.9
        for name, row in summary.items():
            if row["cc"].startswith("pcc"):
                verdicts.append(verdict(
                    f"{row['label']}: link use after start-up", row["utilisation"],
                    row["utilisation"] >= target,
                    f"(1 − p) of the link = {(1 - p['loss']) * 100:.1f} %", "≥ 90 % of that",
                    "PCC (NSDI 2015) §2.2 utility: loss below the 5 % knee leaves the best rate at "
                    "capacity; satellite figure", RATE, [name]))
            elif row["cc"] in ("cubic", "reno"):
                model, what = tcp_model_bps(row["cc"], p["rtt"], p["loss"])
                verdicts.append(verdict(
                    f"{row['label']}: throughput", row["throughput_mbps"],
                    row["throughput_mbps"] <= 2 * model / 1e6, f"{what}: {model / 1e6:.2f} Mb/s",
                    "≤ ×2 (start-up included)", "Mathis et al. 1997; RFC 9438; PCC satellite figure",
                    RATE, [name]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        return [buffer_plot(p, summary, outdir)]
