"""The switch as a Python object, addressed by P4Info names.

    sw = Switch.connect("127.0.0.1:9559", p4info="cc_switch.p4info.bin",
                        device_config="cc_switch.json", push=True)
    sw.tables["ipv4_lpm"].insert(match={"dst_addr": "10.0.1.0/24"},
                                 action="forward",
                                 params={"port": 1, "dst_mac": "00:00:0a:00:01:01"})
    sw.counters["ce_marks"].read(3)          # {3: (packets, bytes)}
    sw.clone_sessions.upsert(100, [4], packet_length_bytes=96)

AsyncSwitch is the asyncio core (grpc.aio); Switch runs one on a private
event-loop thread so scripts, the CLI and pytest can call it plainly. Both
share the entity classes below: an entity method builds its protobuf at
once (so a bad name or value raises in the caller) and hands the RPC
coroutine to the switch's runner, which either returns it (async: the caller
awaits) or runs it to completion (sync).

Everything written through this object is remembered (the journal) so that
after a switch restart the pipeline is pushed again and the same state is
re-applied, in the same order.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from . import codec, entities
from .connection import Connection
from .errors import PipelineMismatch, ValueOutOfRange, WriteError
from .p4info import P4Info, load_p4info, pipeline_cookie

from p4.v1 import p4runtime_pb2  # noqa: E402

log = logging.getLogger("p4cc.control")

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
ALREADY_EXISTS = 6
NOT_FOUND = 5

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_P4INFO = os.path.join(REPO_ROOT, "p4src", "build", "cc_switch.p4info.bin")
DEFAULT_DEVICE_CONFIG = os.path.join(REPO_ROOT, "p4src", "build", "cc_switch.json")


def default_p4info_path() -> str:
    return os.environ.get("P4CC_P4INFO", DEFAULT_P4INFO)


def default_device_config_path() -> str:
    return os.environ.get("P4CC_BMV2_JSON", DEFAULT_DEVICE_CONFIG)


def _update(kind, entity) -> "p4runtime_pb2.Update":
    return p4runtime_pb2.Update(type=kind, entity=entity)


def _table_entity(te) -> "p4runtime_pb2.Entity":
    return p4runtime_pb2.Entity(table_entry=te)


def _pre_entity(pre) -> "p4runtime_pb2.Entity":
    return p4runtime_pb2.Entity(packet_replication_engine_entry=pre)


# --------------------------------------------------------------------------
# entity collections
# --------------------------------------------------------------------------

class Table:
    def __init__(self, sw: "AsyncSwitch", name: str, run: Callable):
        self._sw, self._run = sw, run
        self.info = sw.p4info.table(name)
        self.name = self.info.name

    def _te(self, match=None, action=None, params=None, priority=None, is_default=False):
        return entities.build_table_entry(self._sw.p4info, self.name, match, action, params,
                                          priority, is_default)

    def insert(self, match: Dict[str, Any], action: str, params: Optional[Dict[str, Any]] = None,
               priority: Optional[int] = None):
        te = self._te(match, action, params, priority)
        return self._run(self._sw.write([_update(INSERT, _table_entity(te))]))

    def modify(self, match: Dict[str, Any], action: str, params: Optional[Dict[str, Any]] = None,
               priority: Optional[int] = None):
        te = self._te(match, action, params, priority)
        return self._run(self._sw.write([_update(MODIFY, _table_entity(te))]))

    def upsert(self, match: Dict[str, Any], action: str, params: Optional[Dict[str, Any]] = None,
               priority: Optional[int] = None):
        """Insert, or modify the entry with this match if it exists."""
        te = self._te(match, action, params, priority)
        return self._run(self._sw.upsert([_table_entity(te)]))

    def delete(self, match: Dict[str, Any], priority: Optional[int] = None, missing_ok=False):
        te = self._te(match, None, None, priority)
        return self._run(self._sw.write([_update(DELETE, _table_entity(te))],
                                        missing_ok=missing_ok))

    def set_default(self, action: str, params: Optional[Dict[str, Any]] = None):
        te = self._te(None, action, params, None, is_default=True)
        return self._run(self._sw.write([_update(MODIFY, _table_entity(te))]))

    def read(self) -> List[entities.Entry]:
        """All non-default entries of this table, decoded."""
        async def go():
            ents = await self._sw.read([_table_entity(p4runtime_pb2.TableEntry(table_id=self.info.id))])
            return [entities.decode_table_entry(self._sw.p4info, e.table_entry)
                    for e in ents if e.HasField("table_entry") and not e.table_entry.is_default_action]
        return self._run(go())

    def read_default(self) -> entities.Entry:
        async def go():
            ents = await self._sw.read([_table_entity(
                p4runtime_pb2.TableEntry(table_id=self.info.id, is_default_action=True))])
            for e in ents:
                if e.table_entry.is_default_action:
                    return entities.decode_table_entry(self._sw.p4info, e.table_entry)
            return entities.Entry(self.info.alias or self.name, {}, None, {}, 0, True)
        return self._run(go())

    def clear(self):
        """Delete every (non-default) entry on the switch, ours or not."""
        async def go():
            ents = await self._sw.read([_table_entity(p4runtime_pb2.TableEntry(table_id=self.info.id))])
            dels = []
            for e in ents:
                te = e.table_entry
                if te.is_default_action:
                    continue
                te.ClearField("action")
                dels.append(_update(DELETE, _table_entity(te)))
            if dels:
                await self._sw.write(dels)
            return len(dels)
        return self._run(go())


class Counter:
    def __init__(self, sw: "AsyncSwitch", name: str, run: Callable):
        self._sw, self._run = sw, run
        self.info = sw.p4info.counter(name)
        self.name = self.info.name

    def _check(self, index):
        if index is not None and not 0 <= int(index) < self.info.size:
            raise ValueOutOfRange(f"index {index} out of range for counter {self.name} "
                                  f"(0..{self.info.size - 1})")

    def read(self, index: Optional[int] = None) -> Dict[int, tuple]:
        """{index: (packets, bytes)}; every index when `index` is None."""
        self._check(index)
        ce = p4runtime_pb2.CounterEntry(counter_id=self.info.id)
        if index is not None:
            ce.index.index = int(index)

        async def go():
            ents = await self._sw.read([p4runtime_pb2.Entity(counter_entry=ce)])
            return {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                                  e.counter_entry.data.byte_count)
                    for e in ents if e.HasField("counter_entry")}
        return self._run(go())

    def reset(self, indexes: Optional[Iterable[int]] = None):
        """Zero these indexes (all when None), one batch."""
        idx = list(range(self.info.size)) if indexes is None else [int(i) for i in indexes]
        for i in idx:
            self._check(i)
        ups = []
        for i in idx:
            ce = p4runtime_pb2.CounterEntry(counter_id=self.info.id)
            ce.index.index = i
            ce.data.packet_count = 0
            ce.data.byte_count = 0
            ups.append(_update(MODIFY, p4runtime_pb2.Entity(counter_entry=ce)))
        return self._run(self._sw.write(ups, journal=False))


class Register:
    def __init__(self, sw: "AsyncSwitch", name: str, run: Callable):
        self._sw, self._run = sw, run
        self.info = sw.p4info.register(name)
        self.name = self.info.name

    def _check(self, index):
        if index is not None and not 0 <= int(index) < self.info.size:
            raise ValueOutOfRange(f"index {index} out of range for register {self.name} "
                                  f"(0..{self.info.size - 1})")

    def read(self, index: Optional[int] = None) -> Dict[int, int]:
        self._check(index)
        re_ = p4runtime_pb2.RegisterEntry(register_id=self.info.id)
        if index is not None:
            re_.index.index = int(index)

        async def go():
            ents = await self._sw.read([p4runtime_pb2.Entity(register_entry=re_)])
            out = {}
            for e in ents:
                r = e.register_entry
                out[r.index.index] = codec.decode_int(r.data.bitstring)
            return out
        return self._run(go())

    def write(self, index: int, value: Any):
        self._check(index)
        n = codec.parse_int(value, self.info.bitwidth, f"register {self.name}[{index}]")
        re_ = p4runtime_pb2.RegisterEntry(register_id=self.info.id)
        re_.index.index = int(index)
        re_.data.bitstring = codec.encode_int(n, self.info.bitwidth)
        return self._run(self._sw.write([_update(MODIFY, p4runtime_pb2.Entity(register_entry=re_))],
                                        journal=False))


class _Pre:
    """Clone sessions or multicast groups (the packet replication engine)."""

    kind = ""

    def __init__(self, sw: "AsyncSwitch", run: Callable):
        self._sw, self._run = sw, run

    def _build(self, ident, ports, **kw):
        raise NotImplementedError

    def insert(self, ident: int, ports, **kw):
        return self._run(self._sw.write([_update(INSERT, _pre_entity(self._build(ident, ports, **kw)))]))

    def modify(self, ident: int, ports, **kw):
        return self._run(self._sw.write([_update(MODIFY, _pre_entity(self._build(ident, ports, **kw)))]))

    def upsert(self, ident: int, ports, **kw):
        return self._run(self._sw.upsert([_pre_entity(self._build(ident, ports, **kw))]))

    def delete(self, ident: int, missing_ok=False):
        return self._run(self._sw.write([_update(DELETE, _pre_entity(self._build(ident, [])))],
                                        missing_ok=missing_ok))

    def read(self, ident: Optional[int] = None) -> List[dict]:
        q = self._build(ident or 0, [], _query=True)

        async def go():
            try:
                ents = await self._sw.read([_pre_entity(q)])
            except WriteError as e:
                if e.codes() == {NOT_FOUND}:  # asked for one id that is not there
                    return []
                raise
            out = [entities.decode_pre(e.packet_replication_engine_entry) for e in ents
                   if e.packet_replication_engine_entry.WhichOneof("type") == self.kind]
            return out
        return self._run(go())


class CloneSessions(_Pre):
    kind = "clone_session_entry"

    def _build(self, ident, ports, class_of_service=0, packet_length_bytes=0, _query=False):
        if _query:
            pre = p4runtime_pb2.PacketReplicationEngineEntry()
            pre.clone_session_entry.session_id = ident
            return pre
        return entities.build_clone_session(ident, ports, class_of_service, packet_length_bytes)


class MulticastGroups(_Pre):
    kind = "multicast_group_entry"

    def _build(self, ident, ports, _query=False):
        if _query:
            pre = p4runtime_pb2.PacketReplicationEngineEntry()
            pre.multicast_group_entry.multicast_group_id = ident
            return pre
        return entities.build_multicast_group(ident, ports)


class _Collection:
    """sw.tables["ipv4_lpm"], iterable over the P4Info's names."""

    def __init__(self, sw, index, factory, run):
        self._sw, self._index, self._factory, self._run = sw, index, factory, run

    def __getitem__(self, name: str):
        return self._factory(self._sw, name, self._run)

    def __iter__(self):
        return iter([e.name for e in self._index])

    def __contains__(self, name):
        return name in self._index

    def names(self):
        return [e.name for e in self._index]


