"""p4cc_topo: topologies as data, realised in network namespaces.

The experiment runner's entry points::

    from p4cc_topo import load_topology, Network, cleanup_all

    topo = load_topology("dumbbell", n_senders=2)        # or a YAML path
    with Network(topo, target="auto", log_dir=...) as net:
        view = net.switch_view()                         # for the controller
        net.apply_queue_config()                         # after pipeline push
        p = net.popen("rx", [...], log="rx.log")         # in a host namespace

See docs/topologies.md.
"""

from .builtin import GENERATORS, dumbbell, list_builtins, load_topology, star, wishbone
from .cleanup import cleanup_all, cleanup_run, format_report
from .model import Endpoint, Host, Link, Switch, Topology, TopologyError, GATEWAY_IP
from .naming import netns_name, port_ifname
from .network import Network, NetworkError
from .targets import (SwitchStartError, TargetCapabilityError, TargetUnavailable,
                      check_capabilities, plan_ports, resolve_target)
from .units import UnitError, parse_delay, parse_loss, parse_rate

__all__ = [
    "load_topology", "list_builtins", "GENERATORS", "dumbbell", "star", "wishbone",
    "Topology", "TopologyError", "Host", "Switch", "Link", "Endpoint", "GATEWAY_IP",
    "Network", "NetworkError", "cleanup_all", "cleanup_run", "format_report",
    "netns_name", "port_ifname",
    "SwitchStartError", "TargetCapabilityError", "TargetUnavailable",
    "check_capabilities", "plan_ports", "resolve_target",
    "UnitError", "parse_rate", "parse_delay", "parse_loss",
]
