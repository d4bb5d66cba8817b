"""Controller protocol logic against an in-process fake P4Runtime server:
arbitration, per-update errors, pipeline checks, restart + replay. Fast and
deterministic; the same behaviours are then checked on real switches in
test_integration_*.py."""
import asyncio
import threading
import time

import pytest

from ctl_helpers import free_port
from ctl_fake_p4rt import FakeServer
from p4cc_control import Switch
from p4cc_control.errors import NotPrimary, PipelineMismatch, SwitchUnreachable, WriteError

JSON = b'{"fake": "bmv2 json"}'


class ServerThread:
    def __init__(self):
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.th = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.th.start()
        self.srv = FakeServer(self.port)
        self.addr = f"127.0.0.1:{self.port}"

    def call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def start(self):
        self.call(self.srv.start())

    def stop(self):
        self.call(self.srv.stop())

    @property
    def state(self):
        return self.srv.servicer


@pytest.fixture
def server():
    s = ServerThread()
    s.start()
    yield s
    s.stop()
    s.loop.call_soon_threadsafe(s.loop.stop)


def connect(server, p4info, **kw):
    kw.setdefault("push", True)
    return Switch.connect(server.addr, p4info=p4info, device_config=JSON, timeout=3, **kw)


def test_unreachable_is_fast_and_clear(p4info):
    t0 = time.monotonic()
    with pytest.raises(SwitchUnreachable, match="127.0.0.1:1 within 1s"):
        Switch.connect("127.0.0.1:1", p4info=p4info, device_config=JSON, timeout=1)
    assert time.monotonic() - t0 < 3


def test_write_read_back(server, p4info):
    with connect(server, p4info) as sw:
        assert sw.is_primary
        sw.tables["ipv4_lpm"].insert({"dst_addr": "10.0.1.0/24"}, "forward",
                                     {"port": 1, "dst_mac": "00:00:0a:00:01:01"})
        [e] = sw.tables["ipv4_lpm"].read()
        assert e.match == {"dst_addr": "10.0.1.0/24"} and e.action == "forward"
        assert e.params == {"port": 1, "dst_mac": "00:00:0a:00:01:01"}
        with pytest.raises(WriteError, match="ALREADY_EXISTS"):
            sw.tables["ipv4_lpm"].insert({"dst_addr": "10.0.1.0/24"}, "drop")
        sw.tables["ipv4_lpm"].upsert({"dst_addr": "10.0.1.0/24"}, "drop")
        assert sw.tables["ipv4_lpm"].read()[0].action == "drop"
        sw.clone_sessions.upsert(100, [4], packet_length_bytes=94)
        assert sw.clone_sessions.read(100) == [{"session_id": 100, "replicas": [(4, 0)],
                                                "class_of_service": 0, "packet_length_bytes": 94}]
        sw.tables["ipv4_lpm"].delete({"dst_addr": "10.0.1.0/24"})
        assert sw.tables["ipv4_lpm"].read() == []
        assert len(sw.journal) == 1  # the clone session


def test_pipeline_checks(server, p4info):
    with pytest.raises(PipelineMismatch, match="runs no pipeline"):
        connect(server, p4info, push=False)
    connect(server, p4info).close()
    connect(server, p4info, push=False).close()  # same P4Info: fine
    from p4cc_control.p4info import P4Info, parse_p4info_bytes

    other = parse_p4info_bytes(p4info.serialize())
    other.msg.tables[0].match_fields[0].bitwidth = 16
    with pytest.raises(PipelineMismatch, match="P4Info mismatch.*differs"):
        connect(server, P4Info(other.msg), push=False)


def test_second_controller_not_primary(server, p4info):
    with connect(server, p4info, election_id=5):
        with pytest.raises(NotPrimary, match="seen election id 5.*--election-id 6"):
            connect(server, p4info, push=False, election_id=2)
        # Reads need no primary.
        with connect(server, p4info, push=False, election_id=2, primary=False) as ro:
            assert ro.tables["ipv4_lpm"].read() == []


