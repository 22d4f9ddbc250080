"""The bridge's WebSocket server: the part of Foxglove's WebSocket protocol a read-only viewer needs,
under both subprotocol names viewers ask for.

``foxglove.websocket.v1`` is the published protocol (github.com/foxglove/ws-protocol, docs/spec.md)
that open-source viewers and older Foxglove clients speak; ``foxglove.sdk.v1`` is what current
Foxglove clients ask for. The foxglove-sdk server answers only the second (HTTP 400 to the first)
and has no hook for a token or an Origin check, so the bridge serves the protocol itself:

- on connect: ``serverInfo`` (no capability: no client publishing, services, parameters, assets)
  and one ``advertise`` of every channel;
- ``subscribe`` / ``unsubscribe`` from the client; binary ``messageData`` (opcode 1, uint32
  subscription id, uint64 log time in ns, little-endian, then the payload) to it;
- every other client request (``advertise`` to publish, service calls, parameters, binary frames)
  is answered with an error ``status`` and otherwise ignored.

The frames the two subprotocols share are identical for this subset, so both names get the same
bytes. Before the handshake a connection must name this server in ``Host``, come from no foreign
``Origin``, and carry the bridge's token (``?token=`` in the URL or ``Authorization: Bearer``; a
cookie is never read): see listen.py. Each viewer has a bounded queue; a slow viewer loses its
oldest messages, never holds up the bridge or the daemon.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import itertools
import json
import math
import struct
import threading
from http import HTTPStatus

from .listen import ViewToken, foreign_request, presented_token

SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")
MAX_CLIENT_MESSAGE = 64 * 1024  # a viewer sends only small JSON requests
_HEADER = struct.Struct("<BIQ")
MESSAGE_DATA = 1


def _finite(o):
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


class Channel:
    """One advertised topic; :meth:`log` sends a message to the viewers subscribed to it."""

    def __init__(self, server: "FoxgloveServer", cid: int, topic: str, encoding: str, schema_name: str,
                 schema: str, schema_encoding: str):
        self.server, self.id, self.topic, self.encoding = server, cid, topic, encoding
        self.advertisement = {"id": cid, "topic": topic, "encoding": encoding, "schemaName": schema_name,
                              "schema": schema, "schemaEncoding": schema_encoding}

    def has_sinks(self) -> bool:
        return self.server.subscribed(self.id)

    def log(self, msg, log_time: int) -> None:
        if not self.has_sinks():
            return
        if self.encoding == "json":
            try:
                payload = json.dumps(msg, allow_nan=False, separators=(",", ":")).encode()
            except ValueError:  # a NaN from a sensor: JSON has none, viewers get null
                payload = json.dumps(_finite(msg), separators=(",", ":")).encode()
        else:  # a foxglove.messages object: its protobuf bytes
            payload = msg.encode()
        self.server.publish(self.id, int(log_time), payload)


class Viewer:
    """One connection: its subscriptions (subscription id -> channel id) and its bounded queue."""

    def __init__(self, vid: int, backlog: int, loop: asyncio.AbstractEventLoop):
        self.id = vid
        self.subscriptions: dict[int, int] = {}
        self.queue: collections.deque = collections.deque(maxlen=backlog)
        self.dropped = 0
        self.loop = loop
        self.wake = asyncio.Event()
        self.wake_pending = False  # guarded by the server's lock: one wake-up per burst, not per message

    def put(self, item) -> bool:
        """Queue ``item``; True if the writer must be woken (call outside the lock)."""
        if len(self.queue) == self.queue.maxlen:
            self.dropped += 1
        self.queue.append(item)
        if self.wake_pending:
            return False
        self.wake_pending = True
        return True


class FoxgloveServer:
    """Serves channels to Foxglove-protocol viewers on ``host:port`` from its own thread."""

    def __init__(self, name: str, host: str, port: int, listener=None, backlog: int = 4096,
                 allow_origins=(), token_dir=None):
        self.name, self.host, self.listener, self.backlog = name, host, listener, backlog
        self.allow_origins = tuple(o.lower().rstrip("/") for o in allow_origins)
        self.lock = threading.Lock()
        self.channels: dict[int, Channel] = {}
        self.viewers: dict[int, Viewer] = {}
        self.watchers: dict[int, int] = collections.Counter()  # channel id -> subscriptions
        self.refused = collections.Counter()  # why handshakes were refused
        self._ids = itertools.count(1)
        self.loop = asyncio.new_event_loop()
        started, failure = threading.Event(), []

        async def start():
            from websockets.asyncio.server import serve

            try:
                self._server = await serve(self._handle, host, port, subprotocols=list(SUBPROTOCOLS),
                                           process_request=self._check_request, compression=None,
                                           max_size=MAX_CLIENT_MESSAGE, server_header="robodyn-bridge")
            except OSError as exc:
                failure.append(exc)
            finally:
                started.set()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(start())
            if not failure:
                self.loop.run_forever()

        self.thread = threading.Thread(target=run, name="robodyn-bridge-ws", daemon=True)
        self.thread.start()
        started.wait()
        if failure:
            self.thread.join(5.0)
            raise RuntimeError(str(failure[0]))
        self.port = self._server.sockets[0].getsockname()[1]
        self.token = ViewToken("foxglove-bridge", host, self.port, token_dir)
        self.session = self.token.value[:8]  # a new session per start, shown to viewers
        self.url = f"ws://{host if ':' not in host else f'[{host}]'}:{self.port}"

    # ------------------------------------------------------------------ channels (any thread)

    def add_channel(self, topic: str, encoding: str, schema_name: str, schema, schema_encoding: str) -> Channel:
        if isinstance(schema, (bytes, bytearray)):  # binary schemas (protobuf) travel as base64
            schema = base64.b64encode(schema).decode()
        with self.lock:
            ch = Channel(self, len(self.channels) + 1, topic, encoding, schema_name, schema, schema_encoding)
            self.channels[ch.id] = ch
        return ch

    def subscribed(self, cid: int) -> bool:
        return self.watchers.get(cid, 0) > 0

    def publish(self, cid: int, log_time: int, payload: bytes) -> None:
        wake = []
        with self.lock:
            for v in self.viewers.values():
                for sid, c in v.subscriptions.items():
                    if c == cid and v.put(_HEADER.pack(MESSAGE_DATA, sid, log_time) + payload):
                        wake.append(v)
        for v in wake:
            self.loop.call_soon_threadsafe(v.wake.set)

    def dropped(self) -> int:
        with self.lock:
            return sum(v.dropped for v in self.viewers.values())

    def stop(self) -> None:
        async def close():
            self._server.close()
            await self._server.wait_closed()

        if self.thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self.thread.join(10)
        self.token.remove()

    # ------------------------------------------------------------------ connections (server thread)

    def _check_request(self, connection, request):
        why = foreign_request(request.headers, self.host, self.port, self.allow_origins)
        if why:
            self.refused["foreign"] += 1
            return connection.respond(HTTPStatus.FORBIDDEN, why + "\n")
        if not self.token.matches(presented_token(request.headers, request.path)):
            self.refused["token"] += 1
            return connection.respond(HTTPStatus.UNAUTHORIZED, "this bridge needs its token: connect to the address "
                                      f"`robodyn bridge foxglove` printed (ws://...?token=...), or read it from "
                                      f"{self.token.path}\n")
        return None

    async def _handle(self, ws) -> None:
        viewer = Viewer(next(self._ids), self.backlog, self.loop)
        with self.lock:
            self.viewers[viewer.id] = viewer
            ads = [c.advertisement for c in self.channels.values()]
        writer = asyncio.ensure_future(self._write(ws, viewer))
        try:
            await ws.send(json.dumps({"op": "serverInfo", "name": self.name, "capabilities": [],
                                      "supportedEncodings": [], "metadata": {}, "sessionId": self.session}))
            await ws.send(json.dumps({"op": "advertise", "channels": ads}))
            async for frame in ws:
                self._request(viewer, frame)
        except Exception:  # a viewer that goes away or sends garbage ends its own connection only
            pass
        finally:
            writer.cancel()
            with self.lock:
                self.viewers.pop(viewer.id, None)
                gone = list(viewer.subscriptions.values())
                for cid in gone:
                    self.watchers[cid] -= 1
            for cid in gone:
                self._tell_listener("on_unsubscribe", viewer, cid)

    async def _write(self, ws, viewer: Viewer) -> None:
        while True:
            await viewer.wake.wait()
            with self.lock:
                viewer.wake.clear()
                viewer.wake_pending = False
                items = list(viewer.queue)
                viewer.queue.clear()
            for item in items:
                await ws.send(item)

    def _status(self, viewer: Viewer, level: int, message: str) -> None:
        with self.lock:
            wake = viewer.put(json.dumps({"op": "status", "level": level, "message": message}))
        if wake:
            viewer.wake.set()

    def _request(self, viewer: Viewer, frame) -> None:
        if not isinstance(frame, str):
            self._status(viewer, 2, "binary client messages are not accepted: this server has no clientPublish "
                                    "or services capability")
            return
        try:
            msg = json.loads(frame)
            op = msg["op"]
        except (ValueError, KeyError, TypeError):
            self._status(viewer, 2, "not a JSON object with an op field")
            return
        if op == "subscribe":
            for sub in msg.get("subscriptions") or []:
                try:
                    sid, cid = int(sub["id"]), int(sub["channelId"])
                except (KeyError, TypeError, ValueError):
                    self._status(viewer, 2, f"bad subscription {sub!r}")
                    continue
                with self.lock:
                    known = cid in self.channels and sid not in viewer.subscriptions and 0 <= sid < 2 ** 32
                    if known:
                        viewer.subscriptions[sid] = cid
                        self.watchers[cid] += 1
                if known:
                    self._tell_listener("on_subscribe", viewer, cid)
                else:
                    self._status(viewer, 2, f"subscription {sid} to channel {cid} refused: unknown channel "
                                            "or subscription id in use")
        elif op == "unsubscribe":
            for sid in msg.get("subscriptionIds") or []:
                with self.lock:
                    cid = viewer.subscriptions.pop(sid, None) if isinstance(sid, int) else None
                    if cid is not None:
                        self.watchers[cid] -= 1
                if cid is not None:
                    self._tell_listener("on_unsubscribe", viewer, cid)
        elif op in ("advertise", "unadvertise"):
            self._status(viewer, 2, "client publishing is not supported: this server has no clientPublish "
                                    "capability (read-only bridge)")
        else:
            self._status(viewer, 2, f"{str(op)[:40]!r} is not supported by this read-only server")

    def _tell_listener(self, what: str, viewer: Viewer, cid: int) -> None:
        if self.listener is not None:
            getattr(self.listener, what)(viewer, self.channels[cid])
