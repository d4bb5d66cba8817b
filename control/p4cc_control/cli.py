"""`p4cc ctl` / `python -m p4cc_control`: the controller's command line.

Human output by default, --json for scripts. Every failure is ONE line on
stderr and a non-zero exit code that says which kind (see EXIT CODES in
--help).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from typing import List, Optional

from .errors import P4ccError, ValueOutOfRange
from .operations import POSTCARD_FRAME_LEN

PROG = os.environ.get("P4CC_CTL_PROG", "p4cc ctl")
log = logging.getLogger("p4cc.control")

EXAMPLES = f"""\
examples:
  {PROG} push                                   # install p4src/build/cc_switch.{{json,p4info.bin}}
  {PROG} --target embedded apply --topology topo.yaml --switch s1
  {PROG} apply --plan results/dctcp-queue-X/plan.json --arm kernel-dctcp --switch s1
  {PROG} route --topology two_hosts              # ipv4_lpm entries for a built-in topology
  {PROG} set-k 1,2 20                           # K = 20 packets on ports 1 and 2
  {PROG} set-k 3 30000 --unit bytes             # converted to the target's queue unit
  {PROG} set-loss 2 1%                          # random loss p = 0.01 on egress port 2
  {PROG} postcards --collector-port 4 --collector-ip 10.0.0.100 \\
        --collector-mac 00:00:0a:00:00:64 --switch-ip 10.0.0.254 --sample 10
  {PROG} switch-id 7
  {PROG} add-entry ipv4_lpm --match dst_addr=10.0.1.0/24 --action forward \\
        --param port=1 --param dst_mac=00:00:0a:00:01:01
  {PROG} counters --port 1-3                    # rx/tx packets+bytes, CE marks, drops
  {PROG} reset-counters
  {PROG} read-register postcard_sample_count
  {PROG} watch --interval 1                     # live per-port rates
  {PROG} --target embedded queue 2 --rate 100M --delay-us 250 --depth 120
  {PROG} --target bmv2 queue 2 --rate-pps 8000 --depth 64
  {PROG} --target tofino --addr SWITCH:9559 push  # Stratum: TNA P4Info + bf-p4c output
  {PROG} --target tofino --chip tofino2 --device-config out/ push
  {PROG} --target tofino set-k 132 20             # K = 20 packets = 380 cells on device port 132
  {PROG} --json counters | jq .

exit codes: 0 ok, 1 other error, 2 usage, 3 switch unreachable,
  4 P4Info/pipeline mismatch, 5 unknown table/field/port/name,
  6 value out of range, 7 not primary, 8 target knob failed,
  9 switch rejected a write.
"""


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage + error; the CLI promises one line."""

    def error(self, message):
        sys.stderr.write(f"{PROG}: error: {message} (see --help)\n")
        sys.exit(2)


def _ports(s: str) -> List[int]:
    """'1', '1,3', '1-4', '1-2,7' -> [ints]."""
    out = []
    for part in str(s).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad port list {s!r} (e.g. 1 or 1,3 or 1-4)")
    return out


def _rate(s: str) -> int:
    """'100M', '1.5G', '800k', '1000000' (bits/s) -> int."""
    s = str(s).strip()
    mult = 1
    low = s.lower().rstrip("bps").rstrip("/")
    for suffix, m in (("k", 10**3), ("m", 10**6), ("g", 10**9)):
        if low.endswith(suffix):
            mult, low = m, low[:-1]
            break
    try:
        v = float(low) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad rate {s!r} (e.g. 100M, 1G, 500k bits/s)")
    return int(round(v))


def _kv(s: str):
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {s!r}")
    k, v = s.split("=", 1)
    return k.strip(), v.strip()


