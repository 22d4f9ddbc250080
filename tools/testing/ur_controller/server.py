"""The simulated UR controller's network side: RTDE (30004), dashboard (29999), script (30003).

Threads: one real-time thread ticks the controller at the RTDE rate (500 Hz e-Series, 125 Hz CB3):
control script -> motion -> plant -> one data package to every started RTDE client, paced on
absolute deadlines (ticks.py) so packages are evenly spaced (ur_rtde keeps only the newest package in its
buffer, so a burst would make the *client* drop samples). Every client connection has its own
thread for requests. Input registers are global, as on a real controller.

Clock. By default the tick follows the wall clock (``free``). A host that cannot keep the 500 Hz
schedule (no SCHED_FIFO, other work on the cores) makes ticks late: each tick that starts more
than half a period late is an overrun, counted with the worst lateness, reported by ``sim status``,
announced once on stderr, and carried in every data package as ``actual_execution_time`` (the
tick's lateness plus its work, ms; on a UR "controller real-time thread execution time"), which
the driver reports in its diagnostics. In ``lockstep`` (``--clock lockstep``) the tick waits for
the streaming client's commands and applies each exactly once (lockstep.py). The controller clock
(``timestamp`` = ticks x dt) is exact in both modes.

Simulator-only dashboard commands (test hooks, never sent by ur_rtde):
``sim protective stop``, ``sim skip N`` (withhold the next N data packages: a gap; the withheld
tick numbers are kept in ``sim status``), ``sim freeze MS`` (send nothing for MS ms, sockets open:
a stale stream), ``sim stall MS`` (the tick thread stops for MS ms: a host that starves the
controller), ``sim drop`` (close every RTDE connection: a network cut), ``sim status`` (JSON
counters).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from dataclasses import dataclass, field


from . import rtde as R
from .plant import PlantConfig, URPlant
from .lockstep import Lockstep
from .script import ControlScript, JointMotion, script_is_complete, script_name
from .ticks import MIN_SPACING, TickTiming, next_deadline, sleep_until

ROBOT_MODES = {"POWER_OFF": 3, "POWER_ON": 4, "IDLE": 5, "RUNNING": 7}
E_SERIES_VERSION = (5, 23, 0, 12345)  # PolyScope 5.23: actual_current_as_torque exists
CB3_VERSION = (3, 15, 8, 12345)
CLOCKS = ("free", "lockstep")
# lockstep: default longest wait for the streaming client's next command; then the tick goes ahead
# (counted) and lockstep pauses until the client streams again. Shorter than the driver's
# stale-stream timeout (0.25 s), so a client that reads without commanding never sees a dead link
LOCKSTEP_WAIT_S = 0.1
WITHHELD_KEPT = 32  # withheld tick ranges kept for `sim status`


@dataclass
class ControllerConfig:
    host: str = "127.0.0.1"
    rtde_port: int = 30004
    dashboard_port: int = 29999
    script_port: int = 30003
    cb3: bool = False
    robot_mode: str = "RUNNING"
    serial: str = "20235500001"
    clock: str = "free"  # free | lockstep (see the module docstring)
    lockstep_wait_s: float = LOCKSTEP_WAIT_S
    plant: PlantConfig = field(default_factory=PlantConfig)

    def __post_init__(self):
        if self.clock not in CLOCKS:
            raise ValueError(f"clock: expected one of {list(CLOCKS)}, got {self.clock!r}")
        if not 0.0 < self.lockstep_wait_s <= 10.0:
            raise ValueError(f"lockstep_wait_s: expected 0 < s <= 10, got {self.lockstep_wait_s}")

    @property
    def rate_hz(self) -> float:
        return 125.0 if self.cb3 else 500.0

    @property
    def version(self) -> tuple:
        return CB3_VERSION if self.cb3 else E_SERIES_VERSION


class RTDEClient:
    def __init__(self, sock: socket.socket, addr):
        self.sock = sock
        self.addr = addr
        self.buffer = bytearray()
        self.output: R.OutputRecipe | None = None
        self.inputs: dict[int, R.InputRecipe] = {}
        self.started = False
        self.divisor = 1
        self.sent = 0
        self.dropped = 0
        self.alive = True
        self.send_lock = threading.Lock()

    def send(self, data: bytes, realtime: bool = False) -> None:
        with self.send_lock:
            try:
                if realtime:
                    n = self.sock.send(data, socket.MSG_DONTWAIT)
                    if n != len(data):  # cannot happen for a few hundred bytes unless the client stalls
                        self.sock.sendall(data[n:])
                else:
                    self.sock.sendall(data)
            except BlockingIOError:
                self.dropped += 1
            except OSError:
                self.alive = False


class URController:
    def __init__(self, cfg: ControllerConfig):
        self.cfg = cfg
        self.dt = 1.0 / cfg.rate_hz
        pc = cfg.plant
        pc.rate_hz = cfg.rate_hz
        self.plant = URPlant(pc)
        self.lock = threading.Lock()
        self.ints: dict[int, int] = {}
        self.doubles: dict[int, float] = {}
        self.input_owner: dict[str, RTDEClient] = {}
        self.clients: list[RTDEClient] = []
        self.robot_mode = ROBOT_MODES[cfg.robot_mode]
        self.safety_mode = R.SAFETY_NORMAL
        self.runtime_state = R.RUNTIME_STOPPED
        self.loaded_script = ""
        self.tick = 0
        self.skip = 0
        self.freeze_until = 0.0
        self.withheld = 0
        self.withheld_ticks: list[list[int]] = []  # [first, last] tick numbers of each withheld range
        self.timing = TickTiming(self.dt)
        self.stall_s = 0.0
        self.lockstep = Lockstep(self.lock, cfg.lockstep_wait_s)
        self.running = False
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.motion = None
        self.script = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self.plant.connect()
        model = self.plant.sim.model
        self.motion = JointMotion(self.plant.state.q.copy(), self.dt, model.qd_max, model.qdd_max)
        self.script = ControlScript(self.motion)
        listeners = []
        for port, handler in ((self.cfg.rtde_port, self._serve_rtde), (self.cfg.dashboard_port, self._serve_dashboard),
                              (self.cfg.script_port, self._serve_script)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.cfg.host, port))
            s.listen(8)
            self._sockets.append(s)
            listeners.append((s, handler))
        self.running = True
        for s, handler in listeners:
            self._spawn(self._accept_loop, s, handler)
        self._spawn(self._guarded_realtime_loop)

    def _guarded_realtime_loop(self) -> None:
        """A controller whose tick died must not keep its sockets open: clients would wait for
        packages forever (ur_rtde's control interface busy-waits in its constructor). It fails
        loudly and drops every connection, as a crashed controller would."""
        try:
            self._realtime_loop()
        except BaseException:
            import traceback

            traceback.print_exc()
            self.failed = True
            self.close()
            if self.on_failure is not None:
                self.on_failure()

    failed = False
    on_failure = None  # callable, e.g. to end the process

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        self.running = False
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass
        with self.lock:
            for c in self.clients:
                _close(c.sock)

    def _accept_loop(self, listener: socket.socket, handler) -> None:
        while self.running:
            try:
                sock, addr = listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._spawn(handler, sock, addr)

    # ----------------------------------------------------------------- real-time loop

    def _realtime_loop(self) -> None:
        """Tick on absolute deadlines (``next_deadline``): when the host delays a tick, the schedule
        slips instead of catching up with a burst. The controller clock (``timestamp`` = ticks x dt)
        stays exact; its wall-clock rate dips, and ``sim status`` reports it (``real_time_ratio``)."""
        period_ns = int(round(self.dt * 1e9))
        min_gap_ns = int(MIN_SPACING * period_ns)
        deadline = time.monotonic_ns() + period_ns
        while self.running:
            sleep_until(deadline)
            due = deadline  # lateness is counted from here: the deadline, or the awaited command
            if self.cfg.clock == "lockstep" and self._streaming() and self.lockstep.wait(self.tick):
                due = max(deadline, time.monotonic_ns())
            if self.stall_s:
                time.sleep(self.stall_s)  # `sim stall`: the host starves the controller
                self.stall_s = 0.0
            start_ns = time.monotonic_ns()
            with self.lock:
                command = self.lockstep.pop()
                if command is not None:
                    self._write_registers(command)
                self._control_tick()
                packets = self._packets(self.timing.execution_ms)
            for client, data in packets:
                client.send(data, realtime=True)
            end_ns = time.monotonic_ns()
            if self.timing.add(due, start_ns, end_ns):
                print(f"ur_controller: tick {self.tick} started {self.timing.last_late_ms:.1f} ms late: the host is not "
                      f"keeping the {1 / self.dt:.0f} Hz schedule (overruns are counted in `sim status` and sent as "
                      f"actual_execution_time)", file=sys.stderr, flush=True)
            deadline = next_deadline(deadline, start_ns, period_ns, min_gap_ns)

    def _streaming(self) -> bool:
        """A control client is streaming servoJ: the script runs and the motion is in servo mode."""
        return self.script.running and self.motion.mode == "servo"

    def _control_tick(self) -> None:
        self.script.tick(self.ints, self.doubles)
        if self.script.protective_stop_requested:
            self.script.protective_stop_requested = False
            self._protective_stop()
        if self.robot_mode == ROBOT_MODES["RUNNING"]:
            self.motion.step()
        self.plant.step(self.motion.q, self.motion.qd, self.motion.qdd)
        self.tick += 1
        if self.script.running:
            self.runtime_state = R.RUNTIME_PLAYING
        elif self.runtime_state == R.RUNTIME_PLAYING:
            self.runtime_state = R.RUNTIME_STOPPED

    def _packets(self, execution_ms: float) -> list:
        alive = [c for c in self.clients if c.alive]
        self.clients = alive
        started = [c for c in alive if c.started and c.output is not None]
        if not started:
            return []
        if self.skip > 0 or time.monotonic() < self.freeze_until:
            self.skip = max(0, self.skip - 1)
            self.withheld += 1
            ranges = self.withheld_ticks
            if ranges and ranges[-1][1] == self.tick - 1:
                ranges[-1][1] = self.tick
            else:
                ranges.append([self.tick, self.tick])
                del ranges[:-WITHHELD_KEPT]
            return []
        values = self._values()
        values["actual_execution_time"] = execution_ms
        out = []
        for c in started:
            if self.tick % c.divisor == 0:
                out.append((c, c.output.pack(values)))
                c.sent += 1
        return out

    def _values(self) -> dict:
        v = self.plant.outputs()
        m = self.motion
        safety_bits = R.SAFETY_BIT_NORMAL if self.safety_mode == R.SAFETY_NORMAL else R.SAFETY_BIT_PROTECTIVE_STOPPED
        robot_bits = (R.ROBOT_BIT_POWER_ON if self.robot_mode >= ROBOT_MODES["POWER_ON"] else 0) | \
            (R.ROBOT_BIT_PROGRAM_RUNNING if self.runtime_state == R.RUNTIME_PLAYING else 0)
        zeros6 = [0.0] * 6
        v.update({
            "timestamp": self.tick * self.dt, "target_q": m.q.tolist(), "target_qd": m.qd.tolist(),
            "target_qdd": m.qdd.tolist(), "actual_qdd": m.qdd.tolist(),
            "actual_TCP_pose": zeros6, "actual_TCP_speed": zeros6, "actual_TCP_force": zeros6,
            "target_TCP_pose": zeros6, "target_TCP_speed": zeros6, "ft_raw_wrench": zeros6,
            "actual_digital_input_bits": 0, "actual_digital_output_bits": 0,
            "robot_mode": self.robot_mode, "joint_mode": [253] * 6, "safety_mode": self.safety_mode,
            "safety_status": self.safety_mode, "actual_tool_accelerometer": [0.0, 0.0, -9.81],
            "speed_scaling": 1.0, "target_speed_fraction": 1.0, "actual_momentum": 0.0,
            "actual_main_voltage": 48.0, "actual_robot_voltage": 48.0, "actual_robot_current": 1.0,
            "actual_joint_voltage": [48.0] * 6, "runtime_state": self.runtime_state,
            "robot_status_bits": robot_bits, "safety_status_bits": safety_bits,
            "standard_analog_input0": 0.0, "standard_analog_input1": 0.0, "standard_analog_output0": 0.0,
            "standard_analog_output1": 0.0, "payload": self.cfg.plant.payload_kg,
            "payload_cog": list(self.cfg.plant.payload_com), "payload_inertia": zeros6,
            "output_bit_registers0_to_31": 0, "output_bit_registers32_to_63": 0,
        })
        for i in range(48):
            v[f"output_int_register_{i}"] = self.script.state if i == 0 else 0
            v[f"output_double_register_{i}"] = 0.0
        return v

    def _protective_stop(self) -> None:
        self.safety_mode = R.SAFETY_PROTECTIVE_STOP
        self.script.stop()
        self.motion.hold()
        self.runtime_state = R.RUNTIME_PAUSED

    # ----------------------------------------------------------------- RTDE

    def _serve_rtde(self, sock: socket.socket, addr) -> None:
        client = RTDEClient(sock, addr)
        with self.lock:
            self.clients.append(client)
        try:
            while self.running and client.alive:
                data = sock.recv(65536)
                if not data:
                    break
                quick_ack(sock)
                client.buffer.extend(data)
                for msg_type, payload in R.split_frames(client.buffer):
                    reply = self._rtde_request(client, msg_type, payload)
                    if reply:
                        client.send(reply)
        except (OSError, R.ProtocolError):
            pass
        finally:
            client.alive = False
            with self.lock:
                for name in [n for n, c in self.input_owner.items() if c is client]:
                    del self.input_owner[name]
            _close(sock)

    def _rtde_request(self, client: RTDEClient, msg_type: int, payload: bytes) -> bytes | None:
        if msg_type == R.REQUEST_PROTOCOL_VERSION:
            reply, _ = R.reply_protocol_version(payload)
            return reply
        if msg_type == R.GET_URCONTROL_VERSION:
            return R.reply_version(self.cfg.version)
        if msg_type == R.SETUP_OUTPUTS:
            reply, recipe = R.setup_outputs(payload, 1, self.cfg.rate_hz)
            if recipe is not None:
                client.output = recipe
                client.divisor = max(1, int(round(self.cfg.rate_hz / recipe.frequency)))
            return reply
        if msg_type == R.SETUP_INPUTS:
            with self.lock:
                in_use = {n for n, c in self.input_owner.items() if c is not client}
                reply, recipe = R.setup_inputs(payload, len(client.inputs) + 1, in_use)
                if recipe is not None:
                    client.inputs[recipe.id] = recipe
                    for n in recipe.names:
                        self.input_owner[n] = client
            return reply
        if msg_type == R.START:
            client.started = client.output is not None or bool(client.inputs)
            return R.reply_accepted(R.START, client.started)
        if msg_type == R.PAUSE:
            client.started = False
            return R.reply_accepted(R.PAUSE, True)
        if msg_type == R.DATA_PACKAGE:
            self._inputs(client, payload)
            return None
        if msg_type == R.TEXT_MESSAGE:
            return None
        return R.text_message(f"unknown RTDE message type {msg_type}", level=2)

    def _inputs(self, client: RTDEClient, payload: bytes) -> None:
        recipe = client.inputs.get(payload[0]) if payload else None
        if recipe is None:
            return
        values = recipe.unpack(payload)
        with self.lock:
            if not self.lockstep.receive(values, self.cfg.clock == "lockstep" and self._streaming(), self.tick):
                self._write_registers(values)

    def _write_registers(self, values: dict) -> None:
        for name, value in values.items():
            if name.startswith("input_int_register_"):
                self.ints[int(name.rsplit("_", 1)[1])] = int(value)
            elif name.startswith("input_double_register_"):
                self.doubles[int(name.rsplit("_", 1)[1])] = float(value)

    # ----------------------------------------------------------------- dashboard

    def _serve_dashboard(self, sock: socket.socket, addr) -> None:
        f = sock.makefile("rwb", buffering=0)
        try:
            f.write(b"Connected: Universal Robots Dashboard Server\n")
            while self.running:
                line = f.readline()
                if not line:
                    break
                reply = self.dashboard(line.decode(errors="replace").strip())
                f.write(reply.encode() + b"\n")
                if reply == "Disconnected":
                    break
        except OSError:
            pass
        finally:
            _close(sock)

    def dashboard(self, cmd: str) -> str:
        """Answer one dashboard command the way PolyScope 5 does (the subset ur_rtde sends)."""
        c = cmd.lower()
        major, minor, bugfix, build = self.cfg.version
        with self.lock:
            if c == "polyscopeversion":
                return f"URSoftware {major}.{minor}.{bugfix}.{build} (Jan 01 2026)"
            if c == "get serial number":
                return self.cfg.serial
            if c == "get robot model":
                return self.cfg.plant.robot.upper().rstrip("E")
            if c == "is in remote control":
                return "true"
            if c == "robotmode":
                name = {v: k for k, v in ROBOT_MODES.items()}.get(self.robot_mode, "RUNNING")
                return f"Robotmode: {name}"
            if c in ("safetystatus", "safetymode"):
                state = "NORMAL" if self.safety_mode == R.SAFETY_NORMAL else "PROTECTIVE_STOP"
                return f"{'Safetystatus' if c == 'safetystatus' else 'Safetymode'}: {state}"
            if c == "programstate":
                name = script_name(self.loaded_script) or "<unnamed>"
                state = {R.RUNTIME_PLAYING: "PLAYING", R.RUNTIME_PAUSED: "PAUSED"}.get(self.runtime_state, "STOPPED")
                return f"{state} {name}"
            if c == "running":
                return f"Program running: {str(self.runtime_state == R.RUNTIME_PLAYING).lower()}"
            if c == "power on":
                self.robot_mode = max(self.robot_mode, ROBOT_MODES["IDLE"])
                return "Powering on"
            if c == "power off":
                self.robot_mode = ROBOT_MODES["POWER_OFF"]
                self.script.stop()
                return "Powering off"
            if c == "brake release":
                if self.robot_mode >= ROBOT_MODES["POWER_ON"]:
                    self.robot_mode = ROBOT_MODES["RUNNING"]
                return "Brake releasing"
            if c == "unlock protective stop":
                if self.safety_mode != R.SAFETY_PROTECTIVE_STOP:
                    return "Cannot unlock protective stop until 5s after occurrence. Always inspect cause of protective stop before unlocking"
                self.safety_mode = R.SAFETY_NORMAL
                self.runtime_state = R.RUNTIME_STOPPED
                return "Protective stop releasing"
            if c == "stop":
                self.script.stop()
                self.runtime_state = R.RUNTIME_STOPPED
                return "Stopped"
            if c == "play":
                if script_name(self.loaded_script) == "rtde_control" and self.safety_mode == R.SAFETY_NORMAL:
                    self.script.start()
                    return "Starting program"
                return "Failed to execute: play"
            if c == "pause":
                self.script.stop()
                self.runtime_state = R.RUNTIME_PAUSED
                return "Pausing program"
            if c in ("close popup", "close safety popup"):
                return "closing popup" if c == "close popup" else "closing safety popup"
            if c == "quit":
                return "Disconnected"
            if c.startswith("sim "):
                return self._sim_hook(c[4:])
        return f"could not understand: '{cmd}'"

    def _sim_hook(self, c: str) -> str:
        """Test hooks (called with the lock held)."""
        if c == "protective stop":
            self._protective_stop()
            return "Protective stop triggered"
        if c.startswith("skip "):
            self.skip = int(c.split()[1])
            return f"Skipping {self.skip} packages"
        if c.startswith("freeze "):
            self.freeze_until = time.monotonic() + float(c.split()[1]) / 1000.0
            return "Freezing"
        if c.startswith("stall "):
            self.stall_s = float(c.split()[1]) / 1000.0
            return "Stalling"
        if c == "drop":
            for cl in self.clients:
                cl.alive = False
                _close(cl.sock)
            return "Dropped"
        if c == "status":
            return json.dumps(self.status())
        return f"could not understand: 'sim {c}'"

    def status(self) -> dict:
        return {"tick": self.tick, "timestamp": self.tick * self.dt, "clock": self.cfg.clock,
                "withheld": self.withheld, "withheld_ticks": [list(r) for r in self.withheld_ticks],
                **self.timing.summary(), **self.lockstep.status(), "clients": [{"sent": c.sent, "dropped": c.dropped} for c in self.clients],
                "script_running": self.script.running, "commands": {str(k): v for k, v in self.script.counts.items()},
                "unsupported": {str(k): v for k, v in self.script.unsupported.items()},
                "drive_gains": self.plant.drive_gains.tolist(), "q_true": self.plant.q_true.tolist(),
                "safety_mode": self.safety_mode, "robot_mode": self.robot_mode}

    # ----------------------------------------------------------------- script port

    def _serve_script(self, sock: socket.socket, addr) -> None:
        text = ""
        try:
            while self.running:
                data = sock.recv(65536)
                if not data:
                    break
                text += data.decode(errors="replace")
                if script_is_complete(text):
                    self._load_script(text)
                    text = ""
        except OSError:
            pass
        finally:
            _close(sock)

    def _load_script(self, text: str) -> None:
        with self.lock:
            self.loaded_script = text
            if script_name(text) != "rtde_control":
                return  # only ur_rtde's control script is executed; other programs are accepted and ignored
            if self.safety_mode == R.SAFETY_NORMAL and self.robot_mode == ROBOT_MODES["RUNNING"]:
                # the program starts from the held target, not the measured position: under a load
                # the position controller sags by up to ~0.01 rad, and jumping the target there
                # would be a step beyond the joint speed limit within one tick
                self.motion.hold()
                self.script.start()
                self.runtime_state = R.RUNTIME_PLAYING


def quick_ack(sock: socket.socket) -> None:
    """Acknowledge what was received now, not with the next data package. ur_rtde's control
    connection leaves Nagle's algorithm on: it holds a command while the previous one is
    unacknowledged, and a delayed acknowledgement rides on the next tick's package, so every servoJ
    reached the controller one tick after it was sent (measured on loopback: written 0.1 ms after
    the client read package k, received just after package k + 1). Linux clears the flag again on
    its own, so it is set after every receive."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    except (AttributeError, OSError):  # not Linux, or the socket closed meanwhile
        pass


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
