"""Who may ask the control endpoint what: the daemon's token without CurveZMQ (daemon/access.py
keeps its file), the client's name and role with it. Asked by the dispatch (dispatch.py) before a
request's handler runs, and by the status report for a client's own role.
"""

from __future__ import annotations

import logging

from . import access
from . import protocol as P
from . import request_decoding as R

log = logging.getLogger("robodyn.daemon")

# Roles (docs/reliability.md, "Roles"), when CurveZMQ names the clients and [security].operators is
# set: operators arm and submit; submitters submit runs and identification jobs; every other
# allowed client observes. Stopping is never refused: abort and disarm are open to everyone.
COMMAND_ROLES = {"arm": P.ROLE_OPERATOR, "submit_run": P.ROLE_SUBMITTER, "identify": P.ROLE_SUBMITTER}


class AccessControl:
    """Who may ask what: without CurveZMQ the daemon's token (``token``, None with CurveZMQ), with
    it the client's name from the allow-list (set by the ZAP handler, ``zap``) and its role from
    ``[security]``. ``refused_auth``: the rate-limited log of refused tokens (dispatch.py)."""

    def __init__(self, cfg, token: str | None, token_path, zap, refused_auth):
        self.curve, self.operators, self.submitters = cfg.curve, cfg.operators, cfg.submitters
        self.token, self.token_path, self.zap, self.refused_auth = token, token_path, zap, refused_auth

    def user_id(self, frame) -> str:
        """The client's name from the allow-list (set by the ZAP handler); '' without Curve."""
        if self.zap is None:
            return ""
        try:
            return frame.get("User-Id") or ""
        except Exception:  # not authenticated through ZAP
            return ""

    def authenticate(self, req: P.Request) -> None:
        """Without CurveZMQ, every command but abort, disarm and ping needs the daemon's token
        (daemon/access.py): another account on the machine can stop the robot, nothing else."""
        if self.token is None or req.cmd in access.OPEN_COMMANDS:
            return
        if req.auth is not None and access.token_ok(req.auth, self.token):
            return
        self.refused_auth.warning("%s refused: %s access token", req.cmd, "wrong" if req.auth else "no")
        raise P.ProtocolError(P.E_UNAUTHORISED, f"unauthorised: this daemon needs its token ({self.token_path}); "
                                                "run as the daemon's user or set ROBODYN_TOKEN_FILE",
                              {"token_file": str(self.token_path)}, field="auth")

    def authenticate_head(self, head: dict, size: int, peer: str) -> None:
        """A large frame's sender, judged by its head before its arguments are decoded: the token
        before 'args', or a CurveZMQ identity."""
        if self.token is not None:
            auth = head.get("auth")
            if not (type(auth) is str and access.token_ok(auth, self.token)):
                self.refused_auth.warning("a %d-byte request refused undecoded: %s access token before its args",
                                          size, "wrong" if auth else "no")
                raise P.ProtocolError(P.E_UNAUTHORISED, f"unauthorised: a request of {size} bytes needs the daemon's "
                                                        f"token in its 'auth' field, before 'args' ({self.token_path});"
                                                        f" without it a request is limited to "
                                                        f"{R.INLINE_DECODE_BYTES} bytes",
                                      {"token_file": str(self.token_path), "limit": R.INLINE_DECODE_BYTES},
                                      field="auth")
        elif self.zap is not None and not peer:
            raise P.ProtocolError(P.E_UNAUTHORISED, "unauthorised: no CurveZMQ identity", field="request")

    def role_of(self, peer: str) -> str:
        """The role of an authenticated client (everyone is an operator without roles)."""
        if not self.curve or not self.operators or peer in self.operators:
            return P.ROLE_OPERATOR
        return P.ROLE_SUBMITTER if peer in self.submitters else P.ROLE_ANYONE

    def authorise(self, cmd: str, peer: str) -> None:
        needed = COMMAND_ROLES.get(cmd, P.ROLE_ANYONE)
        role = self.role_of(peer)
        allowed = {P.ROLE_ANYONE: (P.ROLE_ANYONE, P.ROLE_SUBMITTER, P.ROLE_OPERATOR),
                   P.ROLE_SUBMITTER: (P.ROLE_SUBMITTER, P.ROLE_OPERATOR), P.ROLE_OPERATOR: (P.ROLE_OPERATOR,)}
        if role in allowed[needed]:
            return
        who = peer or "not authenticated"
        log.warning("%s refused: client %s has the role %s, %s needs %s", cmd, who, role, cmd, needed,
                    extra={"fields": {"event": "forbidden", "peer": who}})
        what = "arming is reserved to the operators' keys" if cmd == "arm" else \
            f"{cmd} is reserved to {'operators' if needed == P.ROLE_OPERATOR else 'operators and submitters'}"
        raise P.ProtocolError(P.E_FORBIDDEN, f"{what} ([security].operators / submitters); this client is {who} "
                                             f"({role}); abort and disarm are open to every client",
                              {"role": role, "needed": needed, "client": who}, field="cmd")