def _add_globals(p, suppress: bool):
    """Global options. They are accepted before or after the command
    (`p4cc ctl --json counters` == `p4cc ctl counters --json`): the copies on
    the subcommands default to SUPPRESS so they only override when given."""

    def d(v):
        return argparse.SUPPRESS if suppress else v

    p.add_argument("--addr", default=d(None),
                   help="P4Runtime server host:port (default: the running lab's switch when "
                        "exactly one lab is up, else 127.0.0.1:9559; env P4CC_ADDR)")
    p.add_argument("--switch", "-s", default=d(None),
                   help="which switch of the running lab, or of a topology/plan (if several)")
    p.add_argument("--device-id", type=int, default=d(None),
                   help="P4Runtime device id (default 1, env P4CC_DEVICE_ID)")
    p.add_argument("--election-id", type=int, default=d(1),
                   help="election id for primary arbitration (default 1)")
    p.add_argument("--target", choices=["auto", "bmv2", "embedded", "sim", "tofino"],
                   default=d(None),
                   help="switch kind: queue units and knobs (default auto: the running lab's, "
                        "else embedded; env P4CC_TARGET)")
    p.add_argument("--p4info", default=d(None),
                   help="binary P4Info (default p4src/build/cc_switch.p4info.bin; --target "
                        "tofino: p4src/build/tofino/cc_switch.CHIP.p4info.bin; env P4CC_P4INFO)")
    p.add_argument("--device-config", "--bmv2-json", dest="device_config", default=d(None),
                   help="what a push installs: the bmv2 JSON (default p4src/build/cc_switch.json, "
                        "env P4CC_BMV2_JSON); --target tofino: bf-p4c's output folder or .conf "
                        "(packed into Stratum's BfPipelineConfig) or a packed .pb.bin "
                        "(default build/tofino/CHIP, from make p4-tna)")
    p.add_argument("--chip", choices=["tofino", "tofino2"], default=d(None),
                   help="--target tofino: the chip (default tofino, env P4CC_TOFINO_CHIP)")
    p.add_argument("--json", action="store_true", default=d(False), help="machine-readable JSON on stdout")
    p.add_argument("--timeout", type=float, default=d(5.0), help="connect deadline, s (default 5)")
    p.add_argument("--thrift-port", type=int, default=d(None), help="bmv2 Thrift port (default 9090)")
    p.add_argument("--admin-addr", default=d(None),
                   help="embedded target admin API host:port (default 127.0.0.1:9560, env P4CC_ADMIN_ADDR)")
    p.add_argument("--mtu", type=int, default=d(1500),
                   help="bytes per packet for bytes<->packets conversions (default 1500)")
    p.add_argument("-v", "--verbose", action="store_true", default=d(False), help="log what happens on stderr")


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="P4Runtime controller of p4cc: pipeline, forwarding, ECN K, loss, "
                    "postcards, counters, target queue knobs.",
        epilog=EXAMPLES)
    _add_globals(p, suppress=False)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True

    globals_ = argparse.ArgumentParser(add_help=False)
    _add_globals(globals_, suppress=True)

    def cmd(name, help_, **kw):
        return sub.add_parser(name, help=help_, description=help_, parents=[globals_], **kw)

    cmd("push", "install the pipeline (bmv2 JSON + P4Info), VERIFY_AND_COMMIT; wipes all state")
    cmd("info", "show the connection, the switch's pipeline and the P4Info's entities")
    cmd("show", "show the lab state: routes, ECMP groups, K, RED, loss, postcards, switch id")

    c = cmd("ecmp", "show ECMP groups, or take a member out of one (its flows move, no other)")
    c.add_argument("--remove", nargs=2, type=int, metavar=("GROUP", "PORT"),
                   help="take the member on PORT out of ECMP group GROUP")

    c = cmd("set-k", "set the ECN marking threshold K of egress port(s)")
    c.add_argument("ports", type=_ports, help="port(s): 1 | 1,3 | 1-4")
    c.add_argument("k", type=float, nargs="?", help="threshold value")
    c.add_argument("--unit", choices=["packets", "bytes", "cells"], default="packets",
                   help="unit of K (converted to the target's; default packets)")
    c.add_argument("--clear", action="store_true", help="remove K: the port never marks")

    c = cmd("set-loss", "set random loss on egress port(s) (P4 table port_loss; 0 removes)")
    c.add_argument("ports", type=_ports)
    c.add_argument("loss", help="probability: 0.01 or 1%%")

    c = cmd("postcards", "sample postcards to a collector (clone session 100, truncated)")
    c.add_argument("--collector-port", type=int, help="switch port facing the collector")
    c.add_argument("--collector-ip", help="collector IPv4 address")
    c.add_argument("--collector-mac", help="collector MAC address")
    c.add_argument("--switch-ip", help="source IPv4 of the postcards")
    c.add_argument("--sample", type=int, default=1, help="one postcard per N packets (default 1)")
    c.add_argument("--udp-port", type=int, default=7361, help="collector UDP port (default 7361)")
    c.add_argument("--truncate", type=int, default=None,
                   help="clone-session truncation, bytes (default: the target's: 0 = none on "
                        f"bmv2/embedded, whose P4 program cuts postcards to {POSTCARD_FRAME_LEN} B "
                        "itself (bmv2 accepts only 0); on Tofino the mirror header plus the "
                        "38 bytes a postcard reports on)")
    c.add_argument("--off", action="store_true", help="stop postcards")

    c = cmd("switch-id", "set the switch id written in telemetry")
    c.add_argument("switch_id", type=int)

    for name, help_ in (("route", "install the ipv4_lpm entries of a topology or plan"),
                        ("apply", "apply a topology's or plan's switch configuration: switch id, "
                                  "routes, per-port K and link model, postcards")):
        c = cmd(name, help_)
        src = c.add_mutually_exclusive_group(required=True)
        src.add_argument("--topology", "-t", help="a built-in topology name or a YAML file")
        src.add_argument("--plan", help="a scenario plan (plan.json of a results folder, or "
                                        "`p4cc run X --plan-only`)")
        c.add_argument("--arm", help="which arm of the plan (if several)")

    c = cmd("add-entry", "insert (or with --modify, modify) one table entry by names")
    c.add_argument("table")
    c.add_argument("--match", "-m", type=_kv, action="append", default=[],
                   metavar="FIELD=VALUE")
    c.add_argument("--action", "-a", required=True)
    c.add_argument("--param", "-p", type=_kv, action="append", default=[], metavar="NAME=VALUE")
    c.add_argument("--priority", type=int)
    c.add_argument("--default", action="store_true", help="set the table's default action")
    c.add_argument("--modify", action="store_true", help="modify instead of insert")

    c = cmd("del-entry", "delete one table entry by its match")
    c.add_argument("table")
    c.add_argument("--match", "-m", type=_kv, action="append", default=[],
                   metavar="FIELD=VALUE")
    c.add_argument("--priority", type=int)

    c = cmd("read-table", "list a table's entries (and its default)")
    c.add_argument("table")

    c = cmd("counters", "per-port counters: rx/tx packets+bytes, CE marks, drops")
    c.add_argument("--port", type=_ports, help="only these ports (default: every non-zero port)")

    c = cmd("reset-counters", "zero the per-port counters")
    c.add_argument("--port", type=_ports, help="only these ports (default: all)")

    c = cmd("read-register", "read a register (all indexes, or one)")
    c.add_argument("register")
    c.add_argument("--index", type=int)

    c = cmd("watch", "print per-port counter rates live (Ctrl-C to stop)")
    c.add_argument("--interval", type=float, default=1.0)
    c.add_argument("--count", type=int, help="stop after N samples")
    c.add_argument("--port", type=_ports)

    c = cmd("queue", "target knobs of a port: rate, depth (bmv2, embedded), delay, loss (embedded)")
    c.add_argument("port", type=int, nargs="?")
    c.add_argument("--rate", "--rate-bps", dest="rate_bps", type=_rate,
                   help="line rate in bits/s (100M, 1G); bmv2 converts to packets/s at MTU")
    c.add_argument("--rate-pps", type=int, help="rate in packets/s")
    c.add_argument("--depth", dest="depth_pkts", type=int, help="queue capacity, packets")
    c.add_argument("--delay-us", type=int, help="propagation delay, µs (embedded)")
    c.add_argument("--loss", help="link loss probability (embedded): 0.01 or 1%%")
    c.add_argument("--show", action="store_true", help="show the ports' settings")
    return p


