"""`robodyn daemon [--config FILE]`: the acquisition daemon (see robodyn.daemon.server)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("daemon", help="run the acquisition daemon (no config: simulated Panda on loopback)")
    p.add_argument("--config", metavar="FILE", help="TOML configuration (see docs/protocol.md)")
    p.add_argument("--data-dir", metavar="DIR", help="where recordings are written "
                                                     "(default ~/.local/share/robodyn)")
    p.add_argument("--control", metavar="ENDPOINT", help="control endpoint, e.g. tcp://127.0.0.1:47770")
    p.add_argument("--state", metavar="ENDPOINT", help="state stream endpoint, e.g. tcp://127.0.0.1:47771")
    p.set_defaults(handler=cmd_daemon)


def cmd_daemon(args) -> int:
    from .config import load_config
    from .server import run_daemon

    cfg = load_config(args.config, overrides={"data_dir": args.data_dir, "control": args.control,
                                              "state": args.state})
    import zmq

    try:
        return run_daemon(cfg)
    except RuntimeError as exc:  # a worker could not start: one sentence, the cause inside
        raise ValueError(str(exc)) from None
    except zmq.ZMQError as exc:  # typically: the port is taken by another daemon
        raise ValueError(f"cannot bind the daemon's endpoints ({cfg.control}, {cfg.state}): {exc}") from None
