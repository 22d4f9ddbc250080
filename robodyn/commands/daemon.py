"""`robodyn daemon`: the acquisition daemon (robodyn.daemon.server) with the identification jobs
(robodyn.jobs.identification) added to its commands; `robodyn worker`: the
identification job runner; `robodyn keys NAME`: a CurveZMQ keypair for the daemon or a client.

With ``--json`` the two services write their log as JSON lines (one object per record: time,
level, logger, message and the record's structured fields), for log collectors."""

from __future__ import annotations

import argparse

import json
import logging
import sys
import time

from .common import add_json, print_json


class _DriversHelp(argparse.HelpFormatter):
    """`robodyn daemon --help` ends with the registered drivers, read from the registry only when
    the help is shown (the registry loads numpy; a usage error does not need it)."""

    def add_arguments(self, actions):
        self._full_help = True
        super().add_arguments(actions)

    def format_help(self):
        text = super().format_help()
        if not getattr(self, "_full_help", False):
            return text
        from robodyn.drivers.registry import drivers_help

        return (text + "\ndrivers ([robot].driver in --config; `robodyn drivers NAME` lists a driver's options):\n"
                + drivers_help() + "\n")


def register(sub) -> None:
    p = sub.add_parser("daemon", help="run the acquisition daemon (no config: simulated Panda on loopback)",
                       formatter_class=_DriversHelp)
    p.add_argument("--config", metavar="FILE", help="TOML configuration (see docs/protocol.md)")
    p.add_argument("--data-dir", metavar="DIR", help="where recordings are written "
                                                     "(default ~/.local/share/robodyn)")
    p.add_argument("--control", metavar="ENDPOINT", help="control endpoint, e.g. tcp://127.0.0.1:47770")
    p.add_argument("--state", metavar="ENDPOINT", help="state stream endpoint (default: an ipc socket beside the access "
                   "token, only this user; with encryption keys configured, tcp://127.0.0.1:47771, encrypted and "
                   "authenticated by ZeroMQ's CurveZMQ)")
    add_json(p, "log as JSON lines on stderr (one object per record) instead of text")
    p.set_defaults(handler=cmd_daemon)

    p = sub.add_parser("worker", help="run queued identification jobs (robodyn-worker.service; "
                                      "with [jobs] runner = \"service\")")
    p.add_argument("--config", metavar="FILE", help="the daemon's TOML configuration (for data_dir)")
    p.add_argument("--data-dir", metavar="DIR", help="override [daemon].data_dir")
    p.add_argument("--once", action="store_true", help="run what is queued, then exit")
    add_json(p, "log as JSON lines on stderr (one object per record) instead of text")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("keys", help="generate a key pair (a public and a secret key) that encrypts and "
                                    "authenticates the link to a daemon on another host (ZeroMQ's CurveZMQ), "
                                    "for the daemon or a client")
    p.add_argument("name", metavar="NAME", help="key name, e.g. 'daemon' or the operator's name")
    p.add_argument("--dir", default=".", metavar="DIR", help="where NAME.key and NAME.key_secret are written")
    add_json(p)
    p.set_defaults(handler=cmd_keys)


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log record; the structured ``fields`` of a record (see
    robodyn.daemon.logs) become keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created))
                       + f".{int(record.msecs):03d}",
               "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        fields = getattr(record, "fields", None)
        if fields:
            doc.update({k: v for k, v in fields.items() if k not in doc})
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def json_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def cmd_worker(args) -> int:
    from robodyn.daemon.config import load_config
    from robodyn.daemon.logs import setup_logging
    from robodyn.jobs.identification import worker_main

    json_logging() if args.json else setup_logging()
    cfg = load_config(args.config, overrides={"data_dir": args.data_dir})
    return worker_main(cfg.data_dir, str(cfg.recordings_dir), once=args.once)


def cmd_keys(args) -> int:
    from robodyn.daemon.security import write_keypair

    public_path, secret_path, public = write_keypair(args.dir, args.name)
    daemon_config = f'[security.clients] {args.name} = "{public}"'
    if args.json:
        print_json({"name": args.name, "public_key": public, "public_key_file": str(public_path),
                    "secret_key_file": str(secret_path), "daemon_config": daemon_config})
        return 0
    print(f"public key  {public}\n  {public_path} (share it)\n  {secret_path} (secret, mode 0600)")
    print("daemon config:  [security] curve_secret_key = \"<the daemon's .key_secret>\" and, per client,")
    print(f"                {daemon_config}")
    return 0


def cmd_daemon(args) -> int:
    import zmq

    from robodyn.daemon import server
    from robodyn.daemon.config import load_config
    from robodyn.daemon.logs import setup_logging
    from robodyn.jobs import identification as daemon_jobs

    cfg = load_config(args.config, overrides={"data_dir": args.data_dir, "control": args.control,
                                              "state": args.state})
    try:
        # the identification jobs (identify, job_status, jobs, pull) are the daemon's one extension
        return server.run_daemon(cfg, extensions=(daemon_jobs.register,),
                                 log_setup=json_logging if args.json else setup_logging)
    except RuntimeError as exc:  # a worker could not start: one sentence, the cause inside
        raise ValueError(str(exc)) from None
    except zmq.ZMQError as exc:  # typically: the port is taken by another daemon
        raise ValueError(f"cannot bind the daemon's endpoints ({cfg.control}, {cfg.state}): {exc}") from None