def test_losing_primary_is_detected(server, p4info):
    a = connect(server, p4info, election_id=1)
    b = connect(server, p4info, push=False, election_id=9)
    deadline = time.time() + 5
    while a.is_primary and time.time() < deadline:
        time.sleep(0.05)
    assert not a.is_primary
    assert any("LOST primary" in text for _, text in a.conn.events)
    with pytest.raises(NotPrimary):
        a.tables["ipv4_lpm"].insert({"dst_addr": "10.0.0.1/32"}, "drop")
    b.close()
    a.close()


def test_restart_replays_state(server, p4info):
    sw = connect(server, p4info, reconnect_timeout=20)
    ops = sw.ops()
    sw.tables["ipv4_lpm"].insert({"dst_addr": "10.0.2.0/24"}, "forward",
                                 {"port": 2, "dst_mac": "00:00:0a:00:02:01"})
    ops.set_k(3, 20)
    ops.set_loss(2, 0.01)
    ops.set_switch_id(7)
    ops.enable_postcards(4, "10.0.0.100", "00:00:0a:00:00:64", "10.0.0.254", 10)
    server.stop()
    server.start()  # a new, empty switch on the same port
    assert server.state.config is None
    deadline = time.time() + 15
    while sw.aio.restores == 0 and time.time() < deadline:
        time.sleep(0.1)
    assert sw.aio.restores == 1, sw.conn.events
    assert server.state.config is not None
    assert ops.read_k() == {3: 20}
    assert ops.read_loss() == {2: 655 / 65536}
    assert sw.tables["switch_config"].read_default().params == {"switch_id": 7}
    assert sw.tables["ipv4_lpm"].read()[0].match == {"dst_addr": "10.0.2.0/24"}
    assert sw.clone_sessions.read(100)[0]["replicas"] == [(4, 0)]
    assert any("re-applied" in t for _, t in sw.conn.events)
    # And it keeps working afterwards.
    ops.set_k(3, 30)
    assert ops.read_k() == {3: 30}
    sw.close()


def test_write_during_outage_waits_for_restore(server, p4info):
    sw = connect(server, p4info, reconnect_timeout=20)
    sw.ops().set_k(1, 5)
    server.stop()

    def restart_later():
        time.sleep(1.0)
        server.start()
    threading.Thread(target=restart_later).start()
    time.sleep(0.3)
    sw.ops().set_k(2, 6)  # blocks until the switch is back and restored
    assert sw.ops().read_k() == {1: 5, 2: 6}
    sw.close()


def test_async_api(server, p4info):
    from p4cc_control import AsyncSwitch

    async def go():
        sw = AsyncSwitch(server.addr, p4info=p4info, device_config=JSON, timeout=3)
        await sw.open(push=True)
        try:
            await sw.tables["ipv4_lpm"].insert({"dst_addr": "10.0.0.1"}, "drop")
            ops = sw.ops()
            await ops.set_k(1, 40)
            assert await ops.read_k() == {1: 40}
            return [e.match for e in await sw.tables["ipv4_lpm"].read()]
        finally:
            await sw.close()
    assert asyncio.run(go()) == [{"dst_addr": "10.0.0.1/32"}]


def test_watch_survives_a_restart(server, p4info):
    connect(server, p4info).close()  # pipeline installed by a writer
    ro = Switch.connect(server.addr, p4info=p4info, device_config=JSON, timeout=1,
                        primary=False, reconnect=True)
    samples = []

    def emit(s):
        samples.append(s)
        if len(samples) == 2:  # after one good sample, the switch restarts
            server.stop()
        if "error" in s and not server.srv.server:
            server.start()
            connect(server, p4info).close()
    ro.ops().watch(interval=0.1, count=6, emit=emit)
    ro.close()
    kinds = ["error" if "error" in s else "rates" for s in samples]
    assert "error" in kinds and kinds[-1] == "rates", kinds
