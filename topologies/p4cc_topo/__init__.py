"""p4cc_topo: topologies as data, realised in network namespaces.

The experiment runner's entry points::

    from p4cc_topo import load_topology, Network, cleanup_all

    topo = load_topology("dumbbell", n_senders=2)        # or a YAML path
    plan = switch_configs(topo)                          # what the controller applies
    with Network(topo, target="auto", log_dir=...) as net:
        net.endpoints()                                  # where the switches listen
        p = net.popen("rx", [...], log="rx.log")         # in a host namespace

See docs/topologies.md.
"""

from .builtin import GENERATORS, dumbbell, list_builtins, load_topology, star, wishbone
from .cleanup import cleanup_all, cleanup_run, format_report
from .model import Endpoint, Host, Link, Switch, Topology, TopologyError, GATEWAY_IP
from .naming import netns_name, port_ifname
from .network import Network, NetworkError
from .plan import Plan, PlanError, switch_configs
from .targets import (SwitchStartError, TargetCapabilityError, TargetUnavailable,
                      netem_available, resolve_target)
from .units import UnitError, parse_delay, parse_loss, parse_rate

__all__ = [
    "load_topology", "list_builtins", "GENERATORS", "dumbbell", "star", "wishbone",
    "Topology", "TopologyError", "Host", "Switch", "Link", "Endpoint", "GATEWAY_IP",
    "Network", "NetworkError", "cleanup_all", "cleanup_run", "format_report",
    "netns_name", "port_ifname",
    "SwitchStartError", "TargetCapabilityError", "TargetUnavailable",
    "netem_available", "resolve_target", "Plan", "PlanError", "switch_configs",
    "UnitError", "parse_rate", "parse_delay", "parse_loss",
]
