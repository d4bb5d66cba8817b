"""What differs between targets, behind one interface.

What differs:
  * the unit of the queue depth the data plane compares K against
    (bmv2 and the embedded target: packets; Tofino: 80-byte cells), so a K
    given in packets, bytes or cells is converted here and nowhere else;
  * the knobs that are not P4Runtime: queue rate/depth (bmv2, through its
    Thrift runtime CLI) and line rate / delay / loss / depth per port (the
    embedded target, through its HTTP+JSON admin API);
  * what a pipeline push carries: the bmv2 JSON (bmv2, embedded) or
    Stratum's BfPipelineConfig packed from bf-p4c's output (Tofino), and
    which P4Info goes with it;
  * how postcard copies are cut: the v1model program truncates them
    itself; on Tofino the mirror session does (clone-session truncation).

Byte <-> packet conversions assume full-size packets of `mtu` bytes (1500
by default): a queue of B bytes holds ceil(B / mtu) MTU-sized packets. This
is the convention of the DCTCP paper's K (K = 20 packets = 30 KB at 1500 B).
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from typing import Dict, List, Optional

from .errors import PipelineMismatch, TargetError, UnknownPort, ValueOutOfRange

UNITS = ("packets", "bytes", "cells")
CELL_BYTES = 80  # Tofino queue accounting unit (constants.p4 DEPTH_UNIT_CELLS80)
#: The part of a reported packet a postcard needs (constants.p4
#: POSTCARD_REPORTED_BYTES: Ethernet, IPv4, the L4 ports).
POSTCARD_REPORTED_BYTES = 38
#: An Ethernet header without FCS: what a frame adds to an IP packet.
ETH_HEADER_BYTES = 14
#: The TNA program's postcard mirror header (POSTCARD_MIRROR_BYTES and
#: postcard_mirror_h in p4src/tna/cc_switch.p4).
POSTCARD_MIRROR_BYTES_TNA = 31


def _check_knobs(settings: dict) -> dict:
    """Range-check port settings before any target sees them: the one
    check every path shares (plans, `p4cc ctl queue`, the lab)."""
    from p4cc_topo.plan import PlanError, check_link_model

    try:
        return check_link_model(settings)
    except PlanError as e:
        raise ValueOutOfRange(str(e)) from None


def admin_http(addr: str, method: str, path: str, body: Optional[dict] = None,
               timeout: float = 5.0, who: str = "embedded switch"):
    """One request to an admin API (the embedded switch's, the simulator's
    or the link emulator's: HTTP + JSON); its errors as the controller's."""
    url = f"http://{addr}{path}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace").strip()
        try:
            text = json.loads(text).get("error", text)
        except Exception:
            pass
        if e.code == 404:
            raise UnknownPort(f"{who}: {text or 'not found'} ({method} {path})") from None
        if e.code in (400, 422):
            raise ValueOutOfRange(f"{who} refused {method} {path}: {text}") from None
        raise TargetError(f"{who} admin API: HTTP {e.code} on {method} {path}: {text}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise TargetError(f"{who} admin API unreachable at {addr}: {reason}") from None
    return json.loads(raw) if raw.strip() else None


class Target:
    """Base: packet-unit queue, no knobs, ports unknown."""

    name = "generic"
    depth_unit = "packets"
    #: Whether set_port() can slow a port's queue (rate/depth knobs).
    shapes_ports = False
    #: Clone-session truncation of postcard copies (packet_length_bytes);
    #: 0 = none: the v1model program truncates postcards itself.
    postcard_truncate = 0
    #: The units the switch's clock can count in, coarsest first (set_clock
    #: picks the last): bmv2's v1model counts µs.
    clock_units = ("us",)

    def __init__(self, mtu: int = 1500):
        if not 64 <= mtu <= 65535:
            raise ValueOutOfRange(f"mtu {mtu} out of range (64..65535)")
        self.mtu = mtu
        # Port settings applied through this object, re-applied after a
        # switch restart (the switch forgets them).
        self.applied: Dict[int, dict] = {}

    # -- units ----------------------------------------------------------------
    def depth(self, value: float, unit: str = "packets") -> int:
        """A queue depth in the unit this target's data plane counts."""
        if unit not in UNITS:
            raise ValueOutOfRange(f"unknown unit '{unit}' (use {', '.join(UNITS)})")
        if value < 0:
            raise ValueOutOfRange(f"queue depth {value} {unit} is negative")
        if self.depth_unit == unit:
            return int(math.ceil(value))
        if self.depth_unit == "packets":
            nbytes = value * (CELL_BYTES if unit == "cells" else 1)
            return int(math.ceil(nbytes / self.mtu))
        # cells
        if unit == "bytes":
            return int(math.ceil(value / CELL_BYTES))
        return int(math.ceil(value * math.ceil(self.mtu / CELL_BYTES)))  # packets

    def depth_to(self, depth: int, unit: str) -> float:
        """Inverse of depth(), for display."""
        if unit == self.depth_unit:
            return depth
        if self.depth_unit == "packets":
            return depth * self.mtu / (CELL_BYTES if unit == "cells" else 1)
        return depth * CELL_BYTES if unit == "bytes" else depth / math.ceil(self.mtu / CELL_BYTES)

    # -- ports ----------------------------------------------------------------
    def ports(self) -> Optional[List[int]]:
        """Ports the switch has, or None when this target cannot tell."""
        return None

    def check_port(self, port: int, width: int = 9):
        if not 0 <= int(port) < (1 << width):
            raise UnknownPort(f"port {port} out of range (0..{(1 << width) - 1})")
        known = self.ports()
        if known is not None and int(port) not in known:
            have = ", ".join(str(p) for p in sorted(known)) or "none"
            raise UnknownPort(f"unknown port {port}: the {self.name} switch has ports {have}")

    # -- knobs ----------------------------------------------------------------
    def set_port(self, port: int, **settings) -> dict:
        settings = _check_knobs(settings)
        if not settings:
            raise ValueOutOfRange("nothing to set: give rate, depth, delay or loss")
        self.check_port(port)
        applied = self._apply(int(port), settings)
        self.applied.setdefault(int(port), {}).update(applied)
        return applied

    def _apply(self, port: int, settings: dict) -> dict:
        raise TargetError(f"the {self.name} target has no port knobs here")

    @classmethod
    def problems(cls, settings: dict, **facts) -> List[str]:
        """What of a port's link model (PortConfig.link_model()) this kind of
        target cannot apply, checked before anything is built; ``facts``
        says what the machine offers (``netem``)."""
        return []

    def port_settings(self) -> Dict[int, dict]:
        return {p: dict(s) for p, s in self.applied.items()}

    # -- registers outside P4Runtime ---------------------------------------------
    def read_register(self, name: str, index: Optional[int] = None) -> Dict[int, int]:
        """For servers whose P4Runtime cannot read registers (bmv2)."""
        raise TargetError(f"the {self.name} target has no other way to read registers")

    def write_register(self, name: str, index: int, value: int):
        raise TargetError(f"the {self.name} target has no other way to write registers")

    def set_clock(self, unit: str) -> None:
        if unit not in self.clock_units:
            raise TargetError(f"the {self.name} target's clock counts {' or '.join(self.clock_units)}")

    def reapply(self):
        """After a switch restart: put back every knob set through us."""
        for port, s in self.applied.items():
            self._apply(port, dict(s))

    def describe(self) -> dict:
        return {"target": self.name, "depth_unit": self.depth_unit, "mtu": self.mtu}

    # -- the pipeline ----------------------------------------------------------
    def default_p4info(self) -> Optional[str]:
        """The P4Info this target's program has (None: the v1model one)."""
        return None

    def default_device_config(self) -> Optional[str]:
        """Where its device config is (None: the v1model program's JSON)."""
        return None

    def load_device_config(self, path: str) -> bytes:
        """The p4_device_config bytes of a pipeline push, from `path`."""
        if not os.path.isfile(path):
            raise PipelineMismatch(f"bmv2 JSON not found: {path}")
        with open(path, "rb") as f:
            return f.read()

    def check_mirror_port(self, port: int) -> None:
        """A port a clone session may send copies to."""


class Bmv2Target(Target):
    """bmv2 simple_switch_grpc: queue depth in packets; queue rate (packets/s)
    and depth (packets) per egress port through the Thrift runtime, driven by
    simple_switch_CLI. That CLI is a Python 2/3 script that imports Debian's
    python3-thrift, so it is run with /usr/bin/python3 explicitly (the
    project venv's or pyenv's python may not see thrift).

    bmv2 has no propagation delay or random loss of its own. A port the lab
    spliced p4cc's link emulator in front of (p4cc_topo.links; ``link_ports``
    served at ``link_admin_addr``) gets them there; otherwise, where the
    kernel has netem, on the port's interface."""

    name = "bmv2"
    shapes_ports = True

    def __init__(self, thrift_port: int = 9090, thrift_ip: str = "127.0.0.1", mtu: int = 1500,
                 cli: Optional[str] = None, python: str = "/usr/bin/python3",
                 port_ifaces: Optional[Dict[int, str]] = None,
                 link_admin_addr: Optional[str] = None, link_ports: Optional[List[int]] = None):
        super().__init__(mtu)
        self.thrift_port, self.thrift_ip = thrift_port, thrift_ip
        self.port_ifaces = {int(p): i for p, i in (port_ifaces or {}).items()}
        self.link_admin_addr = link_admin_addr
        self.link_ports = {int(p) for p in (link_ports or [])}
        self.cli = cli or os.environ.get("P4CC_SIMPLE_SWITCH_CLI") or shutil.which("simple_switch_CLI")
        self.python = python
        self._ports_cache = None
        self._thrift_ok = False

    def _run_cli(self, commands: List[str]) -> str:
        if not self.cli:
            raise TargetError("simple_switch_CLI not found on PATH: install bmv2 "
                              "(behavioral-model `make install`) or set P4CC_SIMPLE_SWITCH_CLI")
        if not os.path.exists(self.python):
            raise TargetError(f"{self.python} not found: simple_switch_CLI needs Debian's python3 "
                              "with python3-thrift (apt-get install python3 python3-thrift)")
        if not self._thrift_ok:
            probe = subprocess.run([self.python, "-c", "import thrift"], capture_output=True)
            if probe.returncode != 0:
                raise TargetError("python3-thrift missing for simple_switch_CLI: "
                                  "apt-get install python3-thrift")
            self._thrift_ok = True
        try:
            p = subprocess.run([self.python, self.cli, "--thrift-port", str(self.thrift_port),
                                "--thrift-ip", self.thrift_ip],
                               input="\n".join(commands) + "\n", capture_output=True,
                               text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise TargetError(f"simple_switch_CLI timed out on thrift port {self.thrift_port}") from None
        out = p.stdout + p.stderr
        for pat, msg in ((r"Could not connect|TTransportException|Connection refused",
                          f"bmv2 Thrift server unreachable at {self.thrift_ip}:{self.thrift_port}"),
                         (r"No module named '?(\w+)", "simple_switch_CLI cannot import its modules"),
                         (r"Traceback", "simple_switch_CLI crashed"),
                         (r"(Error|Invalid)[^\n]*", "simple_switch_CLI refused the command")):
            m = re.search(pat, out)
            if m:
                raise TargetError(f"{msg}: {m.group(0).strip()}")
        if p.returncode != 0:
            raise TargetError(f"simple_switch_CLI exited {p.returncode}: {out.strip()[-200:]}")
        return out

    def ports(self) -> Optional[List[int]]:
        if self._ports_cache is None:
            try:
                out = self._run_cli(["show_ports"])
            except TargetError:
                return None  # no Thrift here: only range checks
            # runtime_CLI's show_ports prints centred columns:
            #   "    1         veth1        UP     "
            ports = [int(m.group(1)) for m in re.finditer(
                r"^(?:RuntimeCmd:)?\s*(\d+)\s+\S+\s+(?:UP|DOWN)\b", out, re.M)]
            self._ports_cache = ports
        return self._ports_cache

    @classmethod
    def problems(cls, settings: dict, netem: bool = False, links: str = "p4cc",
                 link_emulator: bool = True, **facts) -> List[str]:
        """Delay and loss need p4cc's link emulator (``links="p4cc"``, built
        with the switch) or, with ``links="netem"``, the kernel's netem."""
        out = []
        for k in ("delay_us", "loss"):
            if not settings.get(k):
                continue
            if links == "netem" and not netem:
                out.append(f"{k}={settings[k]} needs netem (sch_netem), which this kernel lacks; "
                           "drop --links netem (p4cc's link emulator applies it)")
            elif links != "netem" and not link_emulator:
                out.append(f"{k}={settings[k]} needs p4cc's link emulator (p4cc-link), which is "
                           "not built: run `make setup`")
        return out

    def _netem(self, port: int, delay_us, loss) -> None:
        iface = self.port_ifaces.get(port)
        if iface is None:
            raise TargetError(f"bmv2 has no per-port delay or loss: netem on port {port}'s "
                              "interface needs the lab's interface names (or use the embedded target)")
        args = ["tc", "qdisc", "replace", "dev", iface, "root", "netem"]
        if delay_us:
            args += ["delay", f"{int(delay_us)}us"]
        if loss:
            args += ["loss", f"{float(loss) * 100:.6g}%"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            raise TargetError(f"netem on {iface} failed ({' '.join(args)}): "
                              f"{(r.stderr or r.stdout).strip()[-200:]} — this kernel may lack "
                              "sch_netem; use the embedded target")

    def _link(self, port: int, delay_us, loss) -> None:
        admin_http(self.link_admin_addr, "PUT", f"/ports/{port}",
                   {"delay_us": int(delay_us), "loss": float(loss)}, who="bmv2's link emulator")

    def link_ports_table(self) -> Dict[int, dict]:
        """GET /ports of the link emulator, as {switch port: its egress
        link} (the end facing the peer carries the switch port's number)."""
        if not self.link_admin_addr:
            return {}
        data = admin_http(self.link_admin_addr, "GET", "/ports", who="bmv2's link emulator")
        return {int(p["port"]): p for p in data or [] if int(p["port"]) in self.link_ports}

    def _apply(self, port: int, settings: dict) -> dict:
        cmds, applied = [], {}
        if "delay_us" in settings or "loss" in settings:
            before = self.applied.get(port, {})
            delay = settings.get("delay_us", before.get("delay_us", 0))
            loss = settings.get("loss", before.get("loss", 0.0))
            if port in self.link_ports and self.link_admin_addr:
                self._link(port, delay, loss)
            elif delay or loss:
                if not self.port_ifaces:
                    raise TargetError(
                        f"bmv2 has no per-port delay or loss: port {port} has no link emulator "
                        "in front of it (p4cc's labs splice one in where the plan has a delay "
                        "or loss)")
                self._netem(port, delay, loss)
            applied.update({k: settings[k] for k in ("delay_us", "loss") if k in settings})
        if "rate_bps" in settings and "rate_pps" in settings:
            raise ValueOutOfRange("give rate_bps or rate_pps, not both")
        if "rate_bps" in settings:
            # bmv2 meters its queue in packets/s: convert at full-sized
            # frames, an MTU-sized packet in its Ethernet header, since a
            # rate counts the frame as sent (as the embedded target's does;
            # at the bare MTU the link ran 14/1500 = 0.9 % fast).
            pps = max(1, int(round(settings["rate_bps"] / (8 * (self.mtu + ETH_HEADER_BYTES)))))
            cmds.append(f"set_queue_rate {pps} {port}")
            applied["rate_pps"] = pps
        if "rate_pps" in settings:
            cmds.append(f"set_queue_rate {int(settings['rate_pps'])} {port}")
            applied["rate_pps"] = int(settings["rate_pps"])
        if "depth_pkts" in settings:
            cmds.append(f"set_queue_depth {int(settings['depth_pkts'])} {port}")
            applied["depth_pkts"] = int(settings["depth_pkts"])
        if cmds:
            self._run_cli(cmds)
        return applied

    def reapply(self):
        self._ports_cache = None
        super().reapply()

    # bmv2's P4Runtime server answers UNIMPLEMENTED for RegisterEntry; its
    # Thrift runtime has register_read/register_write.
    def read_register(self, name: str, index: Optional[int] = None) -> Dict[int, int]:
        cmd = f"register_read {name}" + ("" if index is None else f" {int(index)}")
        out = self._run_cli([cmd])
        m = re.search(re.escape(name) + r"\[(\d+)\]=\s*(\d+)", out)
        if m:
            return {int(m.group(1)): int(m.group(2))}
        m = re.search(re.escape(name) + r"=\s*([\d, ]*)", out)
        if not m:
            raise TargetError(f"cannot parse register_read output: {out.strip()[-200:]}")
        vals = [int(v) for v in m.group(1).replace(" ", "").split(",") if v]
        return dict(enumerate(vals))

    def write_register(self, name: str, index: int, value: int):
        self._run_cli([f"register_write {name} {int(index)} {int(value)}"])

    def describe(self) -> dict:
        d = super().describe()
        d.update(thrift=f"{self.thrift_ip}:{self.thrift_port}", cli=self.cli)
        if self.link_admin_addr:
            d.update(link_admin=self.link_admin_addr, link_ports=sorted(self.link_ports))
        return d


class EmbeddedTarget(Target):
    """The p4cc embedded switch (switch/p4cc-switch): queue depth in packets
    like bmv2, plus per-port line rate, propagation delay, loss and depth
    through its admin API (HTTP + JSON, default 127.0.0.1:9560):
        GET /ports            -> the ports and their settings
        PUT /ports/{n}        <- {"rate_bps", "rate_pps", "delay_us", "loss", "depth_pkts"}
    """

    name = "embedded"
    shapes_ports = True
    #: `PUT /clock`: the pipeline's timestamps in µs (bmv2's) or ns.
    clock_units = ("us", "ns")

    def __init__(self, admin_addr: str = "127.0.0.1:9560", mtu: int = 1500, timeout: float = 5.0):
        super().__init__(mtu)
        self.admin_addr = admin_addr
        self.timeout = timeout

    def _http(self, method: str, path: str, body: Optional[dict] = None):
        return admin_http(self.admin_addr, method, path, body, self.timeout)

    def port_table(self) -> Dict[int, dict]:
        """GET /ports, as {port: settings}. Accepts a list of objects with a
        port number, {"ports": [...]}, or a dict keyed by port."""
        data = self._http("GET", "/ports")
        if isinstance(data, dict) and "ports" in data:
            data = data["ports"]
        out = {}
        if isinstance(data, dict):
            for k, v in data.items():
                out[int(k)] = v
        elif isinstance(data, list):
            for v in data:
                num = next((v[k] for k in ("port", "id", "number", "port_id") if k in v), None)
                if num is not None:
                    out[int(num)] = v
        return out

    def ports(self) -> Optional[List[int]]:
        return sorted(self.port_table())

    def set_clock(self, unit: str) -> None:
        super().set_clock(unit)
        self._http("PUT", "/clock", {"unit": unit})

    def _apply(self, port: int, settings: dict) -> dict:
        body = {k: v for k, v in settings.items()}
        self._http("PUT", f"/ports/{port}", body)
        return body

    def describe(self) -> dict:
        d = super().describe()
        d["admin"] = self.admin_addr
        return d


class TofinoTarget(Target):
    """Tofino and Tofino 2 through Stratum (stratum_bfrt), running
    p4src/tna/cc_switch.p4: queue depth in 80-byte cells; the pipeline push
    carries Stratum's BfPipelineConfig packed from bf-p4c's output
    (p4cc_control.tofino); postcard copies are cut by the mirror session.
    Ports are the SDK's device ports (Stratum's P4Runtime port translation
    is not used). Port bring-up and shaping are Stratum's chassis config,
    not P4Runtime: docs/tofino.md gives the commands."""

    name = "tofino"
    depth_unit = "cells"
    clock_units = ("ns",)
    #: The TNA program's postcard mirror header (POSTCARD_MIRROR_BYTES in
    #: p4src/tna/cc_switch.p4) plus the part of the reported packet a
    #: postcard needs (POSTCARD_REPORTED_BYTES: Ethernet, IPv4, L4 ports).
    #: Tofino's mirror truncation counts the mirror header.
    postcard_truncate = POSTCARD_MIRROR_BYTES_TNA + POSTCARD_REPORTED_BYTES

    def __init__(self, mtu: int = 1500, chip: Optional[str] = None,
                 ports: Optional[List[int]] = None):
        super().__init__(mtu)
        from .tofino import CHIPS

        chip = chip or os.environ.get("P4CC_TOFINO_CHIP") or "tofino"
        if chip not in CHIPS:
            raise ValueOutOfRange(f"unknown Tofino chip '{chip}' (use {', '.join(CHIPS)})")
        self.chip = chip
        self._ports = None if ports is None else sorted(int(p) for p in ports)

    def ports(self) -> Optional[List[int]]:
        # Stratum lists its ports over gNMI, not P4Runtime: only what we
        # were told (the PTF runner, a lab record) is known.
        return self._ports

    def _apply(self, port, settings):
        raise TargetError("Tofino port shaping is Stratum's chassis config (vendor_config "
                          "tofino_config node_id_to_port_shaping_config), pushed with gNMI, "
                          "not P4Runtime: see docs/tofino.md, Ports and shaping")

    @classmethod
    def problems(cls, settings: dict, **facts) -> List[str]:
        # Random loss is the program's port_loss table; the rest is the
        # chassis config's.
        return [f"{k}={v} (Tofino port shaping is Stratum's chassis config, see docs/tofino.md)"
                for k, v in settings.items() if v and k != "loss"]

    def default_p4info(self) -> Optional[str]:
        from .tofino import committed_p4info

        return committed_p4info(self.chip)

    def default_device_config(self) -> Optional[str]:
        from .tofino import compile_dir

        return compile_dir(self.chip)

    def load_device_config(self, path: str) -> bytes:
        from .tofino import device_config

        if not os.path.exists(path):
            raise PipelineMismatch(f"no bf-p4c output at {path}: compile the Tofino program "
                                   f"with `make p4-tna` (needs bf-p4c; docs/tofino.md)")
        return device_config(path)

    def check_mirror_port(self, port: int) -> None:
        if int(port) == 0:
            raise ValueOutOfRange("Stratum refuses clone sessions to port 0 (its 'unspecified "
                                  "port'): put the collector on another port")

    def describe(self) -> dict:
        d = super().describe()
        d["chip"] = self.chip
        return d


TARGETS = {"bmv2": Bmv2Target, "embedded": EmbeddedTarget, "tofino": TofinoTarget}


def make_target(name: str, **opts) -> Target:
    try:
        cls = TARGETS[name]
    except KeyError:
        raise ValueOutOfRange(f"unknown target '{name}' (known: {', '.join(TARGETS)})") from None
    import inspect

    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in opts.items() if k in accepted and v is not None})
