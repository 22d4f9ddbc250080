"""What an operator watches: `robodyn bridge foxglove` and `robodyn status-page` (docs/operator.md).

Both run as their own processes next to the daemon, reach it only through its read commands and
its state stream, and never move the robot.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from robodyn.errors import UserError
from robodyn.tools.operator.listen import check_listen_host

from .common import RATE_WORDS, needs_a_command, nonnegative_float, positive_float
from .daemon_client import add_endpoint_arguments, curve_keys


def register(sub) -> None:
    p = sub.add_parser("bridge", help="serve the daemon's live state to a viewer (read-only)")
    kinds = p.add_subparsers(dest="bridge_kind", metavar="VIEWER")
    p.set_defaults(handler=needs_a_command(p, kinds))
    f = kinds.add_parser("foxglove", help="joint states, run phases, status and the robot model over Foxglove's "
                                          "WebSocket protocol (foxglove.sdk.v1 and foxglove.websocket.v1; "
                                          "connect to the ws://HOST:PORT/?token=... address it prints)")
    add_endpoint_arguments(f)
    f.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1; the "
                                                       "bridge has no TLS, so other addresses are refused)")
    f.add_argument("--port", type=int, default=8765, help="WebSocket port (default 8765, Foxglove's default; "
                                                          "0 picks a free one)")
    f.add_argument("--rate", type=nonnegative_float, default=0.0, metavar="HZ",
                   help=f"joint states sent to the viewer, {RATE_WORDS} (default 0: every sample of the stream)")
    f.add_argument("--tf-rate", type=float, default=50.0, metavar="HZ",
                   help="link transforms per second for the 3D panel (default 50; 0: none)")
    f.add_argument("--robot", metavar="NAME|FILE", help="robot model to draw (default: the built-in model the "
                                                        "daemon names; pass its .toml/.urdf for a custom robot)")
    f.add_argument("--model", dest="robot", help=argparse.SUPPRESS)  # the old spelling
    f.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web page origin allowed to connect besides the bridge's own, e.g. "
                        "https://app.foxglove.dev for Foxglove in a browser (repeatable; it still needs the token)")
    f.add_argument("--duration", type=positive_float, default=None, metavar="S", help="stop after S seconds")
    _nice_arg(f)
    f.add_argument("--json", action="store_true", help="machine-readable lines: the address when serving, the "
                                                       "counters at the end")
    f.set_defaults(handler=cmd_bridge_foxglove)

    s = sub.add_parser("status-page", help="a read-only web page: arm state, driver health, loop statistics, "
                                           "the run in progress, recordings, identification jobs (open the "
                                           "http://HOST:PORT/#token=... address it prints)")
    add_endpoint_arguments(s)
    s.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1; the "
                                                       "page has no TLS, so other addresses are refused)")
    s.add_argument("--port", type=int, default=47780, help="HTTP port (default 47780; 0 picks a free one)")
    s.add_argument("--refresh", type=positive_float, default=0.5, metavar="S",
                   help="seconds between two polls of the daemon (default 0.5)")
    s.add_argument("--period", dest="refresh", type=positive_float, help=argparse.SUPPRESS)  # the old spelling
    s.add_argument("--duration", type=positive_float, default=None, metavar="S", help="stop after S seconds")
    _nice_arg(s)
    s.add_argument("--json", action="store_true", help="print the page's address as JSON (serving: "
                                                       "http://HOST:PORT/#token=...)")
    s.set_defaults(handler=cmd_status_page)


def _nice_arg(p) -> None:
    p.add_argument("--nice", type=int, default=10, metavar="N",
                   help="lower this process's scheduling priority by N (default 10): on a host where the driver "
                        "loop has no real-time priority, the loop and the recorder come before the viewers")


def _lower_priority(args) -> None:
    """Before any thread starts (threads inherit the niceness of the one that creates them)."""
    if args.nice < 0:
        raise UserError(f"--nice must be >= 0 (a viewer never outranks the daemon), got {args.nice}")
    if args.nice:
        os.nice(args.nice)


def _say(args, obj: dict, text: str) -> None:
    """One line on stdout; a reader that went away (closed pipe) ends the output quietly."""
    try:
        if args.json:
            json.dump(obj, sys.stdout, allow_nan=False, default=str)
            sys.stdout.write("\n")
        else:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # later writes (and the interpreter's final flush) go nowhere instead of raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _client_factory(args):
    from robodyn.daemon.readonly import ReadOnlyClient

    curve = curve_keys(args)
    return lambda: ReadOnlyClient(args.endpoint, timeout=args.timeout, curve=curve)


def _stop_on_signals(stop) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop())


def _check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, got {port}")


def cmd_bridge_foxglove(args) -> int:
    try:
        import foxglove  # noqa: F401
        import websockets  # noqa: F401
    except ImportError as exc:
        package = {"foxglove": "foxglove-sdk"}.get(exc.name, exc.name)
        raise UserError(f"the Foxglove bridge needs the {package} package: pip install 'robodyn[viz]'") from None
    from robodyn.robot.loader import load_model

    from robodyn.daemon.client import DaemonError
    from robodyn.tools.operator.foxglove_bridge import BridgeOptions, FoxgloveBridge, check_model_matches
    from robodyn.tools.operator.foxglove_ws import SUBPROTOCOLS

    _check_port(args.port)
    check_listen_host(args.host, "Foxglove bridge")
    _lower_priority(args)
    for name in ("rate", "tf_rate"):
        if getattr(args, name) < 0:
            raise UserError(f"--{name.replace('_', '-')} must be >= 0 Hz, got {getattr(args, name)}")
    factory = _client_factory(args)
    client, status_client = factory(), factory()
    try:
        try:
            describe = client.describe()
        except DaemonError as exc:
            raise UserError(exc.message) from None
        model = load_model(args.robot or describe["robot"]["name"])
        check_model_matches(model, describe)
        for origin in args.allow_origin:
            if not origin.startswith(("http://", "https://")) or origin.rstrip("/").count("/") != 2:
                raise UserError(f"--allow-origin {origin!r}: an origin is scheme://host[:port], e.g. "
                                "https://app.foxglove.dev")
        options = BridgeOptions(host=args.host, port=args.port, rate_hz=args.rate, tf_rate_hz=args.tf_rate,
                                duration_s=args.duration, allow_origins=tuple(args.allow_origin))
        try:
            bridge = FoxgloveBridge(client, model, describe, options, status_client=status_client)
        except RuntimeError as exc:  # a port in use, a bad address
            raise UserError(f"cannot serve on {args.host}:{args.port}: {exc}") from None
        _stop_on_signals(bridge.stop_event.set)
        url = bridge.server.url
        token_url = f"{url}/?token={bridge.server.token.value}"
        _say(args, {"serving": token_url, "url": url, "port": bridge.port, "token_file": str(bridge.server.token.path),
                    "subprotocols": list(SUBPROTOCOLS), "robot": describe["robot"]["name"],
                    "daemon": client.endpoint, "state_endpoint": describe["state_endpoint"]},
             f"robodyn bridge: serving {describe['robot']['name']} from {client.endpoint} on {token_url} "
             f"(Foxglove: Open connection -> Foxglove WebSocket -> {token_url}; the token is also in "
             f"{bridge.server.token.path}); Ctrl-C stops")

        def silence(seconds):
            print(f"robodyn bridge: no state from the daemon for {seconds:.0f} s; still waiting", file=sys.stderr)

        stats = bridge.run(on_silence=silence)
    finally:
        client.close()
        status_client.close()
    _say(args, {"stopped": True, **stats},
         f"robodyn bridge: stopped; {stats['received']} samples received, {stats['published']} joint-state "
         f"messages published, {stats['lost']} lost on the stream")
    return 0


def cmd_status_page(args) -> int:
    from robodyn.tools.operator.status_page import serve_status_page

    _check_port(args.port)
    check_listen_host(args.host, "status page")
    _lower_priority(args)
    factory = _client_factory(args)
    try:
        server, poller = serve_status_page(factory, args.host, args.port, args.refresh)
    except OSError as exc:
        raise UserError(f"cannot serve on {args.host}:{args.port}: {exc}") from None
    url = server.url
    stop = threading.Event()

    def shutdown():
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    _stop_on_signals(shutdown)
    if args.duration is not None:
        timer = threading.Timer(args.duration, shutdown)
        timer.daemon = True
        timer.start()
    first = poller.get()
    _say(args, {"serving": server.token_url, "url": url, "port": server.port, "token_file": str(server.token.path),
                "daemon": poller.client.endpoint, "connected": first.get("connected")},
         f"robodyn status-page: {server.token_url} (read-only view of the daemon at {poller.client.endpoint}; "
         f"open this address: the token after # stays in the browser tab, and is also in {server.token.path})"
         + ("" if first.get("connected") else f"; daemon not reachable yet: {first.get('error')}"))
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        poller.stop()
    return 0
