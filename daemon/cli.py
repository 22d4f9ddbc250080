"""`robodyn daemon [--config FILE]`: the acquisition daemon (see robodyn.daemon.server);
`robodyn keys NAME`: a CurveZMQ keypair for the daemon or a remote client."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("daemon", help="run the acquisition daemon (no config: simulated Panda on loopback)")
    p.add_argument("--config", metavar="FILE", help="TOML configuration (see docs/protocol.md)")
    p.add_argument("--data-dir", metavar="DIR", help="where recordings are written "
                                                     "(default ~/.local/share/robodyn)")
    p.add_argument("--control", metavar="ENDPOINT", help="control endpoint, e.g. tcp://127.0.0.1:47770")
    p.add_argument("--state", metavar="ENDPOINT", help="state stream endpoint, e.g. tcp://127.0.0.1:47771")
    p.set_defaults(handler=cmd_daemon)

    p = sub.add_parser("worker", help="run queued identification jobs (robodyn-worker.service; "
                                      "with [jobs] runner = \"service\")")
    p.add_argument("--config", metavar="FILE", help="the daemon's TOML configuration (for data_dir)")
    p.add_argument("--data-dir", metavar="DIR", help="override [daemon].data_dir")
    p.add_argument("--once", action="store_true", help="run what is queued, then exit")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("keys", help="generate a CurveZMQ keypair (daemon or client) for remote access")
    p.add_argument("name", metavar="NAME", help="key name, e.g. 'daemon' or the operator's name")
    p.add_argument("--dir", default=".", metavar="DIR", help="where NAME.key and NAME.key_secret are written")
    p.set_defaults(handler=cmd_keys)


def cmd_worker(args) -> int:
    from robodyn.identification.daemon_jobs import worker_main

    from .config import load_config
    from .logs import setup_logging

    setup_logging()
    cfg = load_config(args.config, overrides={"data_dir": args.data_dir})
    return worker_main(cfg.data_dir, str(cfg.recordings_dir), once=args.once)


def cmd_keys(args) -> int:
    from .security import write_keypair

    public_path, secret_path, public = write_keypair(args.dir, args.name)
    print(f"public key  {public}\n  {public_path} (share it)\n  {secret_path} (secret, mode 0600)")
    print("daemon config:  [security] curve_secret_key = \"<the daemon's .key_secret>\" and, per client,")
    print(f'                [security.clients] {args.name} = "{public}"')
    return 0


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