def _passthrough(coro):
    return coro


def _bind_collections(holder, sw: "AsyncSwitch", run: Callable):
    """Give `holder` the entity collections of `sw`, whose methods use `run`
    (async core: return the coroutine; sync facade: run it on the loop)."""
    holder.tables = _Collection(sw, sw.p4info.tables, Table, run)
    holder.counters = _Collection(sw, sw.p4info.counters, Counter, run)
    holder.registers = _Collection(sw, sw.p4info.registers, Register, run)
    holder.clone_sessions = CloneSessions(sw, run)
    holder.multicast_groups = MulticastGroups(sw, run)


class SyncProxy:
    """Blocking view of an object with coroutine methods."""

    def __init__(self, obj, run: Callable):
        self._obj, self._run = obj, run

    def __getattr__(self, name):
        attr = getattr(self._obj, name)
        if asyncio.iscoroutinefunction(attr):
            def call(*a, **kw):
                return self._run(attr(*a, **kw))
            call.__doc__ = attr.__doc__
            return call
        return attr


# --------------------------------------------------------------------------
# the asyncio switch
# --------------------------------------------------------------------------

class AsyncSwitch:
    def __init__(self, addr: str = "127.0.0.1:9559", device_id: int = 1,
                 p4info: Union[P4Info, str, None] = None,
                 device_config: Union[bytes, str, None] = None,
                 election_id: int = 1, role: str = "", timeout: float = 5.0,
                 reconnect: bool = True, reconnect_timeout: float = 120.0,
                 device_config_loader: Optional[Callable[[str], bytes]] = None):
        if p4info is None:
            p4info = default_p4info_path()
        self.p4info = p4info if isinstance(p4info, P4Info) else load_p4info(p4info)
        self._device_config_src = device_config
        self._device_config: Optional[bytes] = None
        # Turns a device-config path into the bytes a push carries (a
        # target's: Tofino packs bf-p4c's output); read lazily, when a push
        # or a pipeline cookie needs it.
        self._device_config_loader = device_config_loader
        self.conn = Connection(addr, device_id, election_id, role, timeout,
                               reconnect=reconnect, reconnect_timeout=reconnect_timeout)
        self.conn.on_restore = self._restore
        self.addr, self.device_id = addr, device_id
        # What we own on the switch: key -> Entity, in the order first written.
        self.journal: "OrderedDict[tuple, p4runtime_pb2.Entity]" = OrderedDict()
        self.pipeline_pushed = False
        # Callbacks (async or not) run after a restore, e.g. target knobs.
        self.restore_hooks: List[Callable] = []
        self.restores = 0
        _bind_collections(self, self, _passthrough)

    @property
    def device_config(self) -> bytes:
        if self._device_config is None:
            src = self._device_config_src
            if src is None:
                src = default_device_config_path()
            if isinstance(src, (bytes, bytearray)):
                self._device_config = bytes(src)
            elif self._device_config_loader is not None:
                self._device_config = self._device_config_loader(src)
            else:
                if not os.path.exists(src):
                    raise PipelineMismatch(f"bmv2 JSON not found: {src}")
                with open(src, "rb") as f:
                    self._device_config = f.read()
        return self._device_config

    @property
    def is_primary(self) -> bool:
        return self.conn.is_primary

    def ops(self, target=None):
        """The lab operations (set_k, set_loss, postcards...) on this switch."""
        from .operations import CcOps

        return CcOps(self, target)

    async def open(self, primary: bool = True, push: bool = False, check: bool = True):
        """Connect; with push, install the pipeline; else with check, make
        sure the switch runs our P4Info."""
        await self.conn.open(primary=primary)
        try:
            if push:
                await self.push_pipeline()
            elif check:
                await self.check_pipeline()
        except BaseException:
            await self.conn.close()
            raise
        return self

    async def close(self):
        await self.conn.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    # -- pipeline -----------------------------------------------------------
    def _pipeline_config(self) -> "p4runtime_pb2.ForwardingPipelineConfig":
        cfg = p4runtime_pb2.ForwardingPipelineConfig()
        cfg.p4info.CopyFrom(self.p4info.msg)
        cfg.p4_device_config = self.device_config
        cfg.cookie.cookie = pipeline_cookie(self.p4info, self.device_config)
        return cfg

    async def push_pipeline(self, raw=False):
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT): the switch checks
        the pair, then installs it, which wipes all tables."""
        await self.conn.set_pipeline(self._pipeline_config(), raw=raw)
        self.pipeline_pushed = True
        log.info("%s: pipeline pushed (%s)", self.addr, os.path.basename(self.p4info.source))

    async def switch_p4info(self, raw=False) -> Optional[P4Info]:
        cfg = await self.conn.get_pipeline(raw=raw)
        if not cfg.HasField("p4info") or not (cfg.p4info.tables or cfg.p4info.actions):
            return None
        return P4Info(cfg.p4info, "switch")

    async def check_pipeline(self):
        try:
            theirs = await self.switch_p4info()
        except PipelineMismatch:
            theirs = None
        if theirs is None:
            raise PipelineMismatch(f"switch at {self.addr} runs no pipeline: push it first "
                                   "(p4cc ctl push)")
        diff = self.p4info.difference(theirs)
        if diff:
            raise PipelineMismatch(f"P4Info mismatch between {self.p4info.source} and the "
                                   f"switch at {self.addr}: {diff}")

    # -- writes, with the journal ----------------------------------------------
    def _journal(self, updates):
        for u in updates:
            key = entities.entity_key(u.entity)
            if key is None:
                continue
            if u.type == DELETE:
                self.journal.pop(key, None)
            else:
                ent = p4runtime_pb2.Entity()
                ent.CopyFrom(u.entity)
                # Re-assigning a key keeps its first-written position, so a
                # replay recreates things in the order they were made.
                self.journal[key] = ent

    async def write(self, updates, journal=True, missing_ok=False, raw=False):
        try:
            await self.conn.write(updates, raw=raw)
        except WriteError as e:
            if missing_ok and e.codes() == {NOT_FOUND}:
                pass
            else:
                raise
        if journal:
            self._journal(updates)

    async def upsert(self, ents, journal=True, raw=False):
        """INSERT; the ones that already exist are MODIFYed. Default entries
        (which always exist) go straight to MODIFY."""
        ents = list(ents)
        first, later = [], []
        for e in ents:
            if e.HasField("table_entry") and e.table_entry.is_default_action:
                later.append(e)
            else:
                first.append(e)
        if first:
            try:
                await self.conn.write([_update(INSERT, e) for e in first], raw=raw)
            except WriteError as err:
                bad = {i for i, c, _ in err.errors if c != ALREADY_EXISTS}
                if bad:
                    raise
                later.extend(first[i] for i, _, _ in err.errors)
        if later:
            await self.conn.write([_update(MODIFY, e) for e in later], raw=raw)
        if journal:
            self._journal([_update(INSERT, e) for e in ents])

    async def read(self, ents, raw=False) -> list:
        return await self.conn.read(ents, raw=raw)

    # -- restore after a restart ---------------------------------------------
    async def _restore(self):
        """Called by the connection once it is back: make the switch hold
        again what this controller put there. A switch without a pipeline
        (it restarted) gets ours again; one running another P4Info is a
        mismatch we must not paper over."""
        try:
            cfg = await self.conn.get_pipeline(raw=True)
        except PipelineMismatch:
            # bmv2 answers FAILED_PRECONDITION when it has no pipeline.
            cfg = p4runtime_pb2.ForwardingPipelineConfig()
        has = bool(cfg.p4info.tables or cfg.p4info.actions)
        if not has:
            await self.push_pipeline(raw=True)
            why = "switch lost its pipeline: pushed it again"
        elif cfg.cookie.cookie == pipeline_cookie(self.p4info, self.device_config):
            why = "our pipeline is still installed"
        else:
            diff = self.p4info.difference(P4Info(cfg.p4info, "switch"))
            if diff:
                raise PipelineMismatch(f"switch at {self.addr} came back with another P4Info: "
                                       f"{diff}")
            why = "same P4Info installed by another client: kept"
        n = len(self.journal)
        if n:
            await self.upsert(list(self.journal.values()), journal=False, raw=True)
        for hook in self.restore_hooks:
            r = hook()
            if asyncio.iscoroutine(r):
                await r
        self.restores += 1
        self.conn._event(f"restored after reconnect: {why}; re-applied {n} entities"
                         f" and {len(self.restore_hooks)} target setting hook(s)", logging.WARNING)


# --------------------------------------------------------------------------
# the synchronous facade
# --------------------------------------------------------------------------

class _LoopThread:
    """An event loop on a daemon thread; run() blocks on a coroutine there.

    One per process, shared by every blocking Switch: grpc.aio's completion
    queue delivers to the loop a channel was made on, and a second loop
    closed while a channel of another is still live gets "Event loop is
    closed" callbacks (seen with the four switches of a parking lot)."""

    _shared: "_LoopThread | None" = None
    _lock = threading.Lock()

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="p4cc-grpc",
                                       daemon=True)
        self.thread.start()

    @classmethod
    def shared(cls) -> "_LoopThread":
        with cls._lock:
            if cls._shared is None or not cls._shared.thread.is_alive():
                cls._shared = cls()
            return cls._shared

    @classmethod
    def for_caller(cls) -> "_LoopThread":
        """The shared loop, or a private one when the caller runs on the
        shared loop's own thread (a blocking call from a callback there,
        e.g. a watch's emit, would wait on itself)."""
        lt = cls.shared()
        return cls() if threading.current_thread() is lt.thread else lt

    @property
    def private(self) -> bool:
        return self is not _LoopThread._shared

    def run(self, coro, timeout=None):
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def stop(self):
        """Stops a private loop (the shared one runs for the process)."""
        if not self.private:
            return
        if self.loop.is_running():
            async def drain():
                me = asyncio.current_task()
                rest = [t for t in asyncio.all_tasks() if t is not me]
                for t in rest:
                    t.cancel()
                await asyncio.gather(*rest, return_exceptions=True)
            try:
                asyncio.run_coroutine_threadsafe(drain(), self.loop).result(5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


class Switch:
    """Blocking wrapper of AsyncSwitch: same attributes, plain calls."""

    def __init__(self, *args, **kwargs):
        self._lt = _LoopThread.for_caller()

        async def make():
            return AsyncSwitch(*args, **kwargs)
        try:
            self.aio: AsyncSwitch = self._lt.run(make())
        except BaseException:
            self._lt.stop()
            raise
        _bind_collections(self, self.aio, self._lt.run)

    def ops(self, target=None):
        """The lab operations (set_k, set_loss, postcards...) as blocking calls."""
        from .operations import CcOps

        return SyncProxy(CcOps(self.aio, target), self._lt.run)

    @classmethod
    def connect(cls, addr="127.0.0.1:9559", device_id=1, p4info=None, device_config=None,
                election_id=1, role="", timeout=5.0, primary=True, push=False, check=True,
                reconnect=True, reconnect_timeout=120.0,
                device_config_loader=None) -> "Switch":
        sw = cls(addr, device_id, p4info, device_config, election_id, role, timeout,
                 reconnect, reconnect_timeout, device_config_loader)
        try:
            sw._lt.run(sw.aio.open(primary=primary, push=push, check=check))
        except BaseException:
            try:
                sw.close()
            except Exception:
                pass  # the open's own error is the one to report
            raise
        return sw

    def __getattr__(self, name):
        # tables, counters, registers, clone_sessions, multicast_groups,
        # p4info, journal, conn... come from the async core; coroutine
        # methods are run to completion.
        attr = getattr(self.aio, name)
        if asyncio.iscoroutinefunction(attr):
            def call(*a, **kw):
                return self._lt.run(attr(*a, **kw))
            return call
        return attr

    def run(self, coro):
        """Run any coroutine on the switch's loop (advanced use)."""
        return self._lt.run(coro)

    def close(self):
        try:
            self._lt.run(self.aio.close(), timeout=10)
        finally:
            self._lt.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
