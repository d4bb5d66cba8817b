"""One P4Runtime session with one device: channel, stream, arbitration,
RPCs with deadlines, and reconnection when the switch goes away.

Why a long-lived stream: P4Runtime makes a client primary (the only one
allowed to write) for as long as its StreamChannel stays open. A broken
stream is also the fastest signal that the switch died, so the reader task
doubles as the liveness watch: when it ends without us closing it, we
reconnect with exponential backoff and hand control to `on_restore` (the
switch layer re-pushes the pipeline and re-applies what it owns) before any
queued write is let through.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable, List, Optional

import grpc

from .errors import NotPrimary, PipelineMismatch, SwitchUnreachable, WriteError

from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc  # noqa: E402

log = logging.getLogger("p4cc.control")

GRPC_OPTIONS = [
    # bmv2 JSONs and full-table reads exceed gRPC's 4 MiB default.
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
    # Give up on a dead peer quickly instead of waiting for TCP.
    ("grpc.keepalive_time_ms", 10000),
    ("grpc.keepalive_timeout_ms", 5000),
]

CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def uint128(n: int) -> "p4runtime_pb2.Uint128":
    return p4runtime_pb2.Uint128(high=n >> 64, low=n & ((1 << 64) - 1))


def from_uint128(u) -> int:
    return (u.high << 64) | u.low


def _first_line(s: str) -> str:
    s = (s or "").strip()
    return s.splitlines()[0] if s else ""


def write_errors(e: grpc.aio.AioRpcError) -> List[tuple]:
    """Per-update errors of a failed Write: [(index, code, message)] for the
    updates that failed (P4Runtime packs one p4.v1.Error per update into
    google.rpc.Status.details)."""
    from google.rpc import status_pb2

    out = []
    for key, value in (e.trailing_metadata() or ()):
        if key != "grpc-status-details-bin":
            continue
        st = status_pb2.Status()
        try:
            st.ParseFromString(value)
        except Exception:
            continue
        for i, anym in enumerate(st.details):
            err = p4runtime_pb2.Error()
            if anym.Unpack(err) and err.canonical_code != 0:
                out.append((i, err.canonical_code, err.message))
    return out


class Connection:
    def __init__(self, addr: str, device_id: int = 1, election_id: int = 1, role: str = "",
                 timeout: float = 5.0, rpc_timeout: float = 30.0,
                 reconnect: bool = True, reconnect_timeout: float = 120.0):
        self.addr = addr
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.timeout = timeout
        self.rpc_timeout = rpc_timeout
        self.reconnect_enabled = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.want_primary = False
        self.is_primary = False
        self.primary_election_id: Optional[int] = None
        self.reconnects = 0
        self.events: List[tuple] = []  # (unix time, text): what happened, for tests/logs
        # Hooks the switch layer sets.
        self.on_restore: Optional[Callable[[], Awaitable[None]]] = None
        self.on_primary_lost: Optional[Callable[[int], None]] = None
        self.channel: Optional[grpc.aio.Channel] = None
        self.stub: Optional[p4runtime_pb2_grpc.P4RuntimeStub] = None
        self._call = None
        self._reader: Optional[asyncio.Task] = None
        self._reconnector: Optional[asyncio.Task] = None
        self._ready: Optional[asyncio.Event] = None
        self._closing = False
        self._failure: Optional[Exception] = None

    def _event(self, text: str, level=logging.INFO):
        self.events.append((time.time(), text))
        log.log(level, "%s (device %s): %s", self.addr, self.device_id, text)

    # -- opening ------------------------------------------------------------
    async def open(self, primary: bool = True):
        """Connect within `timeout` seconds; if `primary`, open the stream and
        win arbitration or raise NotPrimary."""
        self._ready = asyncio.Event()
        self.want_primary = primary
        await self._connect(self.timeout)
        self._ready.set()

    async def _connect(self, timeout: float):
        channel = grpc.aio.insecure_channel(self.addr, options=GRPC_OPTIONS)
        try:
            await asyncio.wait_for(channel.channel_ready(), timeout)
        except (asyncio.TimeoutError, grpc.aio.AioRpcError):
            await channel.close()
            raise SwitchUnreachable(
                f"switch unreachable: no P4Runtime server answered at {self.addr} "
                f"within {timeout:g}s") from None
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        old = self.channel
        self.channel, self.stub = channel, stub
        if old is not None:
            await old.close()
        if self.want_primary:
            try:
                await self._arbitrate(timeout)
            except BaseException:
                await self._drop_stream()
                raise

    async def _arbitrate(self, timeout: float):
        call = self.stub.StreamChannel()
        self._call = call
        req = p4runtime_pb2.StreamMessageRequest()
        arb = req.arbitration
        arb.device_id = self.device_id
        arb.election_id.CopyFrom(uint128(self.election_id))
        if self.role:
            arb.role.name = self.role
        try:
            await call.write(req)
            while True:
                resp = await asyncio.wait_for(call.read(), timeout)
                if resp is grpc.aio.EOF:
                    raise SwitchUnreachable(
                        f"switch at {self.addr} closed the stream during arbitration")
                if resp.WhichOneof("update") == "arbitration":
                    break
        except asyncio.TimeoutError:
            raise SwitchUnreachable(
                f"switch at {self.addr} did not answer arbitration within {timeout:g}s") from None
        except grpc.aio.AioRpcError as e:
            code = e.code()
            if code == grpc.StatusCode.NOT_FOUND:
                raise SwitchUnreachable(f"switch at {self.addr} has no device "
                                        f"{self.device_id}: {_first_line(e.details())}") from None
            if code not in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED,
                            grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.FAILED_PRECONDITION):
                # UNAVAILABLE, INTERNAL, CANCELLED...: the transport, not a
                # verdict (a switch that just restarted can reset the first
                # stream); the reconnect loop retries these.
                raise SwitchUnreachable(f"switch at {self.addr} failed arbitration: "
                                        f"{code.name}: {_first_line(e.details())}") from None
            # A refusal: PI answers INVALID_ARGUMENT when another connected
            # client already uses our election id.
            raise NotPrimary(
                f"arbitration refused by {self.addr} (device {self.device_id}, election id "
                f"{self.election_id}): {CODE_NAMES.get(e.code().value[0], e.code())}: "
                f"{_first_line(e.details())}; pass another --election-id") from None
        a = resp.arbitration
        self.primary_election_id = from_uint128(a.election_id) if a.HasField("election_id") else None
        if a.status.code != 0:
            # P4Runtime >= 1.1 keeps the highest election id it has seen (even
            # after that client left) until the switch restarts.
            raise NotPrimary(
                f"not primary on device {self.device_id} at {self.addr}: the switch has a "
                f"primary or has seen election id {self.primary_election_id} (ours "
                f"{self.election_id}); pass --election-id {(self.primary_election_id or 0) + 1}"
                " to become primary")
        self.is_primary = True
        self._reader = asyncio.get_running_loop().create_task(self._read_stream(call))

    async def _read_stream(self, call):
        """Watch the stream: arbitration changes and its end."""
        reason = "stream closed by the switch"
        try:
            while True:
                resp = await call.read()
                if resp is grpc.aio.EOF:
                    break
                kind = resp.WhichOneof("update")
                if kind == "arbitration":
                    a = resp.arbitration
                    pid = from_uint128(a.election_id)
                    self.primary_election_id = pid
                    if a.status.code == 0 and pid == self.election_id:
                        if not self.is_primary:
                            self._event("primary again")
                        self.is_primary = True
                    elif self.is_primary:
                        self.is_primary = False
                        self._event(f"LOST primary: controller with election id {pid} took "
                                    "over; writes will fail", logging.WARNING)
                        if self.on_primary_lost:
                            self.on_primary_lost(pid)
                elif kind == "error":
                    self._event(f"stream error from switch: {resp.error.message}",
                                logging.WARNING)
        except asyncio.CancelledError:
            return
        except grpc.aio.AioRpcError as e:
            reason = f"stream broken ({e.code().name}: {_first_line(e.details())})"
        except Exception as e:  # never let the watcher die silently
            reason = f"stream failed ({e!r})"
        if self._closing or call is not self._call:
            return
        self.is_primary = False
        self._event(reason, logging.WARNING)
        self._start_reconnect()

    def _start_reconnect(self):
        if self._closing or not self.reconnect_enabled:
            if not self._closing:
                self._failure = SwitchUnreachable(f"lost connection to {self.addr}")
            return
        if self._reconnector is None or self._reconnector.done():
            self._ready.clear()
            self._reconnector = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self):
        """Retry with exponential backoff (0.2 s .. 5 s) until
        reconnect_timeout, then restore state and release waiting RPCs."""
        delay, start = 0.2, time.monotonic()
        attempt = 0
        while not self._closing:
            attempt += 1
            try:
                await self._drop_stream()
                await self._connect(min(self.timeout, 3.0))
                self.reconnects += 1
                self._event(f"reconnected after {attempt} attempt(s), "
                            f"{time.monotonic() - start:.1f}s")
                if self.on_restore is not None:
                    await self.on_restore()
                self._failure = None
                self._ready.set()
                return
            except (NotPrimary, PipelineMismatch) as e:
                # Permanent: retrying cannot fix it. Writes now fail with it.
                self._failure = e
                self._event(f"reconnected but cannot restore: {e}", logging.ERROR)
                self._ready.set()
                return
            except Exception as e:  # unreachable, or restore failed: retry
                if time.monotonic() - start > self.reconnect_timeout:
                    self._failure = SwitchUnreachable(
                        f"switch at {self.addr} did not come back within "
                        f"{self.reconnect_timeout:g}s: {e}")
                    self._event(str(self._failure), logging.ERROR)
                    self._ready.set()
                    return
                log.debug("reconnect attempt %d failed: %s", attempt, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _drop_stream(self):
        call, self._call = self._call, None
        if call is not None:
            call.cancel()
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            try:
                await reader
            except (asyncio.CancelledError, Exception):
                pass

    async def close(self):
        self._closing = True
        if self._reconnector is not None and self._reconnector is not asyncio.current_task():
            self._reconnector.cancel()
        await self._drop_stream()
        if self.channel is not None:
            await self.channel.close()
            self.channel = None

    # -- RPCs ---------------------------------------------------------------
    async def wait_ready(self, timeout: Optional[float] = None):
        if self._ready is None:
            raise SwitchUnreachable("not connected: call open() first")
        if not self._ready.is_set():
            try:
                await asyncio.wait_for(self._ready.wait(),
                                       timeout if timeout is not None else self.reconnect_timeout)
            except asyncio.TimeoutError:
                raise SwitchUnreachable(f"switch at {self.addr} is still unreachable") from None
        if self._failure is not None:
            raise self._failure

    async def _rpc(self, fn, raw: bool):
        """Run fn() (one RPC); on UNAVAILABLE wait for the reconnection (which
        replays state) and retry once."""
        if not raw:
            await self.wait_ready()
        try:
            return await fn()
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE or raw or not self.reconnect_enabled:
                raise self._map_error(e) from None
            self._event("RPC failed with UNAVAILABLE; waiting for the switch", logging.WARNING)
            if self.want_primary:
                self._start_reconnect()
            else:
                await self._connect(self.timeout)
            await self.wait_ready()
            try:
                return await fn()
            except grpc.aio.AioRpcError as e2:
                raise self._map_error(e2) from None

    def _map_error(self, e: grpc.aio.AioRpcError) -> Exception:
        code = e.code()
        detail = _first_line(e.details())
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return SwitchUnreachable(f"switch unreachable at {self.addr}: {code.name}: {detail}")
        if code == grpc.StatusCode.PERMISSION_DENIED:
            return NotPrimary(f"switch at {self.addr} refused the write: not primary "
                              f"(election id {self.election_id}): {detail}")
        if code == grpc.StatusCode.FAILED_PRECONDITION:
            return PipelineMismatch(f"switch at {self.addr}: {detail or 'no pipeline'} "
                                    "(push the pipeline first: p4cc ctl push)")
        errs = write_errors(e)
        if errs:
            first = errs[0]
            msg = (f"switch rejected {len(errs)} update(s); first: #{first[0]} "
                   f"{CODE_NAMES.get(first[1], first[1])}: {_first_line(first[2])}")
            return WriteError(msg, errs)
        return WriteError(f"switch error {code.name}: {detail}",
                          [(0, code.value[0], detail)])

    def _deadline(self, t):
        return t if t is not None else self.rpc_timeout

    async def write(self, updates, atomicity=None, raw=False, timeout=None):
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id,
                                         election_id=uint128(self.election_id))
        if self.role:
            req.role = self.role
        if atomicity is not None:
            req.atomicity = atomicity
        req.updates.extend(updates)
        return await self._rpc(lambda: self.stub.Write(req, timeout=self._deadline(timeout)), raw)

    async def read(self, entities, raw=False, timeout=None) -> list:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        req.entities.extend(entities)

        async def go():
            out = []
            async for resp in self.stub.Read(req, timeout=self._deadline(timeout)):
                out.extend(resp.entities)
            return out

        return await self._rpc(go, raw)

    async def set_pipeline(self, config: "p4runtime_pb2.ForwardingPipelineConfig",
                           action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                           raw=False, timeout=120.0):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=uint128(self.election_id), action=action)
        if self.role:
            req.role = self.role
        req.config.CopyFrom(config)

        async def go():
            return await self.stub.SetForwardingPipelineConfig(req, timeout=timeout)

        try:
            return await self._rpc(go, raw)
        except WriteError as e:
            # A pipeline the switch cannot take is a mismatch, not a write error.
            raise PipelineMismatch(f"switch at {self.addr} rejected the pipeline: "
                                   f"{str(e).replace('switch error ', '')}") from None

    async def get_pipeline(self, raw=False, timeout=None) -> "p4runtime_pb2.ForwardingPipelineConfig":
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)

        async def go():
            return await self.stub.GetForwardingPipelineConfig(req, timeout=self._deadline(timeout))

        try:
            resp = await self._rpc(go, raw)
        except WriteError as e:
            if e.codes() == {5}:  # NOT_FOUND: the device id is wrong
                raise SwitchUnreachable(f"switch at {self.addr} has no device "
                                        f"{self.device_id}: {e.errors[0][2]}") from None
            raise
        return resp.config

    async def capabilities(self) -> str:
        resp = await self._rpc(lambda: self.stub.Capabilities(
            p4runtime_pb2.CapabilitiesRequest(), timeout=self.rpc_timeout), False)
        return resp.p4runtime_api_version
