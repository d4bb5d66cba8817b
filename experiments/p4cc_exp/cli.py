"""The `p4cc` command: run and list experiments, clean up, drive switches.

    p4cc list
    p4cc run EXPERIMENT [--target auto|embedded|bmv2|sim] [--scale paper] [--set k=v ...] [--out DIR]
                        [--links p4cc|netem]             how bmv2's ports get delay and loss
                        [--keep all|series|summary]      what of the results folder stays
                        [--retry-void N]                 rerun an arm the fidelity monitor voids
    p4cc sweep EXPERIMENT --grid NAME=V1,V2,... [--grid ...] [--seeds N] [--target ...]
                        [--scale paper] [--set k=v ...] [--out DIR] [--address RAY_ADDRESS]
                        [--retries N] [--keep summary|series|all]   every grid point x seed on Ray
    p4cc run EXPERIMENT --plan-only [--out DIR]     writes DIR/plan.json, runs nothing
    p4cc run --plan plan.json [--target ...]         reruns exactly a saved plan
    p4cc up TOPOLOGY [--target ...]                  a programmed lab in namespaces, until Ctrl-C
    p4cc mininet [TOPOLOGY] [--target ...]           the same at Mininet's prompt (mininet>)
    p4cc exec HOST CMD ...                           a command in a host of the running lab
    p4cc bmv2-capacity                               measure bmv2's forwarding rate here (cached)
    p4cc clean [--dry-run]
    p4cc analyse DIR [--target tofino]               analysis + report again, or of arms run outside p4cc
    p4cc ctl ...            (the P4Runtime controller: p4cc ctl --help)
"""
from __future__ import annotations

import argparse
import sys


def _list(_args) -> int:
    from .registry import EXPERIMENTS
    width = max(len(k) for k in EXPERIMENTS)
    for name, exp in EXPERIMENTS.items():
        print(f"{name:<{width}}  {exp.title}  [{exp.source}]")
    print("\np4cc run NAME --help-params   shows an experiment's parameters")
    return 0


