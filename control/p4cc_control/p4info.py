"""P4Info: load it and find entities by name.

Users address entities the way the P4 source names them. Three spellings
resolve, in this order:
  1. the full name p4c wrote ("CcIngress.forwarding.ipv4_lpm"),
  2. the alias p4c wrote (its shortest unique suffix, "ipv4_lpm"),
  3. any other dot-separated suffix that is unique ("forwarding.ipv4_lpm").
An ambiguous suffix is an error that lists the candidates, never a guess.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

from .errors import NameNotFound, PipelineMismatch

from p4.config.v1 import p4info_pb2  # noqa: E402

MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}

COUNTER_UNITS = {
    p4info_pb2.CounterSpec.BYTES: "bytes",
    p4info_pb2.CounterSpec.PACKETS: "packets",
    p4info_pb2.CounterSpec.BOTH: "both",
}


@dataclass
class FieldInfo:
    """A match field or an action parameter: what a value must fit."""

    id: int
    name: str
    bitwidth: int
    match_type: Optional[str] = None  # None for action parameters
    owner: str = ""  # "table X" / "action Y", for error messages

    @property
    def where(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name


@dataclass
class ActionInfo:
    id: int
    name: str
    alias: str
    params: List[FieldInfo]

    def __post_init__(self):
        self.params_by_name = {p.name: p for p in self.params}
        self.params_by_id = {p.id: p for p in self.params}

    def param(self, name: str) -> FieldInfo:
        try:
            return self.params_by_name[name]
        except KeyError:
            known = ", ".join(self.params_by_name) or "none"
            raise NameNotFound(
                f"action {self.name} has no parameter '{name}' (it has: {known})"
            ) from None


@dataclass
class TableInfo:
    id: int
    name: str
    alias: str
    match_fields: List[FieldInfo]
    action_ids: List[int]
    default_only_action_ids: List[int]
    const_default_action_id: int
    size: int
    is_const: bool

    def __post_init__(self):
        self.fields_by_name = {f.name: f for f in self.match_fields}
        self.fields_by_id = {f.id: f for f in self.match_fields}

    def field(self, name: str) -> FieldInfo:
        if name in self.fields_by_name:
            return self.fields_by_name[name]
        # Accept the P4 expression's last component too ("hdr.ipv4.dst_addr").
        tail = name.rsplit(".", 1)[-1]
        hits = [f for f in self.match_fields if f.name.rsplit(".", 1)[-1] == tail]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(self.fields_by_name) or "none (keyless table)"
        raise NameNotFound(f"table {self.name} has no match field '{name}' (it has: {known})")

    @property
    def needs_priority(self) -> bool:
        return any(f.match_type in ("ternary", "range", "optional") for f in self.match_fields)


@dataclass
class CounterInfo:
    id: int
    name: str
    alias: str
    unit: str
    size: int


@dataclass
class RegisterInfo:
    id: int
    name: str
    alias: str
    size: int
    bitwidth: int


class _NameIndex:
    """Full names, aliases and unique suffixes of one kind of entity."""

    def __init__(self, kind: str):
        self.kind = kind
        self.by_id: Dict[int, object] = {}
        self._full: Dict[str, object] = {}
        self._alias: Dict[str, object] = {}
        self._suffix: Dict[str, List[object]] = {}

    def add(self, ent):
        self.by_id[ent.id] = ent
        self._full[ent.name] = ent
        if ent.alias:
            self._alias[ent.alias] = ent
        parts = ent.name.split(".")
        for i in range(1, len(parts)):
            self._suffix.setdefault(".".join(parts[i:]), []).append(ent)

    def __iter__(self):
        return iter(self.by_id.values())

    def __len__(self):
        return len(self.by_id)

    def __contains__(self, name):
        try:
            self.get(name)
            return True
        except NameNotFound:
            return False

    def names(self) -> List[str]:
        return [e.alias or e.name for e in self.by_id.values()]

    def get(self, name: str, among: Optional[Iterable[int]] = None):
        """Resolve `name`; `among` limits the candidates to these ids (e.g.
        a table's own actions, so "NoAction" or "forward" resolve even if
        another control has an action of that name)."""
        allowed = None if among is None else set(among)

        def ok(e):
            return allowed is None or e.id in allowed

        for table in (self._full, self._alias):
            e = table.get(name)
            if e is not None and ok(e):
                return e
        hits = [e for e in self._suffix.get(name, []) if ok(e)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            cands = ", ".join(sorted(e.name for e in hits))
            raise NameNotFound(f"{self.kind} name '{name}' is ambiguous: {cands}")
        pool = [e for e in self.by_id.values() if ok(e)]
        known = ", ".join(sorted(e.alias or e.name for e in pool)) or "none"
        raise NameNotFound(f"no {self.kind} '{name}' in the P4Info (known: {known})")


class P4Info:
    """An indexed P4Info message."""

    def __init__(self, msg: "p4info_pb2.P4Info", source: str = "<memory>"):
        self.msg = msg
        self.source = source
        self.actions = _NameIndex("action")
        self.tables = _NameIndex("table")
        self.counters = _NameIndex("counter")
        self.registers = _NameIndex("register")
        for a in msg.actions:
            p = a.preamble
            self.actions.add(ActionInfo(
                p.id, p.name, p.alias,
                [FieldInfo(x.id, x.name, x.bitwidth, None, p.name) for x in a.params]))
        for t in msg.tables:
            p = t.preamble
            self.tables.add(TableInfo(
                id=p.id, name=p.name, alias=p.alias,
                match_fields=[
                    FieldInfo(m.id, m.name, m.bitwidth,
                              MATCH_KINDS.get(m.match_type, "other"), p.name)
                    for m in t.match_fields],
                action_ids=[r.id for r in t.action_refs],
                default_only_action_ids=[
                    r.id for r in t.action_refs if r.scope == p4info_pb2.ActionRef.DEFAULT_ONLY],
                const_default_action_id=t.const_default_action_id,
                size=t.size,
                is_const=t.is_const_table,
            ))
        for c in msg.counters:
            p = c.preamble
            self.counters.add(CounterInfo(p.id, p.name, p.alias,
                                          COUNTER_UNITS.get(c.spec.unit, "unknown"), c.size))
        for r in msg.registers:
            p = r.preamble
            width = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth
            self.registers.add(RegisterInfo(p.id, p.name, p.alias, r.size, width))

    # -- lookups -----------------------------------------------------------
    def table(self, name: str) -> TableInfo:
        return self.tables.get(name)

    def action(self, name: str, table: Optional[TableInfo] = None) -> ActionInfo:
        if table is None:
            return self.actions.get(name)
        try:
            return self.actions.get(name, among=table.action_ids)
        except NameNotFound:
            names = ", ".join(self.actions.by_id[i].alias or self.actions.by_id[i].name
                              for i in table.action_ids if i in self.actions.by_id)
            raise NameNotFound(
                f"table {table.name} has no action '{name}' (it has: {names})") from None

    def counter(self, name: str) -> CounterInfo:
        return self.counters.get(name)

    def register(self, name: str) -> RegisterInfo:
        return self.registers.get(name)

    # -- identity ----------------------------------------------------------
    def serialize(self) -> bytes:
        # Deterministic so that the same P4Info always hashes the same.
        return self.msg.SerializeToString(deterministic=True)

    def structure(self) -> Dict[str, tuple]:
        """What a controller depends on: names, ids, widths. Two P4Infos with
        the same structure are interchangeable for this controller, whatever
        their annotations or doc strings say."""
        out = {}
        for t in self.tables:
            out[f"table {t.name}"] = (
                t.id,
                tuple((f.id, f.name, f.bitwidth, f.match_type) for f in t.match_fields),
                tuple(sorted(t.action_ids)))
        for a in self.actions:
            out[f"action {a.name}"] = (a.id, tuple((p.id, p.name, p.bitwidth) for p in a.params))
        for c in self.counters:
            out[f"counter {c.name}"] = (c.id, c.unit, c.size)
        for r in self.registers:
            out[f"register {r.name}"] = (r.id, r.size, r.bitwidth)
        return out

    def difference(self, other: "P4Info") -> Optional[str]:
        """None when compatible, else a short description of the first
        differences (for the one-line mismatch error)."""
        mine, theirs = self.structure(), other.structure()
        diffs = []
        for k in sorted(set(mine) | set(theirs)):
            if k not in theirs:
                diffs.append(f"{k} missing on the switch")
            elif k not in mine:
                diffs.append(f"{k} only on the switch")
            elif mine[k] != theirs[k]:
                diffs.append(f"{k} differs")
        if not diffs:
            return None
        more = f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""
        return "; ".join(diffs[:3]) + more

    def summary(self) -> dict:
        return {
            "tables": {t.name: {"alias": t.alias, "size": t.size,
                                "match": {f.name: f"{f.match_type} bit<{f.bitwidth}>"
                                          for f in t.match_fields},
                                "actions": [self.actions.by_id[i].name for i in t.action_ids
                                            if i in self.actions.by_id]}
                       for t in self.tables},
            "actions": {a.name: {p.name: f"bit<{p.bitwidth}>" for p in a.params}
                        for a in self.actions},
            "counters": {c.name: {"unit": c.unit, "size": c.size} for c in self.counters},
            "registers": {r.name: {"size": r.size, "bitwidth": r.bitwidth}
                          for r in self.registers},
        }


def pipeline_cookie(p4info: P4Info, device_config: bytes) -> int:
    """A 64-bit fingerprint of what we push, stored in the switch's
    ForwardingPipelineConfig.cookie, so a reconnecting controller can tell
    "our pipeline is still there" from "the switch restarted"."""
    h = hashlib.sha256(p4info.serialize())
    h.update(device_config or b"")
    return int.from_bytes(h.digest()[:8], "big")


def parse_p4info_bytes(data: bytes, source: str = "<bytes>") -> P4Info:
    msg = p4info_pb2.P4Info()
    msg.ParseFromString(data)
    return P4Info(msg, source)


def load_p4info(path: str) -> P4Info:
    """Load a P4Info file, binary (preferred) or text.

    With the pure-Python protobuf backend, text format cannot parse a P4Info
    holding `type_info` maps, so p4c is asked for a binary copy too
    (`--p4runtime-files x.p4info.txtpb,x.p4info.bin`). Given a .txtpb whose
    .bin sibling exists, the .bin is used."""
    if not os.path.exists(path):
        hint = ""
        if os.sep + os.path.join("build", "tofino") + os.sep in path:
            # bf-p4c is in no registry: its P4Info exists only where it ran.
            hint = " (compile the Tofino program with bf-p4c: `make p4-tna`, docs/tofino.md)"
        raise PipelineMismatch(f"P4Info file not found: {path}{hint}")
    if path.endswith((".txtpb", ".txt", ".pb.txt")):
        sibling = path.rsplit(".", 1)[0]
        sibling = sibling[:-3] if sibling.endswith(".pb") else sibling
        if os.path.exists(sibling + ".bin"):
            path = sibling + ".bin"
    with open(path, "rb") as f:
        data = f.read()
    msg = p4info_pb2.P4Info()
    if not path.endswith((".txtpb", ".txt")):
        try:
            msg.ParseFromString(data)
            if msg.tables or msg.actions or msg.pkg_info.arch:
                return P4Info(msg, path)
        except Exception:  # not binary: fall through to text
            msg = p4info_pb2.P4Info()
    from google.protobuf import text_format

    try:
        text_format.Parse(data.decode("utf-8"), msg)
    except Exception as e:
        raise PipelineMismatch(
            f"cannot parse P4Info {path}: {str(e).splitlines()[0]} "
            "(use the binary P4Info that p4c writes with --p4runtime-files x.p4info.bin)"
        ) from None
    return P4Info(msg, path)
