"""An arm's results, read back from its folder: what every analysis gets,
whichever executor wrote the folder."""
from __future__ import annotations

import json
from pathlib import Path

from p4cc_topo.plan import ArmPlan


def sent_bytes(a: dict, b: dict) -> int:
    """Bytes a port sent between two readings: what the switch put on the
    wire where it says (``wire_tx_bytes``), else its P4 counter."""
    if "wire_tx_bytes" in a and "wire_tx_bytes" in b:
        return b["wire_tx_bytes"] - a["wire_tx_bytes"]
    return b["tx_bytes"] - a["tx_bytes"]


def arm_result(outdir: Path, arm: ArmPlan) -> dict:
    """The measured facts of one arm:

    outdir, label, settings; senders (the senders' folders, in plan order);
    port and switch_id of the measured queue; tx_bytes, tx_packets and
    ce_marks of that port between the two counter readings (and
    enq_pkts and tail_drops, the packets its queue admitted and refused,
    where the switch's admin API counts them), window_s
    between them (between the two wire readings where real time stamped
    them), and window_unix_ns, the readings' times (None without both
    readings); rate_pps, the port's rate in frames/s where the target
    shapes it so (bmv2: logs/switches.json, what the controller applied),
    else None.
    """
    outdir = Path(outdir)
    try:
        m = json.loads((outdir / "measure.json").read_text())
    except (OSError, ValueError):
        m = {}
    q = arm.measure.queue
    out = {"outdir": str(outdir), "label": arm.label, "settings": dict(arm.settings),
           "senders": [a.folder for a in arm.senders()],
           "port": q.port if q else None, "switch_id": arm.measure.queue_switch_id,
           "tx_bytes": 0, "tx_packets": 0, "ce_marks": 0,
           "window_s": float(m.get("window_s", 0.0)), "window_unix_ns": None,
           "complete": bool(m), "rate_pps": applied_rate_pps(outdir, q) if q else None,
           "reads": m.get("reads", {}), "t0_unix_ns": m.get("t0_unix_ns"),
           "queue_key": q.key() if q else None,
           # External senders log nothing p4cc reads: their flows are told
           # apart in the postcards by source address.
           "external_flows": external_flows(arm), "postcard_one_in_n": one_in_n(arm),
           # virtual time: each host's NIC-queue and receive drops
           "hosts": m.get("hosts") or {}}
    reads = m.get("reads", {})
    try:
        out["window_unix_ns"] = (int(reads["start"]["unix_ns"]), int(reads["end"]["unix_ns"]))
    except (KeyError, TypeError, ValueError):
        pass
    out["busy"] = None
    out["port_rate_bps"] = port_rate_bps(arm, q) if q else None
    if q and "start" in reads and "end" in reads:
        a, b = reads["start"]["ports"].get(q.key()), reads["end"]["ports"].get(q.key())
        if a and b:
            out["tx_bytes"] = sent_bytes(a, b)
            out["tx_packets"] = b.get("tx_packets", 0) - a.get("tx_packets", 0)
            out["ce_marks"] = b["ce_marks"] - a["ce_marks"]
            # The egress queue's admissions and tail drops, where the switch
            # has an admin API that counts them (embedded, sim).
            for k in ("enq_pkts", "tail_drops"):
                if f"wire_{k}" in a and f"wire_{k}" in b:
                    out[k] = b[f"wire_{k}"] - a[f"wire_{k}"]
            if "wire_unix_ns" in a and "wire_unix_ns" in b:
                out["window_s"] = (b["wire_unix_ns"] - a["wire_unix_ns"]) / 1e9
            out["busy"] = busy_between(reads["start"], reads["end"], q.key(), out["port_rate_bps"])
    return out


def port_rate_bps(arm: ArmPlan, q) -> int | None:
    """Port ``q``'s line rate in the plan, if it holds all run (no event
    changes it)."""
    if any(e.switch == q.switch and e.port == q.port and "rate_bps" in e.set for e in arm.events):
        return None
    sw = arm.switches.get(q.switch)
    port = sw.ports.get(q.port) if sw else None
    return int(port.rate_bps) if port is not None and port.rate_bps else None


def busy_between(first: dict, last: dict, key: str, rate_bps: int | None) -> dict | None:
    """How long port ``key``'s link was busy between two readings, where the
    executor measured it (virtual time: ``wire_busy_ns``): {"busy_ns",
    "window_ns", "rate_bps"} in whole numbers, so a utilisation taken from
    them is exact and at most 1. None where it did not, or without one
    line rate for the port (``port_rate_bps``)."""
    a, b = first["ports"].get(key), last["ports"].get(key)
    if not rate_bps or not a or not b or "wire_busy_ns" not in a or "wire_busy_ns" not in b:
        return None
    return {"busy_ns": int(b["wire_busy_ns"]) - int(a["wire_busy_ns"]),
            "window_ns": int(last["unix_ns"]) - int(first["unix_ns"]),
            "rate_bps": int(rate_bps)}


def applied_rate_pps(outdir: Path, q) -> float | None:
    """The frames/s rate the controller set on the measured port, where
    the target shapes in frames (bmv2's set_queue_rate), from the arm's
    logs/switches.json; None where it shapes in bits or nothing says."""
    try:
        d = json.loads((Path(outdir) / "logs" / "switches.json").read_text())
        link = d["applied"][q.switch]["ports"][str(q.port)].get("link") or {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    pps = link.get("rate_pps")
    return float(pps) if pps else None


def external_flows(arm: ArmPlan) -> dict[str, str]:
    """Flow id -> source address of each external sender's flow."""
    ips = {h["name"]: h["ip"].split("/")[0] for h in arm.topology.get("hosts", [])}
    return {str(a.flow_id_base): ips[a.host] for a in arm.senders()
            if a.datapath == "external" and a.host in ips}


def one_in_n(arm: ArmPlan) -> int:
    """The measured switch's postcard sampling: one packet in N."""
    q = arm.measure.queue
    sw = arm.switches.get(q.switch) if q else None
    return int(sw.postcards.one_in_n) if sw and sw.postcards else 1
