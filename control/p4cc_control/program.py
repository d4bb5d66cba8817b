"""Programming running switches from a scenario plan's switch part.

Every executor (the namespace lab, the virtual-time simulator, the Mininet
prompt, `p4cc up`) starts its switches bare and hands this module where
each one listens; the controller then pushes the pipeline and applies the
plan's :class:`~p4cc_topo.plan.SwitchConfig` through the same P4Runtime
calls and the same target knobs whatever runs behind the address.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

from .switch import Switch
from .targets import Target, make_target


@dataclass
class Endpoint:
    """Where a running switch serves P4Runtime, and what kind it is."""
    name: str
    target: str                      #: "embedded", "bmv2", "sim", "tofino"
    grpc_addr: str
    device_id: int = 1
    admin_addr: Optional[str] = None  #: embedded/sim: the port-settings API
    thrift_port: Optional[int] = None  #: bmv2: simple_switch_CLI
    port_ifaces: Dict[int, str] = field(default_factory=dict)
    #: bmv2: the admin API of the link emulator giving its ports delay and
    #: loss (p4cc_topo.links), and which ports it serves
    link_admin_addr: Optional[str] = None
    link_ports: list = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict) -> "Endpoint":
        """From what a switch process or the simulator describes (JSON
        turns port numbers into strings; other keys are ignored)."""
        e = cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})
        e.port_ifaces = {int(p): i for p, i in (e.port_ifaces or {}).items()}
        e.link_ports = [int(p) for p in (e.link_ports or [])]
        return e

    def make_target(self) -> Target:
        # The simulator serves the embedded target's admin API: same knobs.
        kind = "embedded" if self.target == "sim" else self.target
        return make_target(kind, admin_addr=self.admin_addr, thrift_port=self.thrift_port,
                           port_ifaces=self.port_ifaces or None,
                           link_admin_addr=self.link_admin_addr,
                           link_ports=self.link_ports or None)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Programmed:
    """The programmed switches of a run: per switch its session and its
    lab operations (counters, K, knobs). Close it to end the sessions."""

    def __init__(self):
        self.switches: Dict[str, Switch] = {}
        self.ops: Dict[str, object] = {}
        self.applied: Dict[str, dict] = {}

    def close(self) -> None:
        for sw in self.switches.values():
            try:
                sw.close()
            except Exception:
                pass
        self.switches.clear()

    def __enter__(self) -> "Programmed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def program(configs: dict, endpoints: Dict[str, Endpoint]) -> Programmed:
    """Pushes each switch's pipeline and applies its SwitchConfig; returns
    the open sessions (the caller closes them when the run ends)."""
    missing = sorted(set(configs) - set(endpoints))
    if missing:
        from .errors import NameNotFound
        raise NameNotFound(f"no running switch for {', '.join(missing)}")
    out = Programmed()
    try:
        for name, cfg in configs.items():
            ep = endpoints[name]
            target = ep.make_target()
            # A Tofino switch runs the TNA program: its P4Info and its
            # bf-p4c output, whatever the plan names for v1model targets.
            p4info = target.default_p4info() or str(cfg.path("p4info"))
            dev = target.default_device_config() or str(cfg.path("device_config"))
            sw = Switch.connect(ep.grpc_addr, device_id=ep.device_id, p4info=p4info,
                                device_config=dev, push=True,
                                device_config_loader=target.load_device_config)
            out.switches[name] = sw
            ops = sw.ops(target)
            out.ops[name] = ops
            out.applied[name] = ops.apply_switch(cfg)
    except BaseException:
        out.close()
        raise
    return out
