"""RTDE wire protocol (protocol version 2), server side: framing, message types, recipes, types.

Facts from Universal Robots' "Real-Time Data Exchange (RTDE) guide" (the public protocol
description); the names below are the guide's:

- every message is ``uint16 size`` (header included) + ``uint8 type`` + payload, big-endian;
- types: V request protocol version, v get URControl version, M text message, O setup outputs,
  I setup inputs, S start, P pause, U data package;
- O payload: ``double frequency`` + comma-separated variable names; reply ``uint8 recipe id`` +
  comma-separated type names, ``NOT_FOUND`` for an unknown variable;
- I payload: comma-separated names; reply ``uint8 recipe id`` + types, ``IN_USE`` if another client
  holds one of the registers, ``NOT_FOUND`` if unknown;
- U payload: ``uint8 recipe id`` + the recipe's values packed by type.

This module is pure (bytes in, bytes out); sockets and timing live in ``server.py``.
"""

from __future__ import annotations

import struct

HEADER = struct.Struct(">HB")
PROTOCOL_VERSION = 2

REQUEST_PROTOCOL_VERSION = ord("V")
GET_URCONTROL_VERSION = ord("v")
TEXT_MESSAGE = ord("M")
DATA_PACKAGE = ord("U")
SETUP_OUTPUTS = ord("O")
SETUP_INPUTS = ord("I")
START = ord("S")
PAUSE = ord("P")

# RTDE type name -> struct format (big-endian, no header)
TYPE_FORMATS = {
    "BOOL": "?", "UINT8": "B", "UINT32": "I", "UINT64": "Q", "INT32": "i", "DOUBLE": "d",
    "VECTOR3D": "3d", "VECTOR6D": "6d", "VECTOR6INT32": "6i", "VECTOR6UINT32": "6I",
}

# Output variables this controller provides, with their guide types.
OUTPUTS = {
    "timestamp": "DOUBLE",
    "target_q": "VECTOR6D", "target_qd": "VECTOR6D", "target_qdd": "VECTOR6D",
    "target_current": "VECTOR6D", "target_moment": "VECTOR6D",
    "actual_q": "VECTOR6D", "actual_qd": "VECTOR6D", "actual_qdd": "VECTOR6D",
    "actual_current": "VECTOR6D", "actual_current_as_torque": "VECTOR6D", "actual_moment": "VECTOR6D",
    "joint_control_output": "VECTOR6D",
    "actual_TCP_pose": "VECTOR6D", "actual_TCP_speed": "VECTOR6D", "actual_TCP_force": "VECTOR6D",
    "target_TCP_pose": "VECTOR6D", "target_TCP_speed": "VECTOR6D",
    "actual_digital_input_bits": "UINT64", "actual_digital_output_bits": "UINT64",
    "joint_temperatures": "VECTOR6D", "actual_execution_time": "DOUBLE",
    "robot_mode": "INT32", "joint_mode": "VECTOR6INT32", "safety_mode": "INT32", "safety_status": "INT32",
    "actual_tool_accelerometer": "VECTOR3D", "speed_scaling": "DOUBLE", "target_speed_fraction": "DOUBLE",
    "actual_momentum": "DOUBLE", "actual_main_voltage": "DOUBLE", "actual_robot_voltage": "DOUBLE",
    "actual_robot_current": "DOUBLE", "actual_joint_voltage": "VECTOR6D",
    "runtime_state": "UINT32", "robot_status_bits": "UINT32", "safety_status_bits": "UINT32",
    "standard_analog_input0": "DOUBLE", "standard_analog_input1": "DOUBLE",
    "standard_analog_output0": "DOUBLE", "standard_analog_output1": "DOUBLE",
    "ft_raw_wrench": "VECTOR6D", "payload": "DOUBLE", "payload_cog": "VECTOR3D", "payload_inertia": "VECTOR6D",
    "output_bit_registers0_to_31": "UINT32", "output_bit_registers32_to_63": "UINT32",
    **{f"output_int_register_{i}": "INT32" for i in range(48)},
    **{f"output_double_register_{i}": "DOUBLE" for i in range(48)},
}

# Input variables (written by clients), global to the controller like the real registers.
INPUTS = {
    **{f"input_int_register_{i}": "INT32" for i in range(48)},
    **{f"input_double_register_{i}": "DOUBLE" for i in range(48)},
    **{f"input_bit_register_{i}": "BOOL" for i in range(64, 128)},
    "standard_digital_output_mask": "UINT8", "standard_digital_output": "UINT8",
    "configurable_digital_output_mask": "UINT8", "configurable_digital_output": "UINT8",
    "tool_digital_output_mask": "UINT8", "tool_digital_output": "UINT8",
    "standard_analog_output_mask": "UINT8", "standard_analog_output_type": "UINT8",
    "standard_analog_output_0": "DOUBLE", "standard_analog_output_1": "DOUBLE",
    "speed_slider_mask": "UINT32", "speed_slider_fraction": "DOUBLE",
    "external_force_torque": "VECTOR6D",
}