# -- output -----------------------------------------------------------------

def _out(args, data, human: str):
    if args.json:
        print(json.dumps(data, indent=None if args.cmd == "watch" else 2, sort_keys=True,
                         default=str))
    else:
        print(human)


def _fmt_counters(rows: dict) -> str:
    if not rows:
        return "no traffic counted on any port"
    head = ("port", "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "ce_marks", "in_drops",
            "loss_drops")
    lines = ["{:>4} {:>10} {:>12} {:>10} {:>12} {:>9} {:>9} {:>10}".format(*head)]
    for p, r in rows.items():
        lines.append("{:>4} {:>10} {:>12} {:>10} {:>12} {:>9} {:>9} {:>10}".format(
            p, r["rx_packets"], r["rx_bytes"], r["tx_packets"], r["tx_bytes"], r["ce_marks"],
            r["ingress_drops"], r["loss_drops"]))
    return "\n".join(lines)


def _fmt_rates(sample: dict) -> str:
    t = time.strftime("%H:%M:%S", time.localtime(sample["time"]))
    lines = [f"{t}  rates per second over {sample['dt']:.2f}s",
             "{:>4} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}".format(
                 "port", "rx_pps", "rx_Mbps", "tx_pps", "tx_Mbps", "ce/s", "drop/s", "loss/s")]
    for p, r in sample["rates"].items():
        lines.append("{:>4} {:>9.0f} {:>9.2f} {:>9.0f} {:>9.2f} {:>8.0f} {:>8.0f} {:>8.0f}".format(
            p, r["rx_packets"], r["rx_bytes"] * 8e-6, r["tx_packets"], r["tx_bytes"] * 8e-6,
            r["ce_marks"], r["ingress_drops"], r["loss_drops"]))
    if not sample["rates"]:
        lines.append("  (no traffic counted yet)")
    return "\n".join(lines)


