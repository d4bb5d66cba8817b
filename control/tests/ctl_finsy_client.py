"""A second, independent P4Runtime client (finsy) against a running switch.

Every check writes through finsy, reads back, and compares the two exactly:
as protobuf messages (a raw Read through finsy's own P4Client, so nothing of
finsy's decoding hides a difference, e.g. the form of a replica's port) and,
where finsy has a type for it, as finsy objects too. Error checks compare
the gRPC status and the per-update codes of a batch.

It runs in its own venv (.venv-finsy, made by `make setup` from
requirements-finsy.txt): finsy bundles its own P4Runtime protos and needs a
current protobuf, which cannot share a process with the p4runtime wheel the
rest of p4cc uses. test_ctl_finsy.py starts the switch and runs this script.

usage: ctl_finsy_client.py GRPC_ADDR P4INFO.txtpb DEVICE_CONFIG.json
Prints one JSON object per check ({"check", "ok", "detail"}) on stdout;
exit 0 when every check passed, 1 when one failed, 2 when the run broke.
"""
from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path

import grpc
from finsy import (P4Client, P4ClientError, P4CloneSessionEntry, P4CounterData,
                   P4CounterEntry, P4MulticastGroupEntry, P4RegisterEntry, P4TableAction,
                   P4TableEntry, P4TableMatch, Switch, SwitchOptions)
from finsy.grpcutil import GRPCStatusCode as Code
from finsy.proto import p4r

DEVICE_ID = 1
LPM = "CcIngress.forwarding.ipv4_lpm"
FORWARD = "CcIngress.forwarding.forward"
ECN = "CcEgress.ecn.ecn_threshold"
SET_K = "CcEgress.ecn.set_threshold"
RX_PACKETS = "CcIngress.rx.port_packets"   # unit BOTH
CE_MARKS = "CcEgress.ecn.ce_marks"         # unit PACKETS
SAMPLE_COUNT = "CcEgress.postcards.postcard_sample_count"  # bit<32>[1]

RESULTS: list[dict] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    RESULTS.append({"check": name, "ok": bool(ok), "detail": "" if ok else detail})
    print(json.dumps(RESULTS[-1]), flush=True)


def show(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    return str(v).replace("\n", " ").strip() if hasattr(v, "ListFields") else repr(v)


def same(name: str, written, read) -> None:
    check(name, written == read, f"written {show(written)} / read {show(read)}")


def as_set(msgs) -> list[bytes]:
    """Entities compared regardless of order (the spec does not fix it)."""
    return sorted(m.SerializeToString(deterministic=True) for m in msgs)


def update(kind: str, entity: p4r.Entity) -> p4r.Update:
    return p4r.Update(type=p4r.Update.Type.Value(kind), entity=entity)


def pre_entity(*, clone: p4r.CloneSessionEntry | None = None,
               group: p4r.MulticastGroupEntry | None = None) -> p4r.Entity:
    if clone is not None:
        return p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
            clone_session_entry=clone))
    return p4r.Entity(packet_replication_engine_entry=p4r.PacketReplicationEngineEntry(
        multicast_group_entry=group))


def replica_port_bytes(port: bytes, instance: int = 0) -> p4r.Replica:
    """The P4Runtime >= 1.4 form, built from finsy's own protobuf classes."""
    return p4r.Replica(port=port, instance=instance)


def replica_egress_port(port: int, instance: int = 0) -> p4r.Replica:
    """The deprecated uint32 form."""
    return p4r.Replica(egress_port=port, instance=instance)