# runtime_state (guide): 0 stopping, 1 stopped, 2 playing, 3 pausing, 4 paused, 5 resuming
RUNTIME_STOPPED, RUNTIME_PLAYING, RUNTIME_PAUSED = 1, 2, 4
# robot_mode: 7 running; safety_mode: 1 normal, 3 protective stop; status bits
ROBOT_MODE_RUNNING = 7
SAFETY_NORMAL, SAFETY_PROTECTIVE_STOP = 1, 3
SAFETY_BIT_NORMAL, SAFETY_BIT_PROTECTIVE_STOPPED = 1 << 0, 1 << 2
ROBOT_BIT_POWER_ON, ROBOT_BIT_PROGRAM_RUNNING = 1 << 0, 1 << 1


class ProtocolError(Exception):
    """The client sent something this protocol version does not allow."""


def frame(msg_type: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(HEADER.size + len(payload), msg_type) + payload


def split_frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """Remove every complete message from ``buffer``; return (type, payload) pairs in order."""
    out = []
    while len(buffer) >= HEADER.size:
        size, msg_type = HEADER.unpack_from(buffer)
        if size < HEADER.size:
            raise ProtocolError(f"message size {size} smaller than the header")
        if len(buffer) < size:
            break
        out.append((msg_type, bytes(buffer[HEADER.size:size])))
        del buffer[:size]
    return out


def recipe_struct(types: list[str]) -> struct.Struct:
    return struct.Struct(">B" + "".join(TYPE_FORMATS[t] for t in types))


class OutputRecipe:
    def __init__(self, recipe_id: int, names: list[str], frequency: float):
        self.id = recipe_id
        self.names = names
        self.types = [OUTPUTS[n] for n in names]
        self.frequency = frequency
        self.struct = recipe_struct(self.types)

    def pack(self, values: dict) -> bytes:
        flat = [self.id]
        for name, typ in zip(self.names, self.types):
            v = values[name]
            if typ.startswith("VECTOR"):
                flat.extend(v)
            else:
                flat.append(v)
        return frame(DATA_PACKAGE, self.struct.pack(*flat))


class InputRecipe:
    def __init__(self, recipe_id: int, names: list[str]):
        self.id = recipe_id
        self.names = names
        self.types = [INPUTS[n] for n in names]
        self.struct = recipe_struct(self.types)

    def unpack(self, payload: bytes) -> dict:
        if len(payload) != self.struct.size:
            raise ProtocolError(f"input recipe {self.id}: {len(payload)} bytes, expected {self.struct.size}")
        flat = self.struct.unpack(payload)[1:]
        out, i = {}, 0
        for name, typ in zip(self.names, self.types):
            width = {"VECTOR3D": 3, "VECTOR6D": 6, "VECTOR6INT32": 6, "VECTOR6UINT32": 6}.get(typ, 1)
            out[name] = flat[i] if width == 1 else list(flat[i:i + width])
            i += width
        return out


def parse_names(payload: bytes) -> list[str]:
    return [n for n in payload.decode("ascii", "replace").split(",") if n.strip()]


def reply_protocol_version(payload: bytes) -> tuple[bytes, bool]:
    (version,) = struct.unpack(">H", payload[:2])
    ok = version == PROTOCOL_VERSION
    return frame(REQUEST_PROTOCOL_VERSION, struct.pack(">B", 1 if ok else 0)), ok


def reply_version(version: tuple[int, int, int, int]) -> bytes:
    return frame(GET_URCONTROL_VERSION, struct.pack(">IIII", *version))


def setup_outputs(payload: bytes, recipe_id: int, max_frequency: float) -> tuple[bytes, OutputRecipe | None]:
    """Reply to O; the recipe is None when a variable is unknown or the frequency is out of range."""
    if len(payload) < 8:
        raise ProtocolError("setup outputs without a frequency")
    (frequency,) = struct.unpack(">d", payload[:8])
    names = parse_names(payload[8:])
    types = [OUTPUTS.get(n, "NOT_FOUND") for n in names]
    ok = names and "NOT_FOUND" not in types and 0 < frequency <= max_frequency
    rid = recipe_id if ok else 0
    reply = frame(SETUP_OUTPUTS, struct.pack(">B", rid) + ",".join(types).encode())
    return reply, (OutputRecipe(recipe_id, names, frequency) if ok else None)


def setup_inputs(payload: bytes, recipe_id: int, in_use: set[str]) -> tuple[bytes, InputRecipe | None]:
    names = parse_names(payload)
    types = ["IN_USE" if n in in_use else INPUTS.get(n, "NOT_FOUND") for n in names]
    ok = names and all(t in TYPE_FORMATS for t in types)
    rid = recipe_id if ok else 0
    reply = frame(SETUP_INPUTS, struct.pack(">B", rid) + ",".join(types).encode())
    return reply, (InputRecipe(recipe_id, names) if ok else None)


def reply_accepted(msg_type: int, accepted: bool) -> bytes:
    return frame(msg_type, struct.pack(">B", 1 if accepted else 0))


def text_message(message: str, source: str = "robodyn-ur-controller", level: int = 1) -> bytes:
    """M in protocol version 2: length-prefixed message and source, then the warning level."""
    m, s = message.encode()[:255], source.encode()[:255]
    return frame(TEXT_MESSAGE, struct.pack(">B", len(m)) + m + struct.pack(">B", len(s)) + s + struct.pack(">B", level))