# -- commands -----------------------------------------------------------------

READ_ONLY = {"info", "show", "counters", "read-register", "watch", "read-table"}

BUILTIN = {"addr": ("P4CC_ADDR", "127.0.0.1:9559"), "device_id": ("P4CC_DEVICE_ID", 1),
           "target": ("P4CC_TARGET", "auto"), "admin_addr": ("P4CC_ADMIN_ADDR", "127.0.0.1:9560"),
           "thrift_port": ("P4CC_THRIFT_PORT", 9090)}
#: A target the lab's record names -> the controller's target class.
LAB_TARGETS = {"embedded": "embedded", "sim": "embedded", "bmv2": "bmv2"}


def switch_config(args):
    """The p4cc_topo.plan.SwitchConfig `route`/`apply` install: from a plan
    (one arm, one switch) or from a topology through the one routing."""
    from p4cc_topo import TopologyError, load_topology
    from p4cc_topo.plan import Plan, PlanError, switch_configs

    try:
        if args.plan:
            plan = Plan.load(args.plan)
            if args.arm is None and len(plan.arms) > 1:
                raise ValueOutOfRange(f"{args.plan} has {len(plan.arms)} arms: choose one with "
                                      f"--arm ({', '.join(a.name for a in plan.arms)})")
            configs = (plan.arm(args.arm) if args.arm else plan.arms[0]).switches
        else:
            configs = switch_configs(load_topology(args.topology))
    except (PlanError, TopologyError) as e:
        raise ValueOutOfRange(str(e).splitlines()[0]) from None
    if args.switch is None:
        if len(configs) > 1:
            raise ValueOutOfRange(f"{len(configs)} switches: choose one with --switch "
                                  f"({', '.join(configs)})")
        return next(iter(configs.values()))
    try:
        return configs[args.switch]
    except KeyError:
        raise ValueOutOfRange(f"no switch '{args.switch}' (known: {', '.join(configs)})") from None


def lab_switch(name: Optional[str]) -> Optional[dict]:
    """The running lab's switch (p4cc up / p4cc mininet / an experiment's
    run) when exactly one lab is up; None when none is."""
    from p4cc_topo.state import owner_alive, read_states

    labs = sorted((st for _, st in read_states().values()
                   if st and st.get("status") == "up" and st.get("switches") and owner_alive(st)),
                  key=lambda s: s["run_id"])
    if not labs:
        return None
    if len(labs) > 1:
        raise ValueOutOfRange(f"{len(labs)} labs are up ({', '.join(s['run_id'] for s in labs)}): "
                              "choose one with --addr HOST:PORT (or P4CC_ADDR)")
    sws = labs[0]["switches"]
    if name is None:
        if len(sws) > 1:
            raise ValueOutOfRange(f"lab {labs[0]['run_id']} has {len(sws)} switches: choose one "
                                  f"with --switch ({', '.join(sws)})")
        name = next(iter(sws))
    if name not in sws:
        return None  # a switch of a topology/plan (route/apply), not of the lab
    return dict(sws[name], run_id=labs[0]["run_id"])


