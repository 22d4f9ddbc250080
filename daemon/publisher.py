"""The publisher process: republishes the driver's state stream to the public endpoint.

The real-time driver process publishes only on the internal ipc endpoint, read by the recorder
and by this process; clients subscribe here. So no client, however slow or however many, holds
memory in the process that runs the 1 kHz loop (when the driver process published to clients
itself, ten stalled subscribers grew it from 184 to 248 MiB in 60 s).

What a client can cost is bounded here too:

- the public PUB queues at most PUBLIC_HWM messages per subscriber (about 2 s of the stream at
  1 kHz), then drops for that subscriber only (a gap in its sequence numbers);
- at most ``[daemon].max_subscribers`` connections: the ZAP handler of this process refuses a
  handshake beyond the cap (and, with CurveZMQ, any key not in the allow-list).

Sockets: SUB connected to the internal ipc state endpoint; PUB bound on ``[daemon].state``; PAIR
to the main process (statistics out every STATS_S, ``shutdown`` in).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

from . import protocol as P
from .main_process import main_process_gone, main_process_pid, say_leaving, start_up_done, watch_start_up

PUBLIC_HWM = 2_000  # messages queued per subscriber before PUB drops for that subscriber
RCV_HWM = 20_000  # internal SUB: 20 s of the stream; this process drains it every cycle
STATS_S = 0.5
STREAM_ZAP_DOMAIN = "robodyn-stream"


class SubscriberGate:
    """ZAP decisions for the public stream: allow-listed keys (with CurveZMQ) and a cap on the
    number of admitted subscribers.

    Only connections whose handshake succeeded hold a place: from the PUB socket's monitor,
    ``succeeded - (disconnected - failed)``, since every connection whose handshake failed (refused
    here, or broken before ZAP was asked) reports one failure and then one disconnect. Counting
    accepted TCP connections instead let connections still in their handshake hold places: five
    subscribers connecting at once against a cap of three were all refused. Approvals whose success
    event has not arrived yet count too (for at most PENDING_S), so two handshakes in one poll cannot
    both take the last place. A refused ZeroMQ client does not retry on its own.
    """

    PENDING_S = 2.0

    def __init__(self, ctx, pub, clients: dict, max_subscribers: int):
        import zmq

        from .security import ZapHandler

        self.zmq = zmq
        self.zap = ZapHandler(ctx, clients)
        self.max_subscribers = max_subscribers
        self.monitor = pub.get_monitor_socket(
            zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_DISCONNECTED)
        self.succeeded = 0
        self.failed = 0
        self.disconnected = 0
        self.pending: list[float] = []  # monotonic times of approvals not yet seen to succeed
        self.refused_cap = 0
        original = self.zap.handle

        def handle(frames):
            self.drain_monitor()
            domain = frames[2].decode(errors="replace") if len(frames) > 2 else ""
            if domain == STREAM_ZAP_DOMAIN and self.connected + len(self.pending) >= self.max_subscribers:
                self.refused_cap += 1
                self.zap.socket.send_multipart([frames[0], frames[1], b"400",
                                                b"too many subscribers to the state stream", b"", b""])
                return
            refused_before = self.zap.refused
            original(frames)
            if domain == STREAM_ZAP_DOMAIN and self.zap.refused == refused_before:
                self.pending.append(time.monotonic())

        self.zap.handle = handle

    @property
    def connected(self) -> int:
        """Subscribers admitted and still connected."""
        return max(0, self.succeeded - (self.disconnected - self.failed))

    def drain_monitor(self) -> None:
        from zmq.utils.monitor import recv_monitor_message

        zmq = self.zmq
        for _ in range(10_000):  # bounded: a connection storm is served over several polls
            if not self.monitor.poll(0):
                break
            event = recv_monitor_message(self.monitor)["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.succeeded += 1
                if self.pending:
                    self.pending.pop(0)
            elif event == zmq.EVENT_DISCONNECTED:
                self.disconnected += 1
            else:  # one of the handshake failures
                self.failed += 1
        horizon = time.monotonic() - self.PENDING_S
        while self.pending and self.pending[0] < horizon:
            self.pending.pop(0)

    def serve(self) -> None:
        self.drain_monitor()
        self.zap.serve_pending()

    def close(self) -> None:
        self.monitor.close(linger=0)
        self.zap.close()


class Publisher:
    def __init__(self, cfg, endpoints: dict):
        import zmq

        # first: the main process may die while this start-up runs (daemon/main_process.py)
        self.parent_pid = main_process_pid()
        self.zmq = zmq
        self.cfg = cfg
        self.ctx = zmq.Context()
        self.pipe = self.ctx.socket(zmq.PAIR)
        self.pipe.setsockopt(zmq.LINGER, 1000)
        self.pipe.connect(endpoints["publisher_pipe"])
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.SNDHWM, PUBLIC_HWM)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.ZAP_DOMAIN, STREAM_ZAP_DOMAIN.encode())
        # the gate (a ZAP handler) must exist before the socket binds, or libzmq admits anyone
        self.gate = SubscriberGate(self.ctx, self.pub, cfg.clients, cfg.max_subscribers)
        if cfg.curve:
            from .security import make_curve_server, read_secret_key

            make_curve_server(self.pub, read_secret_key(cfg.curve_secret_key)[1])
            self.pub.setsockopt(zmq.ZAP_DOMAIN, STREAM_ZAP_DOMAIN.encode())
        self.pub.bind(cfg.state)
        if cfg.state.startswith("ipc://"):
            # connecting needs write permission on the socket: the token's readers get it (0640:
            # the operators' group), nobody else; the directory's mode is the first guard
            os.chmod(cfg.state[len("ipc://"):], 0o660 if cfg.token_file_mode == 0o640 else 0o600)
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, RCV_HWM)
        # the live stream and the run events; not the recorder's batched copy (P.TOPIC_RECORD)
        self.sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
        self.sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_EVENT)
        self.sub.connect(endpoints["state_ipc"])
        self.running = True
        self.forwarded = 0
        self.bytes = 0

    def run(self) -> None:
        zmq = self.zmq
        poller = zmq.Poller()
        poller.register(self.sub, zmq.POLLIN)
        poller.register(self.pipe, zmq.POLLIN)
        poller.register(self.gate.zap.socket, zmq.POLLIN)
        poller.register(self.gate.monitor, zmq.POLLIN)
        start_up_done()  # the start-up watch ends before ready; the check below covers the moment after
        if main_process_gone(self.parent_pid):  # died while this process started
            say_leaving("publisher", self.parent_pid, "during start-up; exiting")
            return
        self.pipe.send(P.packb({"type": "ready", "pid": os.getpid()}))
        next_stats = 0.0
        while self.running:
            events = dict(poller.poll(50))
            if self.sub in events:
                for _ in range(1000):
                    try:
                        frames = self.sub.recv_multipart(zmq.NOBLOCK, copy=False)
                    except zmq.Again:
                        break
                    # never blocks: a full subscriber queue drops for that subscriber only
                    self.pub.send_multipart(frames, flags=zmq.NOBLOCK, copy=False)
                    self.forwarded += 1
                    self.bytes += sum(len(f) for f in frames)
            if self.gate.zap.socket in events or self.gate.monitor in events:
                self.gate.serve()
            if self.pipe in events:
                while self.pipe.poll(0):
                    if P.unpackb(self.pipe.recv()).get("type") == "shutdown":
                        self.running = False
            now = time.monotonic()
            if now >= next_stats:
                next_stats = now + STATS_S
                self.pipe.send(P.packb({"type": "stats", "forwarded": self.forwarded, "bytes": self.bytes,
                                        "subscribers": self.gate.connected, "max_subscribers":
                                        self.gate.max_subscribers, "refused_over_cap": self.gate.refused_cap,
                                        "refused_keys": self.gate.zap.refused, "hwm": PUBLIC_HWM}))
                if main_process_gone(self.parent_pid):  # nobody to serve for
                    say_leaving("publisher", self.parent_pid, "exiting")
                    self.running = False

    def close(self) -> None:
        self.gate.close()
        self.ctx.destroy(linger=0)


def publisher_process_main(cfg_dict: dict, endpoints: dict) -> None:
    from .config import DaemonConfig

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main_pid = main_process_pid()
    if main_process_gone(main_pid):  # died while this interpreter started
        say_leaving("publisher", main_pid, "during start-up; exiting")
        return
    watch_start_up("publisher", main_pid)
    cfg = DaemonConfig.from_dict(cfg_dict)
    try:
        pub = Publisher(cfg, endpoints)
    except Exception as exc:
        traceback.print_exc()
        _report_fatal(endpoints, exc)
        sys.exit(1)
    signal.signal(signal.SIGTERM, lambda *_: setattr(pub, "running", False))
    try:
        pub.run()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        pub.close()


def _report_fatal(endpoints: dict, exc: Exception) -> None:
    import zmq

    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    s.setsockopt(zmq.LINGER, 1000)
    s.connect(endpoints["publisher_pipe"])
    s.send(P.packb({"type": "fatal", "message": f"{type(exc).__name__}: {exc}"}))
    s.close()
    ctx.term()
