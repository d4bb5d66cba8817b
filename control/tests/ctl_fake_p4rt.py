"""A small in-process P4Runtime server for tests of the controller's
protocol logic (arbitration, per-update errors, reconnection, replay).

It is a test double, not a switch: it stores entities as bytes and answers
reads from them, enforcing what P4Runtime servers enforce and the
controller depends on (primary-only writes, ALREADY_EXISTS / NOT_FOUND per
update, FAILED_PRECONDITION without a pipeline, pipeline cookie). The real
switches are exercised by test_integration_*.py.
"""
from __future__ import annotations

import asyncio

import p4cc_control  # noqa: F401  (protobuf backend first)

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4cc_control.entities import entity_key


def _u128(u):
    return (u.high << 64) | u.low


class FakeP4Runtime(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device_id=1):
        self.device_id = device_id
        self.config = None  # ForwardingPipelineConfig
        self.store = {}     # key -> Entity
        self.defaults = {}  # table_id -> TableEntry
        self.counters = {}  # (counter_id, index) -> (packets, bytes)
        self.streams = {}   # stream context -> election id
        self.primary = None
        self.writes = 0

    # -- arbitration -------------------------------------------------------
    def _elect(self):
        best = max(self.streams.items(), key=lambda kv: kv[1][0], default=None)
        new = best[1][0] if best else None
        if new != self.primary:
            self.primary = new
            for ctx, (eid, q) in self.streams.items():
                q.put_nowait(self._arb(eid))

    def _arb(self, eid):
        r = p4runtime_pb2.StreamMessageResponse()
        r.arbitration.device_id = self.device_id
        if self.primary is not None:
            r.arbitration.election_id.high = self.primary >> 64
            r.arbitration.election_id.low = self.primary & (2**64 - 1)
        r.arbitration.status.code = 0 if eid == self.primary else 6
        return r

    async def StreamChannel(self, request_iterator, context):
        q: asyncio.Queue = asyncio.Queue()
        key = object()

        async def reader():
            async for req in request_iterator:
                if req.WhichOneof("update") == "arbitration":
                    eid = _u128(req.arbitration.election_id)
                    if any(e == eid for k, (e, _) in self.streams.items() if k is not key):
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                            "Election id already exists")
                    self.streams[key] = (eid, q)
                    old = self.primary
                    self._elect()
                    if old == self.primary:
                        q.put_nowait(self._arb(eid))
            q.put_nowait(None)

        task = asyncio.get_running_loop().create_task(reader())
        try:
            while True:
                msg = await q.get()
                if msg is None:
                    break
                yield msg
        finally:
            task.cancel()
            self.streams.pop(key, None)
            self._elect()

    def _check_primary(self, election_id, context):
        return _u128(election_id) == self.primary

    # -- pipeline ------------------------------------------------------------
    async def SetForwardingPipelineConfig(self, request, context):
        if not self._check_primary(request.election_id, context):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not primary")
        if not request.config.p4_device_config:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty device config")
        self.config = request.config
        self.store.clear()
        self.defaults.clear()
        self.counters.clear()
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    async def GetForwardingPipelineConfig(self, request, context):
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if self.config is None:  # as bmv2 answers (the embedded target: empty config)
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                "No forwarding pipeline config set for this device")
        if self.config is not None:
            resp.config.p4info.CopyFrom(self.config.p4info)
            resp.config.cookie.CopyFrom(self.config.cookie)
        return resp

    async def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version="1.3.0-fake")

    # -- write/read ------------------------------------------------------------
    async def Write(self, request, context):
        if self.config is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "No forwarding pipeline")
        if not self._check_primary(request.election_id, context):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not primary")
        self.writes += 1
        errors, failed = [], False
        for u in request.updates:
            code, msg = self._apply(u)
            failed |= code != 0
            errors.append(p4runtime_pb2.Error(canonical_code=code, message=msg))
        if failed:
            st = status_pb2.Status(code=2, message="write failed")
            for e in errors:
                st.details.add().Pack(e)
            await context.abort(grpc.StatusCode.UNKNOWN, "write failed",
                                trailing_metadata=(("grpc-status-details-bin",
                                                    st.SerializeToString()),))
        return p4runtime_pb2.WriteResponse()

    def _apply(self, u):
        ent = u.entity
        kind = ent.WhichOneof("entity")
        if kind == "counter_entry":
            ce = ent.counter_entry
            self.counters[(ce.counter_id, ce.index.index)] = (ce.data.packet_count,
                                                              ce.data.byte_count)
            return 0, ""
        if kind == "table_entry" and ent.table_entry.is_default_action:
            if u.type != p4runtime_pb2.Update.MODIFY:
                return 3, "default entry: MODIFY only"
            self.defaults[ent.table_entry.table_id] = ent.table_entry
            return 0, ""
        key = entity_key(ent)
        if key is None:
            return 12, "unsupported entity"
        if u.type == p4runtime_pb2.Update.INSERT:
            if key in self.store:
                return 6, "Match entry exists, use MODIFY if you wish to change action"
            self.store[key] = ent
        elif u.type == p4runtime_pb2.Update.MODIFY:
            if key not in self.store:
                return 5, "Cannot find match entry"
            self.store[key] = ent
        elif u.type == p4runtime_pb2.Update.DELETE:
            if key not in self.store:
                return 5, "Cannot find match entry"
            del self.store[key]
        return 0, ""

    async def Read(self, request, context):
        if self.config is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "No forwarding pipeline")
        resp = p4runtime_pb2.ReadResponse()
        for q in request.entities:
            kind = q.WhichOneof("entity")
            if kind == "table_entry":
                te = q.table_entry
                if te.is_default_action:
                    if te.table_id in self.defaults:
                        resp.entities.add(table_entry=self.defaults[te.table_id])
                    continue
                for e in self.store.values():
                    if e.HasField("table_entry") and e.table_entry.table_id == te.table_id:
                        resp.entities.add().CopyFrom(e)
            elif kind == "packet_replication_engine_entry":
                for e in self.store.values():
                    if e.HasField("packet_replication_engine_entry"):
                        resp.entities.add().CopyFrom(e)
            elif kind == "counter_entry":
                ce = q.counter_entry
                info = next(c for c in self.config.p4info.counters
                            if c.preamble.id == ce.counter_id)
                idxs = [ce.index.index] if ce.HasField("index") else range(info.size)
                for i in idxs:
                    pk, by = self.counters.get((ce.counter_id, i), (0, 0))
                    out = resp.entities.add().counter_entry
                    out.counter_id, out.index.index = ce.counter_id, i
                    out.data.packet_count, out.data.byte_count = pk, by
        yield resp


class FakeServer:
    """Start/stop a FakeP4Runtime on a fixed port (stop+start = a restart
    that loses all state, like a switch process dying)."""

    def __init__(self, port: int):
        self.port = port
        self.server = None
        self.servicer = None

    async def start(self):
        self.servicer = FakeP4Runtime()
        self.server = grpc.aio.server()
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.servicer, self.server)
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        await self.server.start()

    async def stop(self):
        if self.server is not None:
            await self.server.stop(grace=None)
            self.server = None