def _resolve(args):
    """Where to connect: the option if given, else the environment, else the
    running lab's switch, else built-in defaults. `auto` targets resolve to
    the lab's target, else the embedded target (p4cc's default everywhere)."""
    explicit = args.addr or os.environ.get("P4CC_ADDR")
    lab = None if explicit else lab_switch(getattr(args, "switch", None))
    from_lab = {}
    args.port_ifaces = None
    if lab:
        # bmv2's delay and loss go on the port's interface (netem): the lab knows them.
        args.port_ifaces = {int(p): i for p, i in (lab.get("port_ifaces") or {}).items()}
        from_lab = {"addr": lab.get("grpc_addr"), "device_id": lab.get("device_id"),
                    "target": LAB_TARGETS.get(lab.get("target")), "admin_addr": lab.get("admin_addr"),
                    "thrift_port": lab.get("thrift_port")}
        log.info("using lab %s switch %s at %s", lab["run_id"], lab.get("name"), lab.get("grpc_addr"))
    for key, (env, default) in BUILTIN.items():
        if getattr(args, key, None) is not None:
            continue
        val = os.environ.get(env) or from_lab.get(key) or default
        setattr(args, key, type(default)(val))
    if args.target == "auto":
        args.target = from_lab.get("target") or "embedded"


async def _run(args) -> int:
    from .switch import AsyncSwitch, default_device_config_path, default_p4info_path
    from .targets import make_target

    _resolve(args)
    if args.target == "sim":
        args.target = "embedded"  # the simulator serves the embedded target's API
    if args.target not in ("bmv2", "embedded", "tofino"):
        raise ValueOutOfRange(f"unknown target '{args.target}' (auto, bmv2, embedded, sim, tofino)")
    target = make_target(args.target, thrift_port=args.thrift_port,
                         admin_addr=args.admin_addr, mtu=args.mtu, port_ifaces=args.port_ifaces,
                         chip=args.chip)

    if args.cmd == "queue":  # target knobs only: no P4Runtime session
        return await _queue(args, target)
    if args.cmd in ("route", "apply"):  # a bad plan/topology fails before connecting
        args.cfg = switch_config(args)

    # A target with a program of its own (Tofino) brings its P4Info and
    # device config, unless given; the environment still overrides.
    p4info = args.p4info or os.environ.get("P4CC_P4INFO") or target.default_p4info() \
        or default_p4info_path()
    args.device_config = (args.device_config or os.environ.get("P4CC_BMV2_JSON")
                          or target.default_device_config() or default_device_config_path())
    sw = AsyncSwitch(args.addr, args.device_id, p4info, args.device_config,
                     device_config_loader=target.load_device_config,
                     election_id=args.election_id, timeout=args.timeout,
                     # Only `watch` outlives a switch restart; one-shot
                     # commands report the failure instead.
                     reconnect=args.cmd == "watch")
    await sw.open(primary=args.cmd not in READ_ONLY, push=args.cmd == "push",
                  check=args.cmd not in ("push", "info"))
    ops = sw.ops(target)
    try:
        return await _dispatch(args, sw, ops, target)
    finally:
        await sw.close()