class Checks:
    def __init__(self, sw: Switch, raw: P4Client, p4info_path: Path, json_path: Path):
        self.sw, self.raw = sw, raw
        self.schema = sw.p4info
        self.p4info_path, self.json_path = p4info_path, json_path

    # -- helpers ----------------------------------------------------------
    async def read_raw(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        out: list[p4r.Entity] = []
        req = p4r.ReadRequest(device_id=DEVICE_ID, entities=list(entities))
        async for reply in self.raw.request_iter(req):
            out.extend(reply.entities)
        return out

    async def read_finsy(self, entity) -> list:
        return [e async for e in self.sw.read(entity)]

    async def write_codes(self, updates) -> tuple[Code, dict[int, Code]]:
        """The Write's status code and the failed updates' codes by index."""
        try:
            await self.sw.write(updates)
        except P4ClientError as ex:
            return ex.code, {i: e.canonical_code for i, e in ex.details.items()}
        return Code.OK, {}

    def enc(self, obj) -> p4r.Entity:
        return obj.encode(self.schema)

    def canon(self, obj):
        """finsy's own reading of what it wrote (it decodes names to aliases,
        values to ints, replicas to ports), to compare with what it reads."""
        return type(obj).decode(self.enc(obj), self.schema)

    # -- checks -----------------------------------------------------------
    async def pipeline(self):
        # finsy pushed the pipeline on connect (p4info + p4blob given).
        reply = await self.raw.request(p4r.GetForwardingPipelineConfigRequest(
            device_id=DEVICE_ID,
            response_type=p4r.GetForwardingPipelineConfigRequest.ResponseType.ALL))
        cfg = reply.config
        same("pipeline: P4Info read back", self.schema.p4info, cfg.p4info)
        check("pipeline: device config read back", cfg.p4_device_config == self.json_path.read_bytes(),
              f"{len(cfg.p4_device_config)} bytes read, {self.json_path.stat().st_size} written")
        same("pipeline: cookie read back", self.schema.p4cookie, cfg.cookie.cookie)
        reply = await self.raw.request(p4r.GetForwardingPipelineConfigRequest(
            device_id=DEVICE_ID,
            response_type=p4r.GetForwardingPipelineConfigRequest.ResponseType.COOKIE_ONLY))
        check("pipeline: COOKIE_ONLY has only the cookie",
              not reply.config.HasField("p4info") and not reply.config.p4_device_config
              and reply.config.cookie.cookie == self.schema.p4cookie, show(reply.config))

    async def table_entries(self):
        route = P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.0.2.0/24"),
                             action=P4TableAction(FORWARD, port=2, dst_mac="00:00:0a:00:02:01"))
        await self.sw.insert([route])
        query = P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.0.2.0/24"))
        same("table: insert, read back (protobuf)", [self.enc(route)],
             await self.read_raw(self.enc(query)))
        same("table: insert, read back (finsy)", [self.canon(route)], await self.read_finsy(query))

        moved = P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.0.2.0/24"),
                             action=P4TableAction(FORWARD, port=3, dst_mac="00:00:0a:00:03:01"))
        await self.sw.modify([moved])
        same("table: modify, read back", [self.enc(moved)], await self.read_raw(self.enc(query)))

        ks = [P4TableEntry(ECN, match=P4TableMatch(egress_port=p), action=P4TableAction(SET_K, k_depth=k))
              for p, k in ((1, 20), (2, 40), (3, 0xFFFFFFFF))]
        await self.sw.insert(ks)
        got = await self.read_raw(self.enc(P4TableEntry(ECN)))
        check("table: batch insert, wildcard read of the table",
              as_set(got) == as_set(self.enc(k) for k in ks), f"read {show(got)}")

        default = P4TableEntry(LPM, is_default_action=True,
                               action=P4TableAction(FORWARD, port=1, dst_mac="00:00:0a:00:01:01"))
        await self.sw.modify([default])
        same("table: default action, read back", [self.enc(default)],
             await self.read_raw(self.enc(P4TableEntry(LPM, is_default_action=True))))

        await self.sw.delete([moved] + ks)
        same("table: delete, read back nothing", [],
             await self.read_raw(self.enc(P4TableEntry(LPM)), self.enc(P4TableEntry(ECN))))

    async def counters_and_registers(self):
        both = P4CounterEntry(RX_PACKETS, index=3, data=P4CounterData(byte_count=123456, packet_count=789))
        pkts = P4CounterEntry(CE_MARKS, index=7, data=P4CounterData(packet_count=42))
        await self.sw.modify([both, pkts])
        same("counter: write (bytes and packets), read back", [self.enc(both)],
             await self.read_raw(self.enc(P4CounterEntry(RX_PACKETS, index=3))))
        same("counter: write (packets), read back", [self.enc(pkts)],
             await self.read_raw(self.enc(P4CounterEntry(CE_MARKS, index=7))))
        same("counter: read back (finsy)", [self.canon(both)],
             await self.read_finsy(P4CounterEntry(RX_PACKETS, index=3)))
        reg = P4RegisterEntry(SAMPLE_COUNT, index=0, data=0xDEADBEEF)
        await self.sw.modify([reg])
        same("register: write, read back", [self.enc(reg)],
             await self.read_raw(self.enc(P4RegisterEntry(SAMPLE_COUNT, index=0))))

    async def replication(self):
        # finsy encodes replicas in the deprecated uint32 form for a server
        # older than 1.5 (this one says 1.4.0): its own types write that form.
        legacy = P4CloneSessionEntry(100, replicas=[(2, 0), (3, 1), (0, 2)], packet_length_bytes=94)
        enc = self.enc(legacy)
        forms = {r.WhichOneof("port_kind")
                 for r in enc.packet_replication_engine_entry.clone_session_entry.replicas}
        check("pre: finsy writes egress_port (uint32) to a 1.4 server", forms == {"egress_port"},
              f"server says {self.sw.p4runtime_version}, finsy wrote {forms}")
        # The bytes form, built from finsy's protobuf classes.
        new = pre_entity(clone=p4r.CloneSessionEntry(
            session_id=101, packet_length_bytes=0,
            replicas=[replica_port_bytes(b"\x02"), replica_port_bytes(b"\x00", 1),
                      replica_port_bytes(b"\x01\xff", 2)]))
        mixed = pre_entity(clone=p4r.CloneSessionEntry(
            session_id=102, replicas=[replica_egress_port(1), replica_port_bytes(b"\x04", 3)]))
        await self.sw.write([update("INSERT", enc), update("INSERT", new), update("INSERT", mixed)])
        for name, written in (("egress_port", enc), ("port bytes", new), ("mixed", mixed)):
            sid = written.packet_replication_engine_entry.clone_session_entry.session_id
            q = pre_entity(clone=p4r.CloneSessionEntry(session_id=sid))
            same(f"pre: clone session, replicas as {name}, read back", [written], await self.read_raw(q))
        same("pre: clone session read back (finsy)", [self.canon(legacy)],
             await self.read_finsy(P4CloneSessionEntry(100)))

        g_legacy = P4MulticastGroupEntry(1, replicas=[1, 2, (3, 5)], metadata=b"\x00group-1\xff")
        g_new = pre_entity(group=p4r.MulticastGroupEntry(
            multicast_group_id=2, replicas=[replica_port_bytes(b"\x01"), replica_port_bytes(b"\x02", 1)]))
        g_mixed = pre_entity(group=p4r.MulticastGroupEntry(
            multicast_group_id=3, metadata=b"m",
            replicas=[replica_port_bytes(b"\x00"), replica_egress_port(0, 1), replica_egress_port(7, 2)]))
        await self.sw.write([update("INSERT", self.enc(g_legacy)), update("INSERT", g_new),
                             update("INSERT", g_mixed)])
        for name, written in (("egress_port", self.enc(g_legacy)), ("port bytes", g_new), ("mixed", g_mixed)):
            gid = written.packet_replication_engine_entry.multicast_group_entry.multicast_group_id
            q = pre_entity(group=p4r.MulticastGroupEntry(multicast_group_id=gid))
            same(f"pre: multicast group, replicas as {name}, read back", [written], await self.read_raw(q))
        same("pre: multicast group read back (finsy)", [self.canon(g_legacy)],
             await self.read_finsy(P4MulticastGroupEntry(1)))

        everything = await self.read_raw(p4r.Entity(
            packet_replication_engine_entry=p4r.PacketReplicationEngineEntry()))
        written_all = [enc, new, mixed, self.enc(g_legacy), g_new, g_mixed]
        check("pre: wildcard read, every entry in its forms", as_set(everything) == as_set(written_all),
              f"read {show(everything)}")

        # MODIFY to the other form: the last write is what reads back.
        flipped = pre_entity(clone=p4r.CloneSessionEntry(
            session_id=100, packet_length_bytes=94,
            replicas=[replica_port_bytes(b"\x02"), replica_port_bytes(b"\x03", 1)]))
        await self.sw.write([update("MODIFY", flipped)])
        same("pre: modify egress_port -> port bytes, read back", [flipped],
             await self.read_raw(pre_entity(clone=p4r.CloneSessionEntry(session_id=100))))

        await self.sw.write([update("DELETE", e) for e in [flipped, new, mixed, self.enc(g_legacy), g_new, g_mixed]])
        same("pre: delete, read back nothing", [], await self.read_raw(p4r.Entity(
            packet_replication_engine_entry=p4r.PacketReplicationEngineEntry())))

    async def errors(self):
        route = P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.9.0.0/16"),
                             action=P4TableAction(FORWARD, port=1, dst_mac="00:00:0a:09:00:01"))
        await self.sw.insert([route])
        unknown_table = self.enc(route)
        unknown_table.table_entry.table_id = 0x02FFFFFF  # no table has this id
        same("error: entry for an unknown table -> NOT_FOUND",
             (Code.UNKNOWN, {0: Code.NOT_FOUND}), await self.write_codes([update("INSERT", unknown_table)]))
        same("error: duplicate insert -> ALREADY_EXISTS",
             (Code.UNKNOWN, {0: Code.ALREADY_EXISTS}), await self.write_codes([update("INSERT", self.enc(route))]))
        # 512 in a bit<9> key and in a bit<9> action parameter: too wide
        # (spec "Bytestrings": OUT_OF_RANGE). finsy itself refuses to encode
        # such values, so they are set in the protobuf.
        wide_key = self.enc(P4TableEntry(ECN, match=P4TableMatch(egress_port=4), action=P4TableAction(SET_K, k_depth=1)))
        wide_key.table_entry.match[0].exact.value = b"\x02\x00"
        same("error: key value wider than its field -> OUT_OF_RANGE",
             (Code.UNKNOWN, {0: Code.OUT_OF_RANGE}), await self.write_codes([update("INSERT", wide_key)]))
        wide_param = self.enc(P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.8.0.0/16"),
                                           action=P4TableAction(FORWARD, port=1, dst_mac="00:00:0a:08:00:01")))
        wide_param.table_entry.action.action.params[0].value = b"\x02\x00"
        same("error: action parameter wider than its field -> OUT_OF_RANGE",
             (Code.UNKNOWN, {0: Code.OUT_OF_RANGE}), await self.write_codes([update("INSERT", wide_param)]))
        missing = self.enc(P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.7.0.0/16"),
                                        action=P4TableAction(FORWARD, port=1, dst_mac="00:00:0a:07:00:01")))
        same("error: modify of a missing entry -> NOT_FOUND",
             (Code.UNKNOWN, {0: Code.NOT_FOUND}), await self.write_codes([update("MODIFY", missing)]))
        same("error: delete of a missing entry -> NOT_FOUND",
             (Code.UNKNOWN, {0: Code.NOT_FOUND}), await self.write_codes([update("DELETE", missing)]))
        ok_one = self.enc(P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.6.0.0/16"),
                                       action=P4TableAction(FORWARD, port=2, dst_mac="00:00:0a:06:00:01")))
        same("error: batch, one code per failed update (CONTINUE_ON_ERROR)",
             (Code.UNKNOWN, {1: Code.ALREADY_EXISTS, 2: Code.NOT_FOUND, 3: Code.OUT_OF_RANGE}),
             await self.write_codes([update("INSERT", ok_one), update("INSERT", self.enc(route)),
                                     update("INSERT", unknown_table), update("INSERT", wide_key)]))
        same("error: the batch's good update was applied", [ok_one], await self.read_raw(
            self.enc(P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.6.0.0/16")))))
        big_index = self.enc(P4CounterEntry(RX_PACKETS, index=512, data=P4CounterData(packet_count=1)))
        same("error: counter index beyond the array -> OUT_OF_RANGE",
             (Code.UNKNOWN, {0: Code.OUT_OF_RANGE}), await self.write_codes([update("MODIFY", big_index)]))
        cos = self.enc(P4CloneSessionEntry(200, replicas=[1], class_of_service=3))
        same("error: clone session class_of_service -> UNIMPLEMENTED",
             (Code.UNKNOWN, {0: Code.UNIMPLEMENTED}), await self.write_codes([update("INSERT", cos)]))
        try:
            await self.read_raw(unknown_table)
            got = Code.OK
        except P4ClientError as ex:
            got = ex.code
        same("error: read of an unknown table -> NOT_FOUND", Code.NOT_FOUND, got)
        await self.sw.delete([route, P4TableEntry(LPM, match=P4TableMatch(dst_addr="10.6.0.0/16"))])

    async def undecodable_stream_message(self, addr: str):
        """Bytes that are no StreamMessageRequest, on a stream of its own:
        the stream must end with INVALID_ARGUMENT, not OK."""
        async with grpc.aio.insecure_channel(addr) as ch:
            call = ch.stream_stream("/p4.v1.P4Runtime/StreamChannel",
                                    request_serializer=lambda b: b,
                                    response_deserializer=p4r.StreamMessageResponse.FromString)()
            # Field 1 (arbitration) announces 5 bytes, 1 follows.
            await call.write(b"\x0a\x05\x01")
            try:
                msg = await asyncio.wait_for(call.read(), 10)
                detail = f"read {msg!r}"
            except grpc.aio.AioRpcError as ex:
                detail = ex.details() or ""
            code = await asyncio.wait_for(call.code(), 10)
            same("stream: undecodable message -> INVALID_ARGUMENT",
                 (grpc.StatusCode.INVALID_ARGUMENT, True), (code, "StreamMessageRequest" in detail))


async def main(addr: str, p4info: Path, device_config: Path) -> int:
    opts = SwitchOptions(p4info=p4info, p4blob=device_config, p4force=True, device_id=DEVICE_ID)
    async with Switch("sw", addr, opts) as sw:
        check("connect: primary, pipeline pushed by finsy", sw.is_primary, f"primary={sw.is_primary}")
        raw = P4Client(addr)
        await raw.open(schema=sw.p4info)
        try:
            c = Checks(sw, raw, p4info, device_config)
            await c.pipeline()
            await c.table_entries()
            await c.counters_and_registers()
            await c.replication()
            await c.errors()
            await c.undecodable_stream_message(addr)
        finally:
            await raw.close()
    return 0 if all(r["ok"] for r in RESULTS) else 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    try:
        rc = asyncio.run(asyncio.wait_for(
            main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])), 120))
    except Exception:  # the run broke: say where, for the test's message
        traceback.print_exc()
        rc = 2
    sys.exit(rc)
