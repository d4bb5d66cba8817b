"""``python -m p4cc_topo``: check, show, bring up and clean topologies.

    python -m p4cc_topo list
    python -m p4cc_topo check topologies/builtin/wishbone.yaml
    python -m p4cc_topo show dumbbell -p n_senders=4 -p bottleneck_bps=1Gbps
    python -m p4cc_topo up two_hosts --target pyfwd     # until Ctrl-C
    python -m p4cc_topo status
    python -m p4cc_topo clean [--force] [--dry-run]

``p4cc clean`` (the project CLI) calls :func:`clean_command`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .builtin import list_builtins, load_topology
from .cleanup import cleanup_all, find_leftovers, format_report
from .model import TopologyError
from .targets import SwitchStartError, TargetCapabilityError, TargetUnavailable


def _params(pairs: list[str]) -> dict:
    out = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep:
            raise SystemExit(f"parameter {p!r}: expected NAME=VALUE")
        out[k.strip()] = v.strip()
    return out


def clean_command(force: bool = False, dry_run: bool = False, out=sys.stdout) -> int:
    """What ``p4cc clean`` runs: remove leftovers of dead runs; 0 if all gone."""
    rep = cleanup_all(force=force, dry_run=dry_run)
    print(format_report(rep), file=out)
    bad = [r for r in rep["cleaned"].values()
           if (r.get("left") or {}).get("links") or (r.get("left") or {}).get("netns")]
    return 1 if bad else 0


def summary(topo) -> str:
    lines = [f"{topo.name}: {len(topo.hosts)} hosts, {len(topo.switches)} switches, "
             f"{len(topo.links)} links" + (f", collector {topo.collector}" if topo.collector else "")]
    for l in topo.links:
        props = []
        if l.rate_bps:
            from .units import format_rate
            props.append(format_rate(l.rate_bps))
        if l.delay_us:
            props.append(f"{l.delay_us}us")
        for k in ("buffer_pkts", "ecn_k_pkts", "loss"):
            v = getattr(l, k)
            if v:
                props.append(f"{k}={v}")
        lines.append(f"  {l.label():24s} {' '.join(props)}")
    for role, who in topo.roles.items():
        lines.append(f"  role {role}: {who}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4cc_topo", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="built-in topologies")
    for name in ("check", "show"):
        sp = sub.add_parser(name, help=f"{name} a topology (file or built-in)")
        sp.add_argument("topology")
        sp.add_argument("-p", "--param", action="append", help="generator parameter NAME=VALUE")
        if name == "show":
            sp.add_argument("--yaml", action="store_true", help="canonical YAML")
    up = sub.add_parser("up", help="build a topology and keep it until Ctrl-C/SIGTERM")
    up.add_argument("topology")
    up.add_argument("-p", "--param", action="append")
    up.add_argument("--target", default="auto", help="auto, embedded, bmv2 or pyfwd")
    up.add_argument("--run-id")
    up.add_argument("--log-dir")
    up.add_argument("--no-watchdog", action="store_true")
    up.add_argument("--no-switch", action="store_true", help="namespaces and links only")
    up.add_argument("--duration", type=float, help="tear down after this many seconds")
    sub.add_parser("status", help="runs with resources on this machine")
    cl = sub.add_parser("clean", help="remove what dead runs left behind")
    cl.add_argument("--force", action="store_true", help="also live runs")
    cl.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)

    try:
        if a.cmd == "list":
            for k, v in list_builtins().items():
                print(f"{k:12s} {v}")
            return 0
        if a.cmd in ("check", "show"):
            topo = load_topology(a.topology, **_params(a.param))
            if a.cmd == "show" and a.yaml:
                print(topo.to_yaml(), end="")
            else:
                print(summary(topo))
            return 0
        if a.cmd == "status":
            runs = find_leftovers(with_netns_pids=True)
            if not runs:
                print("no p4cc runs")
            for rid, r in sorted(runs.items()):
                st = "live" if r["owner_alive"] else "DEAD (p4cc clean removes it)"
                print(f"run {rid}: {st}; {len(r['netns'])} namespaces, {len(r['links'])} links, "
                      f"{len(r['pids'])} processes")
            return 0
        if a.cmd == "clean":
            return clean_command(a.force, a.dry_run)
        if a.cmd == "up":
            from .network import Network
            topo = load_topology(a.topology, **_params(a.param))
            with Network(topo, target=a.target, run_id=a.run_id, log_dir=a.log_dir,
                         watchdog=not a.no_watchdog, start_switches=not a.no_switch) as net:
                print(json.dumps({"run_id": net.run_id, "target": net.target,
                                  "log_dir": str(net.log_dir), "switches": net.endpoints(),
                                  "hosts": {n: net.netns(n) for n in topo.hosts}},
                                 indent=1), flush=True)
                print(f"p4cc: run {net.run_id} is up; Ctrl-C to tear down", file=sys.stderr, flush=True)
                t0 = time.monotonic()
                while a.duration is None or time.monotonic() - t0 < a.duration:
                    time.sleep(0.2)
                    for n, s in net.switches.items():
                        if not s.alive():
                            print(f"p4cc: switch {n} died; see {s.log_path}", file=sys.stderr)
                            return 1
            return 0
    except KeyboardInterrupt:
        return 130
    except (TopologyError, TargetCapabilityError, TargetUnavailable, SwitchStartError) as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