async def _dispatch(args, sw, ops, target) -> int:
    c = args.cmd
    if c == "push":
        _out(args, {"pushed": True, "p4info": sw.p4info.source, "addr": sw.addr,
                    "device_id": sw.device_id},
             f"pipeline pushed to {sw.addr} (device {sw.device_id}): "
             f"{os.path.basename(sw.p4info.source)} + "
             f"{os.path.basename(os.path.normpath(args.device_config))}")
    elif c == "info":
        version = await sw.conn.capabilities()
        theirs = await sw.switch_p4info()
        status = ("no pipeline" if theirs is None else
                  "matches the local P4Info" if sw.p4info.difference(theirs) is None else
                  f"DIFFERS: {sw.p4info.difference(theirs)}")
        summ = sw.p4info.summary()
        from .operations import missing_names

        missing = missing_names(sw.p4info)
        data = {"addr": sw.addr, "device_id": sw.device_id, "p4runtime_api": version,
                "pipeline": status, "p4info": sw.p4info.source, "target": target.describe(),
                "entities": summ, "controller_names_missing": missing}
        td = target.describe()
        extra = ", ".join(f"{k} {v}" for k, v in td.items()
                          if k not in ("target", "depth_unit", "mtu") and v)
        lines = [f"switch {sw.addr} device {sw.device_id}, P4Runtime {version}",
                 f"pipeline: {status}",
                 f"target: {td['target']} (queue depth in {td['depth_unit']}, MTU {td['mtu']}"
                 + (f", {extra})" if extra else ")"), "tables:"]
        for name, t in summ["tables"].items():
            lines.append(f"  {name} [{t['alias']}] size {t['size']} match "
                         f"{t['match'] or '{}'} actions {', '.join(t['actions'])}")
        lines.append("counters: " + ", ".join(f"{n} ({c_['unit']} x{c_['size']})"
                                              for n, c_ in summ["counters"].items()))
        lines.append("registers: " + ", ".join(f"{n} (bit<{r['bitwidth']}> x{r['size']})"
                                               for n, r in summ["registers"].items()))
        lines.append("controller names: " + ("all resolve" if not missing else
                                             "MISSING: " + "; ".join(missing)))
        _out(args, data, "\n".join(lines))
    elif c == "show":
        routes = [e.to_dict() for e in await sw.tables["ipv4_lpm"].read()]
        ks = await ops.read_k()
        loss = await ops.read_loss()
        pc = await ops.read_postcards()
        sid = await sw.tables["switch_config"].read_default()
        ecmp = await ops.read_ecmp()
        red = await ops.read_red()
        data = {"routes": routes, "k": ks, "loss": loss, "postcards": pc,
                "switch_id": sid.params.get("switch_id"),
                "ecmp_groups": {g: {b: list(v) for b, v in bk.items()} for g, bk in ecmp.items()},
                "red": {p: [list(x) for x in r] for p, r in red.items()}}
        lines = [f"switch id: {data['switch_id']}", f"routes ({len(routes)}):"]
        for r in sorted(routes, key=lambda r: r["match"].get("dst_addr", "")):
            lines.append(f"  {r['match'].get('dst_addr')} -> {r['action']} "
                         + " ".join(f"{k}={v}" for k, v in r["params"].items()))
        for g, bk in ecmp.items():
            per = {}
            for port, _ in bk.values():
                per[port] = per.get(port, 0) + 1
            lines.append(f"ECMP group {g}: " + ", ".join(
                f"port {p} ({n} of {len(bk)} buckets)" for p, n in sorted(per.items())))
        for p, ranges in red.items():
            lines.append(f"RED on port {p}: {len(ranges)} depth ranges, from depth "
                         f"{ranges[0][0][0]} at p={ranges[0][1] / 65536:.3g}")
        lines.append("K (" + target.depth_unit + "): " +
                     (", ".join(f"port {p}={k}" for p, k in ks.items()) or "none"))
        lines.append("loss: " + (", ".join(f"port {p}={v:g}" for p, v in loss.items()) or "none"))
        if pc["action"] and pc["action"].endswith("enable_postcards"):
            cs = pc["clone_session"]
            lines.append("postcards: " + " ".join(f"{k}={v}" for k, v in pc["params"].items())
                         + (f", clone session {cs['session_id']} -> ports "
                            f"{[r[0] for r in cs['replicas']]} truncate "
                            f"{cs['packet_length_bytes']}" if cs else ", NO clone session"))
        else:
            lines.append("postcards: off")
        _out(args, data, "\n".join(lines))
    elif c == "ecmp":
        if args.remove:
            res = await ops.ecmp_remove_member(*args.remove)
            _out(args, res, f"ECMP group {res['group_id']}: port {res['removed_port']} removed, "
                            f"buckets {res['moved_buckets']} moved to the other members")
        else:
            res = await ops.read_ecmp()
            _out(args, {g: {b: list(v) for b, v in bk.items()} for g, bk in res.items()},
                 "\n".join(f"group {g}: " + " ".join(f"{b}->{v[0]}" for b, v in bk.items())
                           for g, bk in res.items()) or "no ECMP groups")
    elif c == "set-k":
        if args.clear:
            res = [await ops.clear_k(p) for p in args.ports]
            _out(args, res, "\n".join(f"port {r['port']}: K cleared (never marks)" for r in res))
        else:
            if args.k is None:
                raise ValueOutOfRange("set-k needs a value (or --clear)")
            res = [await ops.set_k(p, args.k, args.unit) for p in args.ports]
            _out(args, res, "\n".join(
                f"port {r['port']}: K = {r['k']:g} {r['unit']} -> k_depth {r['k_depth']} "
                f"{r['depth_unit']}" for r in res))
    elif c == "set-loss":
        from .operations import parse_probability

        p_ = parse_probability(args.loss)
        res = [await ops.set_loss(port, p_) for port in args.ports]
        _out(args, res, "\n".join(
            f"port {r['port']}: loss {r['loss']:g} -> threshold_16 {r['threshold_16']}"
            + (" (entry removed)" if r["threshold_16"] == 0 else "") for r in res))
    elif c == "postcards":
        if args.off:
            res = await ops.disable_postcards()
            _out(args, res, "postcards off (default NoAction, clone session 100 deleted)")
        else:
            missing = [n for n in ("collector_port", "collector_ip", "collector_mac", "switch_ip")
                       if getattr(args, n) is None]
            if missing:
                raise ValueOutOfRange("postcards needs " + ", ".join(
                    "--" + m.replace("_", "-") for m in missing) + " (or --off)")
            res = await ops.enable_postcards(args.collector_port, args.collector_ip,
                                             args.collector_mac, args.switch_ip, args.sample,
                                             args.udp_port, args.truncate)
            _out(args, res, f"postcards on: 1 in {res['sample_one_in_n']} packets -> clone "
                            f"session 100 -> port {res['collector_port']} (truncate "
                            f"{res['truncate']} B), {res['switch_ip_addr']} -> "
                            f"{res['collector_ip_addr']}:{res['collector_udp_port']} "
                            f"({res['collector_mac_addr']})")
    elif c == "switch-id":
        res = await ops.set_switch_id(args.switch_id)
        _out(args, res, f"switch id = {res['switch_id']}")
    elif c in ("route", "apply"):
        cfg = args.cfg
        if c == "route":
            groups = [await ops.install_ecmp_group(g)
                      for _, g in sorted(getattr(cfg, "ecmp_groups", {}).items())]
            res = {"switch": cfg.name, "ecmp_groups": groups,
                   "routes": await ops.install_routes(cfg.routes)}
        else:
            res = await ops.apply_switch(cfg)
        entries = res["routes"]
        lines = [f"{len(entries)} route(s) on {res['switch']}:"]
        for e in entries:
            if "group_id" in e["params"]:
                lines.append(f"  {e['match']['dst_addr']:>18} -> ECMP group "
                             f"{e['params']['group_id']}  (host {e['host']})")
            else:
                lines.append(f"  {e['match']['dst_addr']:>18} -> port {e['params']['port']} "
                             f"dst_mac {e['params']['dst_mac']}  (host {e['host']})")
        for g in res.get("ecmp_groups") or []:
            lines.append(f"ECMP group {g['group_id']}: ports "
                         f"{', '.join(str(m['port']) for m in g['members'])} "
                         f"({g['buckets']} buckets)")
        if "switch_id" in res:
            lines.append(f"switch id = {res['switch_id']}")
        for port, done in (res.get("ports") or {}).items():
            lines.append(f"port {port}: " + json.dumps(done, sort_keys=True, default=str))
        _out(args, res, "\n".join(lines))
    elif c == "add-entry":
        t = sw.tables[args.table]
        params = dict(args.param)
        if args.default:
            await t.set_default(args.action, params)
            what = "default action set"
        elif args.modify:
            await t.modify(dict(args.match), args.action, params, args.priority)
            what = "entry modified"
        else:
            await t.insert(dict(args.match), args.action, params, args.priority)
            what = "entry inserted"
        _out(args, {"table": t.name, "match": dict(args.match), "action": args.action,
                    "params": params, "result": what},
             f"{t.name}: {what}: {dict(args.match) or '(default)'} -> {args.action} {params}")
    elif c == "del-entry":
        t = sw.tables[args.table]
        await t.delete(dict(args.match), args.priority)
        _out(args, {"table": t.name, "deleted": dict(args.match)},
             f"{t.name}: entry {dict(args.match)} deleted")
    elif c == "read-table":
        t = sw.tables[args.table]
        entries = await t.read()
        d = await t.read_default() if not t.info.is_const else None
        data = {"table": t.name, "entries": [e.to_dict() for e in entries],
                "default": d.to_dict() if d else None}
        lines = [f"{t.name}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"]
        for e in entries:
            lines.append(f"  {e.match} -> {e.action} {e.params}"
                         + (f" priority {e.priority}" if e.priority else ""))
        if d:
            lines.append(f"  default -> {d.action} {d.params}")
        _out(args, data, "\n".join(lines))
    elif c == "counters":
        rows = await ops.port_counters(args.port)
        _out(args, {str(p): r for p, r in rows.items()}, _fmt_counters(rows))
    elif c == "reset-counters":
        res = await ops.reset_port_counters(args.port)
        _out(args, res, f"per-port counters reset ({res['reset']})")
    elif c == "read-register":
        reg = sw.registers[args.register]
        vals = await ops.read_register(args.register, args.index)
        _out(args, {"register": reg.name, "values": {str(i): v for i, v in vals.items()}},
             "\n".join(f"{reg.name}[{i}] = {v}" for i, v in sorted(vals.items())))
    elif c == "watch":
        tty = sys.stdout.isatty() and not args.json

        def emit(sample):
            if "error" in sample:
                if args.json:
                    print(json.dumps(sample, sort_keys=True), flush=True)
                else:
                    print(f"{time.strftime('%H:%M:%S')}  {sample['error']} (retrying)",
                          flush=True)
                return
            if args.json:
                print(json.dumps({"time": sample["time"], "dt": sample["dt"],
                                  "rates": {str(p): r for p, r in sample["rates"].items()}},
                                 sort_keys=True), flush=True)
            else:
                if tty:
                    sys.stdout.write("\x1b[H\x1b[2J")
                print(_fmt_rates(sample), flush=True)
        await ops.watch(args.interval, args.count, args.port, emit)
    return 0


