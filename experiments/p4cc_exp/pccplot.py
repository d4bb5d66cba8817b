"""What a PCC sender decided, monitor interval by monitor interval: the
rate each interval was sent at against time (mi.csv), one panel per PCC
arm of a bottleneck sweep, the link rate beside it."""
from __future__ import annotations

from pathlib import Path

from . import metrics, series


def mi_rates(results: dict, summary: dict, link_mbps: float, outdir: Path,
             name: str = "pcc_rates.png") -> list[Path]:
    """The plot of the arms ``summary`` names (titled by their labels): its
    path, or none when no arm logged a monitor interval (external arms,
    other protocols)."""
    panels = []
    for a in summary:
        mis = series.monitor_intervals(metrics.sender_dirs(results[a])) if a in results else {}
        if mis:
            panels.append((a, mis))
    if not panels:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.4 * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (a, mis) in zip(axes.flat, panels):
        t0 = min(v[0][0] for v in mis.values())
        for fid, v in sorted(mis.items()):
            ax.plot([t - t0 for t, _, _ in v], [r for _, r, _ in v], lw=0.6,
                    label=f"flow {fid}" if len(mis) > 1 else None)
        ax.axhline(link_mbps, ls="--", color="k", lw=0.8)
        ax.set_title(summary[a].get("label", a), fontsize=8)
        ax.set_xlabel("time (s)", fontsize=7)
        ax.tick_params(labelsize=7)
        if len(mis) > 1:
            ax.legend(fontsize=6)
    for ax in axes[:, 0]:
        ax.set_ylabel("MI rate (Mbps)", fontsize=7)
    fig.tight_layout()
    path = outdir / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
