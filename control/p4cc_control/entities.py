"""Build and decode P4Runtime entities by P4Info name.

Pure functions: no I/O. switch.py sends what these build; tests check the
bytes they produce without any switch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import codec
from .errors import NameNotFound, ValueOutOfRange
from .p4info import P4Info, TableInfo

from p4.v1 import p4runtime_pb2  # noqa: E402


@dataclass
class Entry:
    """A table entry as a human (and encode) reads it."""

    table: str
    match: Dict[str, Any]
    action: Optional[str]
    params: Dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    is_default: bool = False

    def to_dict(self) -> dict:
        d = {"table": self.table, "match": self.match, "action": self.action,
             "params": self.params}
        if self.priority:
            d["priority"] = self.priority
        if self.is_default:
            d["default"] = True
        return d


def build_action(p4info: P4Info, table: Optional[TableInfo], action: str,
                 params: Optional[Dict[str, Any]]) -> "p4runtime_pb2.Action":
    a = p4info.action(action, table)
    params = dict(params or {})
    msg = p4runtime_pb2.Action(action_id=a.id)
    for p in a.params:
        if p.name not in params:
            raise NameNotFound(
                f"action {a.name} needs parameter '{p.name}' (bit<{p.bitwidth}>); "
                f"it takes: {', '.join(x.name for x in a.params)}")
        v = params.pop(p.name)
        msg.params.add(param_id=p.id, value=codec.encode_value(v, p))
    if params:
        extra = ", ".join(sorted(params))
        raise NameNotFound(f"action {a.name} has no parameter(s) {extra} "
                           f"(it takes: {', '.join(x.name for x in a.params) or 'none'})")
    return msg


def build_table_entry(p4info: P4Info, table: str, match: Optional[Dict[str, Any]] = None,
                      action: Optional[str] = None, params: Optional[Dict[str, Any]] = None,
                      priority: Optional[int] = None, is_default: bool = False
                      ) -> "p4runtime_pb2.TableEntry":
    t = p4info.table(table)
    te = p4runtime_pb2.TableEntry(table_id=t.id)
    if is_default:
        if match:
            raise ValueOutOfRange(f"the default entry of {t.name} takes no match")
        te.is_default_action = True
    else:
        given = dict(match or {})
        if not t.match_fields:
            raise ValueOutOfRange(f"table {t.name} has no key: set its default action instead")
        # Sorted by field id so equal entries build equal bytes (journal keys).
        fields = []
        for name, value in given.items():
            f = t.field(name)
            fm = codec.encode_match(value, f)
            if fm is not None:
                fields.append(fm)
        missing = [f.name for f in t.match_fields
                   if f.match_type == "exact" and f.id not in {x.field_id for x in fields}]
        if missing:
            raise NameNotFound(f"table {t.name} needs exact match field(s): {', '.join(missing)}")
        for fm in sorted(fields, key=lambda x: x.field_id):
            te.match.append(fm)
        if t.needs_priority:
            if priority is None or priority < 1:
                raise ValueOutOfRange(f"table {t.name} has ternary/range/optional fields: "
                                      "give a priority >= 1")
            te.priority = priority
        elif priority:
            raise ValueOutOfRange(f"table {t.name} is exact/LPM only: it takes no priority")
    if action is not None:
        te.action.action.CopyFrom(build_action(p4info, t, action, params))
    return te


def entry_key(te: "p4runtime_pb2.TableEntry") -> Tuple:
    """What identifies an entry on the switch (match + priority, or default)."""
    if te.is_default_action:
        return ("table-default", te.table_id)
    return ("table", te.table_id, te.priority,
            tuple(fm.SerializeToString(deterministic=True) for fm in
                  sorted(te.match, key=lambda x: x.field_id)))


def decode_table_entry(p4info: P4Info, te: "p4runtime_pb2.TableEntry") -> Entry:
    t = p4info.tables.by_id.get(te.table_id)
    if t is None:
        raise NameNotFound(f"switch returned an entry of unknown table id {te.table_id}")
    match = {}
    for fm in te.match:
        f = t.fields_by_id.get(fm.field_id)
        if f is not None:
            match[f.name] = codec.decode_match(fm, f)
    action, params = None, {}
    if te.HasField("action") and te.action.WhichOneof("type") == "action":
        a = p4info.actions.by_id.get(te.action.action.action_id)
        if a is not None:
            action = a.alias or a.name
            for p in te.action.action.params:
                pi = a.params_by_id.get(p.param_id)
                if pi is not None:
                    params[pi.name] = codec.format_value(codec.decode_int(p.value),
                                                         pi.bitwidth, pi.name)
    return Entry(t.alias or t.name, match, action, params, te.priority, te.is_default_action)


# -- packet replication engine --------------------------------------------

PortSpec = Union[int, Tuple[int, int]]


def _replicas(ports: Iterable[PortSpec], what: str) -> List["p4runtime_pb2.Replica"]:
    out = []
    for p in ports:
        port, instance = (p if isinstance(p, (tuple, list)) else (p, 0))
        port, instance = int(port), int(instance)
        if not 0 <= port < 2**32 or not 0 <= instance < 2**32:
            raise ValueOutOfRange(f"{what}: port {port} / instance {instance} out of range")
        # The deprecated uint32 `egress_port`, not the 1.4 `port` bytes: PI
        # (bmv2) rejects port 0 in the bytes form, and every server reads this.
        out.append(p4runtime_pb2.Replica(egress_port=port, instance=instance))
    return out


def build_clone_session(session_id: int, ports: Iterable[PortSpec], class_of_service: int = 0,
                        packet_length_bytes: int = 0) -> "p4runtime_pb2.PacketReplicationEngineEntry":
    if not 1 <= session_id < 2**32:
        raise ValueOutOfRange(f"clone session id {session_id} must be 1..{2**32 - 1}")
    if not 0 <= packet_length_bytes < 2**31:
        raise ValueOutOfRange(f"truncation length {packet_length_bytes} out of range")
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    cs = pre.clone_session_entry
    cs.session_id = session_id
    cs.class_of_service = class_of_service
    cs.packet_length_bytes = packet_length_bytes
    cs.replicas.extend(_replicas(ports, f"clone session {session_id}"))
    return pre


def build_multicast_group(group_id: int, ports: Iterable[PortSpec]
                          ) -> "p4runtime_pb2.PacketReplicationEngineEntry":
    if not 1 <= group_id < 2**32:
        raise ValueOutOfRange(f"multicast group id {group_id} must be 1..{2**32 - 1}")
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = group_id
    pre.multicast_group_entry.replicas.extend(_replicas(ports, f"multicast group {group_id}"))
    return pre


def replica_port(r: "p4runtime_pb2.Replica") -> int:
    if r.WhichOneof("port_kind") == "port":
        return codec.decode_int(r.port)
    return r.egress_port


def decode_pre(pre: "p4runtime_pb2.PacketReplicationEngineEntry") -> dict:
    kind = pre.WhichOneof("type")
    if kind == "clone_session_entry":
        cs = pre.clone_session_entry
        return {"session_id": cs.session_id,
                "replicas": [(replica_port(r), r.instance) for r in cs.replicas],
                "class_of_service": cs.class_of_service,
                "packet_length_bytes": cs.packet_length_bytes}
    mg = pre.multicast_group_entry
    return {"group_id": mg.multicast_group_id,
            "replicas": [(replica_port(r), r.instance) for r in mg.replicas]}


def pre_key(pre) -> Tuple:
    if pre.WhichOneof("type") == "clone_session_entry":
        return ("clone", pre.clone_session_entry.session_id)
    return ("mcast", pre.multicast_group_entry.multicast_group_id)


def entity_key(ent: "p4runtime_pb2.Entity") -> Optional[Tuple]:
    """Journal key of an entity the controller owns (None: not journaled)."""
    kind = ent.WhichOneof("entity")
    if kind == "table_entry":
        return entry_key(ent.table_entry)
    if kind == "packet_replication_engine_entry":
        return pre_key(ent.packet_replication_engine_entry)
    return None
