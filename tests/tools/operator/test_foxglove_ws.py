"""The bridge's WebSocket server alone (no daemon): the protocol's framing, requests it refuses,
and a viewer that never reads costing a bounded queue."""

from __future__ import annotations

import asyncio
import json
import struct

import pytest
import websockets

from robodyn.tools.operator.foxglove_ws import SUBPROTOCOLS, FoxgloveServer


@pytest.fixture
def server(tmp_path):
    s = FoxgloveServer("test", "127.0.0.1", 0, backlog=16, token_dir=tmp_path / "tokens")
    yield s
    s.stop()


async def wait_until(predicate, rounds: int = 500) -> None:
    for _ in range(rounds):  # bounded: the server thread handles the request within a few rounds
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize("subprotocol", SUBPROTOCOLS)
def test_framing_subscriptions_and_refused_requests(server, subprotocol):
    ch = server.add_channel("/x", "json", "X", "{}", "jsonschema")
    other = server.add_channel("/y", "protobuf", "Y", b"\x00\x01", "protobuf")

    async def client():
        async with websockets.connect(f"{server.url}/?token={server.token.value}", subprotocols=[subprotocol]) as ws:
            assert ws.subprotocol == subprotocol
            info, ads = json.loads(await ws.recv()), json.loads(await ws.recv())
            assert info["op"] == "serverInfo" and info["capabilities"] == []
            assert [c["topic"] for c in ads["channels"]] == ["/x", "/y"]
            assert ads["channels"][1]["schema"] == "AAE="  # binary schemas travel as base64
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 5, "channelId": ch.id},
                                                                          {"id": 6, "channelId": 99}]}))
            assert "channel 99 refused" in json.loads(await ws.recv())["message"]
            await wait_until(ch.has_sinks)
            assert not other.has_sinks()
            for i in range(3):
                ch.log({"i": i, "v": float("nan") if i == 1 else 0.5}, 10 ** 18 + i)
            frames = [await ws.recv() for _ in range(3)]
            for i, f in enumerate(frames):
                assert struct.unpack_from("<BIQ", f) == (1, 5, 10 ** 18 + i)
                assert json.loads(f[13:]) == {"i": i, "v": None if i == 1 else 0.5}  # NaN is not JSON: null
            for request in (b"\x01binary", "not json", json.dumps({"op": "getParameters"}),
                            json.dumps({"op": "advertise", "channels": [{"id": 1, "topic": "/cmd"}]})):
                await ws.send(request)
                assert json.loads(await ws.recv())["level"] == 2
            await ws.send(json.dumps({"op": "unsubscribe", "subscriptionIds": [5]}))
            await wait_until(lambda: not ch.has_sinks())

    asyncio.run(client())


def test_a_viewer_that_never_reads_costs_a_bounded_queue(server):
    ch = server.add_channel("/x", "json", "X", "{}", "jsonschema")
    payload = {"data": "x" * 1000}

    async def stalled():
        async with websockets.connect(f"{server.url}/?token={server.token.value}", subprotocols=[SUBPROTOCOLS[1]],
                                      max_queue=1) as ws:
            await ws.recv()
            await ws.recv()
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 1, "channelId": ch.id}]}))
            await wait_until(ch.has_sinks)
            ws.transport.pause_reading()  # the viewer stops reading: the server's socket buffer fills
            for i in range(20_000):  # 20 MB offered to it
                ch.log(payload, i)
                if i % 1000 == 0:
                    await asyncio.sleep(0)
            await wait_until(lambda: server.dropped() > 0)
            queued = [len(v.queue) for v in server.viewers.values()]
            assert queued and max(queued) <= server.backlog
            assert server.dropped() >= 20_000 - 1000 * server.backlog  # most were dropped, none held

    asyncio.run(stalled())


def test_a_cookie_never_opens_the_bridge(server):
    """A browser sends a host's cookies to every port of it, another account's server's too: the
    bridge reads its token only from the address's ``?token=`` or ``Authorization: Bearer``."""
    token = server.token.value

    async def handshake(url, headers):
        async with websockets.connect(url, additional_headers=headers, subprotocols=[SUBPROTOCOLS[0]]) as ws:
            return ws.subprotocol

    cookies = {"Cookie": f"robodyn_view={token}; robodyn_view_{server.port}={token}; token={token}"}
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        asyncio.run(handshake(f"{server.url}/", cookies))
    assert refused.value.response.status_code == 401 and server.refused["token"] == 1
    assert asyncio.run(handshake(f"{server.url}/", {"Authorization": f"Bearer {token}"})) == SUBPROTOCOLS[0]
    assert asyncio.run(handshake(f"{server.url}/?token={token}", {})) == SUBPROTOCOLS[0]