def _run(args) -> int:
    from p4cc_topo import TargetCapabilityError
    from p4cc_topo.plan import Plan, PlanError

    from .params import ParamError
    from .registry import get
    from .runner import RunError, run
    if (args.experiment is None) == (args.plan is None):
        print("p4cc: give an experiment (p4cc list) or --plan plan.json", file=sys.stderr)
        return 2
    try:
        plan = Plan.load(args.plan) if args.plan else None
        exp = get(plan.experiment if plan else args.experiment)
    except PlanError as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"p4cc: {e.args[0]}", file=sys.stderr)
        return 2
    if args.help_params:
        print(f"{exp.id}: {exp.title} [{exp.source}]\n{exp.description}\n\nparameters (--set name=value):")
        for p in exp.params:
            print(f"  {p.name:<16} default {p.default!s:<12} {p.help}")
        return 0
    if plan is not None and args.set:
        print("p4cc: --set does not apply to a saved plan (it is run exactly as written)",
              file=sys.stderr)
        return 2
    # An experiment whose default scale the namespace lab cannot carry runs
    # in virtual time unless asked otherwise (Experiment.default_target).
    target = args.target or getattr(exp, "default_target", "auto")
    # A saved plan keeps its scale: the paper's runs in virtual time, as
    # `--scale paper` does, whichever way the plan was made.
    if args.scale == "paper" or (plan is not None and plan.scale == "paper"):
        if target not in ("auto", "sim"):
            print(f"p4cc: the paper's scale runs in virtual time: drop --target {target} "
                  "(or give --target sim)", file=sys.stderr)
            return 2
        target = "sim"
    try:
        report = run(exp, target=target, overrides=args.set or [], out=args.out,
                     plan=plan, plan_only=args.plan_only, scale=args.scale, links=args.links,
                     keep=args.keep, retry_void=args.retry_void)
    except ParamError as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 2
    except (RunError, TargetCapabilityError) as e:
        print(f"p4cc: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        where = getattr(e, "outdir", None)
        print("\np4cc: interrupted; the network was torn down"
              + (f"; what was written is in {where} (params.json says interrupted)" if where else ""),
              file=sys.stderr)
        return 130
    if args.plan_only:
        print(f"[p4cc] plan: {report}")
        return 0
    print(f"[p4cc] report: {report}")
    return 0


def _sweep(args) -> int:
    from .params import ParamError
    from .registry import get
    from .runner import RunError
    from .sweep import SweepError, SweepInterrupted, sweep
    try:
        exp = get(args.experiment)
    except KeyError as e:
        print(f"p4cc: {e.args[0]}", file=sys.stderr)
        return 2
    try:
        report, n = sweep(exp, args.grid or [], seeds=args.seeds, target=args.target,
                          scale=args.scale, overrides=args.set or [], out=args.out,
                          address=args.address, retries=args.retries, keep=args.keep,
                          links=args.links)
    except ParamError as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 2
    except (SweepError, RunError, OSError) as e:
        print(f"p4cc: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except SweepInterrupted as e:
        print(f"\np4cc: interrupted with {e.done} of {e.total} runs complete in {e.outdir}; "
              "the same command continues the sweep", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\np4cc: interrupted; every finished run is kept, and the same command "
              "continues the sweep", file=sys.stderr)
        return 130
    print(f"[p4cc] report: {report}")
    return 1 if n["failed"] else 0


def _lab(args) -> int:
    from p4cc_control.errors import P4ccError
    from p4cc_topo import (NetworkError, SwitchStartError, TargetUnavailable, TopologyError)

    from .handlab import LabError, mininet, up
    try:
        if args.cmd == "up":
            return up(args.topology, args.target, args.duration, args.links)
        return mininet(args.topology, args.target, args.script, args.links)
    except (LabError, TopologyError, TargetUnavailable, SwitchStartError, NetworkError,
            P4ccError, ValueError) as e:
        print(f"p4cc: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1


def _exec(args) -> int:
    import os
    from .handlab import LabError, host_command
    if not args.command:
        print("p4cc: exec needs a command (p4cc exec HOST CMD ...)", file=sys.stderr)
        return 2
    try:
        cmd = host_command(args.host, args.command)
    except LabError as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 1
    os.execvp(cmd[0], cmd)


def _analyse(args) -> int:
    from .runner import RunError, analyse
    try:
        report = analyse(args.dir, args.target)
    except RunError as e:
        print(f"p4cc: {e}", file=sys.stderr)
        return 1
    print(f"report: {report}")
    return 0


def _capacity(_args) -> int:
    from .bmv2_capacity import command
    return command()


def _clean(args) -> int:
    from p4cc_topo.cli import clean_command
    return clean_command(force=args.force, dry_run=args.dry_run)


LINKS_HELP = ("bmv2 only: how its ports get link delay and loss — p4cc (default): p4cc's link "
              "emulator spliced in front of the port; netem: the kernel's netem on the port's "
              "interface, where the kernel has it")


KEEP_HELP = ("what of the results folder stays: all (default for run), series (what `p4cc "
             "analyse` needs: no logs), summary (summary.json, report, plots, plan, params)")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["ctl"]:
        from p4cc_control.cli import main as ctl_main
        return ctl_main(argv[1:])
    ap = argparse.ArgumentParser(prog="p4cc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the experiments").set_defaults(fn=_list)
    r = sub.add_parser("run", help="run an experiment end to end")
    r.add_argument("experiment", nargs="?")
    r.add_argument("--target", default=None, choices=("auto", "embedded", "bmv2", "sim"),
                   help="switch target (auto: bmv2 when installed and able to serve the run, else "
                        "the embedded target; sim: virtual time); default auto, or the "
                        "experiment's own (dc-fct: sim)")
    r.add_argument("--scale", default="default", choices=("default", "paper"),
                   help="paper: the paper's own parameters, in virtual time (--target sim)")
    r.add_argument("--plan", help="run a saved scenario plan (plan.json) exactly")
    r.add_argument("--plan-only", action="store_true",
                   help="write the plan (plan.json in --out) and run nothing")
    r.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a parameter (repeatable)")
    r.add_argument("--out", help="results folder (default results/EXPERIMENT-TIMESTAMP)")
    r.add_argument("--help-params", action="store_true", help="list the parameters and exit")
    r.add_argument("--links", default="p4cc", choices=("p4cc", "netem"), help=LINKS_HELP)
    r.add_argument("--keep", default="all", choices=("all", "series", "summary"), help=KEEP_HELP)
    r.add_argument("--retry-void", type=int, default=0, metavar="N",
                   help="run an arm again, up to N times, while the fidelity monitor finds its "
                        "real-time run unfaithful (docs/fidelity.md); each such run is kept in "
                        "ARM.void-K/ and named in the report, never judged (default 0)")
    r.set_defaults(fn=_run)
    w = sub.add_parser("sweep", help="run an experiment over a grid of parameters × seeds, "
                                     "each point a Ray task (docs/sweeps.md)")
    w.add_argument("experiment")
    w.add_argument("--grid", action="append", metavar="NAME=V1,V2,...",
                   help="a swept parameter and its values (repeatable: the grid is every "
                        "combination; ';' separates values that are lists themselves)")
    w.add_argument("--seeds", type=int, default=1,
                   help="runs per grid point, seeds S, S+1, … from the experiment's seed")
    w.add_argument("--target", default="auto", choices=("auto", "embedded", "bmv2", "sim"),
                   help="as for run; sim: virtual time, one core per point; others: real "
                        "time, one point per node at a time")
    w.add_argument("--scale", default="default", choices=("default", "paper"))
    w.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="a parameter every point shares (repeatable)")
    w.add_argument("--out", help="the sweep's folder (default results/sweep-EXPERIMENT-TIMESTAMP); "
                                 "the same --out continues a sweep")
    w.add_argument("--address", help="a Ray cluster to run on (default: RAY_ADDRESS, else a "
                                     "local runtime with this machine's cores)")
    w.add_argument("--retries", type=int, default=1,
                   help="further tries of a point that fails or whose node dies (default 1)")
    w.add_argument("--keep", default="series", choices=("all", "series", "summary"),
                   help=KEEP_HELP.replace("default for run", "all logs") + "; default series")
    w.add_argument("--links", default="p4cc", choices=("p4cc", "netem"), help=LINKS_HELP)
    w.set_defaults(fn=_sweep)
    for name, what in (("up", "bring a topology up programmed (pipeline, routes, K, link model) in "
                              "network namespaces until Ctrl-C"),
                       ("mininet", "bring a topology up programmed at Mininet's prompt")):
        u = sub.add_parser(name, help=what, description=what)
        u.add_argument("topology", nargs="?" if name == "mininet" else None, default="two_hosts",
                       help="a built-in topology (python -m p4cc_topo list) or a YAML file")
        u.add_argument("--target", default="auto", choices=("auto", "embedded", "bmv2"),
                       help="switch target (auto: bmv2 when installed and able to serve the lab, "
                            "else the embedded target)")
        u.add_argument("--links", default="p4cc", choices=("p4cc", "netem"), help=LINKS_HELP)
        if name == "up":
            u.add_argument("--duration", type=float, help="tear down after this many seconds")
        else:
            u.add_argument("--script", help="run Mininet CLI commands from this file, then exit")
        u.set_defaults(fn=_lab)
    x = sub.add_parser("exec", help="run a command in a host of the running lab "
                                    "(p4cc-host resolves to the built agent)")
    x.add_argument("host")
    x.add_argument("command", nargs=argparse.REMAINDER)
    x.set_defaults(fn=_exec)
    sub.add_parser("bmv2-capacity", help="measure how many packets/s bmv2 forwards on this "
                                         "machine (what --target auto and make run go by); "
                                         "cached").set_defaults(fn=_capacity)
    c = sub.add_parser("clean", help="remove what a killed run left (netns, links, processes)")
    c.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    c.add_argument("--force", action="store_true",
                   help="also tear down runs whose owner is still alive")
    c.set_defaults(fn=_clean)
    a = sub.add_parser("analyse", help="analyse a results folder again (its fidelity records "
                                       "kept), or one whose arms ran outside p4cc (hardware: "
                                       "plan.json + what the agents wrote)")
    a.add_argument("dir", help="the folder: plan.json (p4cc run X --plan-only) and DIR/ARM/...")
    a.add_argument("--target", help="what ran it, for the report (e.g. tofino)")
    a.set_defaults(fn=_analyse)
    sub.add_parser("ctl", help="the P4Runtime controller (p4cc ctl --help)")
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