async def _queue(args, target) -> int:
    from .operations import parse_probability

    if args.show or args.port is None:
        table = await asyncio.to_thread(
            target.port_table if hasattr(target, "port_table") else target.port_settings)
        shown = ("iface", "rate_bps", "rate_pps", "delay_us", "loss", "depth_pkts",
                 "queue_len", "tx_pkts", "tail_drops", "link_loss_drops")
        lines = [f"{target.name} ports:"] + [
            f"  port {p}: " + " ".join(f"{k}={s[k]}" for k in shown if k in s)
            for p, s in sorted(table.items())]
        if not table:
            lines.append("  (nothing set through this controller)")
        _out(args, {str(p): s for p, s in table.items()}, "\n".join(lines))
        return 0
    settings = {"rate_bps": args.rate_bps, "rate_pps": args.rate_pps,
                "depth_pkts": args.depth_pkts, "delay_us": args.delay_us,
                "loss": parse_probability(args.loss) if args.loss is not None else None}
    applied = await asyncio.to_thread(target.set_port, args.port, **settings)
    _out(args, {"port": args.port, "applied": applied},
         f"{target.name} port {args.port}: " + " ".join(f"{k}={v}" for k, v in applied.items()))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    try:
        return asyncio.run(_run(args))
    except P4ccError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head`
        return 0
    except Exception as e:  # a bug: still one line, traceback with -v
        if args.verbose:
            logging.exception("internal error")
        sys.stderr.write(f"{PROG}: internal error: {type(e).__name__}: {e}\n")
        return 1
