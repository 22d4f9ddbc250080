"""`robodyn bridge foxglove` during a simulated run, seen by a plain WebSocket client speaking
Foxglove's protocol (as Foxglove itself does): what it receives is what the sensor measured."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import struct
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import websockets

from robodyn.recording import load_recording
from robodyn.robot.kinematics import forward_kinematics
from robodyn.robot.loader import load_model
from tests.tools.operator.conftest import ViewerProcess, excitation

TOPICS = ("/joint_states", "/robodyn/phase", "/robodyn/events", "/robodyn/status", "/robot_description", "/tf")
RUN_S = 2.0


def decoder_for(channel: dict):
    """How a viewer decodes a channel: JSON, or protobuf from the FileDescriptorSet the server sent."""
    if channel["encoding"] == "json":
        return lambda payload: json.loads(payload)
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    assert channel["encoding"] == "protobuf" and channel["schemaEncoding"] == "protobuf"
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))
    return cls.FromString


async def watch_a_run(url: str, daemon, trajectory: dict, deadline_s: float = 90.0) -> dict:
    out = {"messages": {t: [] for t in TOPICS}, "statuses": []}
    async with websockets.connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None, open_timeout=10) as ws:
        out["subprotocol"] = ws.subprotocol
        channels = {}
        while len(channels) < len(TOPICS):
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if msg["op"] == "serverInfo":
                out["server_info"] = msg
            elif msg["op"] == "advertise":
                channels.update({c["topic"]: c for c in msg["channels"]})
        out["channels"] = channels
        subs = {i + 1: topic for i, topic in enumerate(TOPICS)}
        decoders = {topic: decoder_for(channels[topic]) for topic in TOPICS}
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": i, "channelId": channels[topic]["id"]} for i, topic in subs.items()]}))
        # a viewer may try to publish (a command topic): the server has no such capability
        await ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": 1, "topic": "/robodyn/command", "encoding": "json", "schemaName": "cmd"}]}))
        # the run starts once the subscriptions are served, i.e. a sample of the idle stream arrived:
        # a loaded host let the bridge take the subscribe op after the run's first phase event
        # (its phases read execute, settle: move_to_start was published before anyone subscribed)
        for _ in range(10_000):
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, str):
                out["statuses"].append(json.loads(frame))
            elif subs[struct.unpack_from("<I", frame, 1)[0]] == "/joint_states":
                break
        out["run"] = await asyncio.to_thread(daemon.client.submit_run, "panda", trajectory)
        t_end = time.monotonic() + deadline_s
        done = False
        idle_after_done = statuses_after_done = 0
        # after the run: idle samples, and two status messages, whose counts then cover the run
        while time.monotonic() < t_end and (idle_after_done < 200 or statuses_after_done < 2):
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, str):
                out["statuses"].append(json.loads(frame))
                continue
            assert frame[0] == 1  # message data: opcode, subscription id, log time, payload
            sub_id, log_time = struct.unpack_from("<IQ", frame, 1)
            topic = subs[sub_id]
            msg = decoders[topic](frame[13:])
            out["messages"][topic].append((log_time, msg))
            if topic == "/robodyn/events" and msg.get("event") == "done":
                done = True
            if done and topic == "/joint_states" and msg["phase"] == "idle":
                idle_after_done += 1
            if done and topic == "/robodyn/status":
                statuses_after_done += 1
        assert done, "the run did not end within the deadline"
    return out


def test_bridge_relays_the_measured_joint_states_phases_and_model_of_a_run(rt_daemon, tmp_path):
    bridge = ViewerProcess(["bridge", "foxglove", "--endpoint", rt_daemon.control, "--port", "0"],
                           tmp_path / "bridge.log")
    try:
        seen = asyncio.run(watch_a_run(bridge.info["serving"], rt_daemon, excitation(RUN_S)))
    finally:
        final = bridge.stop()
    assert seen["subprotocol"] == "foxglove.sdk.v1"
    # read-only: no capability advertised, a client's attempt to publish refused
    assert seen["server_info"]["capabilities"] == []
    assert any("clientPublish" in s.get("message", "") for s in seen["statuses"]), seen["statuses"]
    assert final and final[-1]["stopped"], bridge.log_text()

    run_id = seen["run"]["run_id"]
    rec = load_recording(rt_daemon.client.recording_info(run_id)["path"])
    q_rec = {int(s): row for s, row in zip(rec.seq, rec.signal("q"))}
    tau_rec = {int(s): row for s, row in zip(rec.seq, rec.signal("tau"))}
    names = [j["name"] for j in rt_daemon.client.describe()["robot"]["joints"]]

    joint_states = [m for _, m in seen["messages"]["/joint_states"]]
    in_run = [m for m in joint_states if m["seq"] in q_rec]
    executed = [m for m in in_run if m["phase"] == "execute"]
    expected_execute = int(np.count_nonzero(rec.phase_mask("execute")))
    # every sample of the run is relayed while a single viewer keeps up; one the host slows loses
    # the oldest messages, never blocks the daemon, and the bridge counts each one it lost on its
    # input or dropped for a viewer: a missing sample it did not count would be a silent loss
    missing = expected_execute - len(executed)
    counted = max(s["bridge"]["lost"] + s["bridge"]["dropped"] for _, s in seen["messages"]["/robodyn/status"])
    assert len(executed) > 0 and missing <= counted, (len(executed), expected_execute, counted, final)
    for m in in_run:  # bit for bit what the sensor measured and the recorder wrote
        assert m["name"] == names
        assert m["position"] == q_rec[m["seq"]].tolist()
        assert m["effort"] == tau_rec[m["seq"]].tolist()
        assert m["run"] > 0
    assert sorted({m["phase"] for m in in_run}) == ["execute", "move_to_start", "settle"]
    positions = np.array([m["position"] for m in executed])
    assert np.ptp(positions, axis=0).max() > 0.01  # the arm moved, and the viewer saw it move
    assert all(m["signals"].keys() >= {"q_d", "qd_d", "tau_d"} for m in in_run[:10])

    # run phases in order, named with the run id
    phases = [m for _, m in seen["messages"]["/robodyn/phase"] if m["run_id"] == run_id]
    order = [p["phase"] for i, p in enumerate(phases) if i == 0 or p["phase"] != phases[i - 1]["phase"]]
    assert order == ["move_to_start", "execute", "settle"], order
    events = [m["event"] for _, m in seen["messages"]["/robodyn/events"] if m.get("run_id") == run_id]
    assert events[0] == "started" and events[-1] == "done", events

    # the robot model: a URDF Foxglove's 3D panel can load, with the daemon's joints
    (_, description), = seen["messages"]["/robot_description"][:1]
    urdf = ET.fromstring(description["data"])
    movable = [j.get("name") for j in urdf.findall("joint") if j.get("type") in ("revolute", "prismatic")]
    assert movable == names

    # the link transforms put the tool where forward kinematics of the relayed q puts it
    model = load_model("panda")
    by_stamp = {(m["timestamp"]["sec"], m["timestamp"]["nsec"]): m for m in joint_states}
    checked = 0
    for _, tf in seen["messages"]["/tf"]:
        stamp = (tf.transforms[0].timestamp.seconds, tf.transforms[0].timestamp.nanos)
        js = by_stamp.get(stamp)
        if js is None:
            continue
        T = np.eye(4)
        for t in tf.transforms:
            R = quaternion_matrix(t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w)
            step = np.eye(4)
            step[:3, :3], step[:3, 3] = R, (t.translation.x, t.translation.y, t.translation.z)
            T = T @ step
        assert [t.child_frame_id for t in tf.transforms][-1] == "tool"
        np.testing.assert_allclose(T, forward_kinematics(model, np.array(js["position"])), atol=1e-9)
        checked += 1
    assert checked >= 10, checked

    # status: the daemon's health and loop statistics, and the bridge's own counters
    status = seen["messages"]["/robodyn/status"][-1][1]
    assert status["connected"] and status["armed"] and status["driver"]["alive"]
    assert status["loop"]["count"] > 0 and status["loop"]["p99_ms"] > 0
    assert status["bridge"]["viewers"] == 1


def quaternion_matrix(x, y, z, w) -> np.ndarray:
    """Rotation matrix of a unit quaternion (the textbook formula, independent of the bridge's scipy)."""
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


async def joint_states_over(url: str, subprotocol: str, count: int) -> dict:
    """A raw client of one subprotocol: serverInfo, advertise, subscribe to /joint_states, ``count``
    messageData frames."""
    out = {"ops": [], "states": []}
    async with websockets.connect(url, subprotocols=[subprotocol], max_size=None, open_timeout=10) as ws:
        out["subprotocol"] = ws.subprotocol
        channels = {}
        while "/joint_states" not in channels:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            out["ops"].append(msg["op"])
            if msg["op"] == "serverInfo":
                out["server_info"] = msg
            elif msg["op"] == "advertise":
                channels.update({c["topic"]: c for c in msg["channels"]})
        out["channel"] = channels["/joint_states"]
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 7, "channelId": channels["/joint_states"]["id"]}]}))
        for _ in range(20 * count):  # bounded: a status frame or two may come between the samples
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, bytes):
                op, sub_id, log_time = struct.unpack_from("<BIQ", frame, 0)
                out["states"].append((op, sub_id, log_time, json.loads(frame[13:])))
                if len(out["states"]) == count:
                    break
    return out


def upgrade(port: int, headers: dict, path: str = "/") -> tuple[int, str]:
    """A WebSocket upgrade request with the headers a browser or an attacker would send."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Host": f"127.0.0.1:{port}", "Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode(), "Sec-WebSocket-Version": "13",
         "Sec-WebSocket-Protocol": "foxglove.websocket.v1"}
    h.update(headers)
    try:
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        return r.status, r.read(2000).decode(errors="replace") if r.status != 101 else ""
    finally:
        conn.close()


@pytest.fixture(scope="module")
def idle_bridge(rt_daemon, tmp_path_factory):
    bridge = ViewerProcess(["bridge", "foxglove", "--endpoint", rt_daemon.control, "--port", "0",
                            "--allow-origin", "https://viewer.example"],
                           tmp_path_factory.mktemp("bridge") / "bridge.log")
    yield bridge
    bridge.stop()


def test_both_subprotocols_get_server_info_channels_and_joint_states(rt_daemon, idle_bridge):
    async def both():
        return await asyncio.gather(*(joint_states_over(idle_bridge.info["serving"], sp, 50)
                                      for sp in ("foxglove.websocket.v1", "foxglove.sdk.v1")))

    names = [j["name"] for j in rt_daemon.client.describe()["robot"]["joints"]]
    for subprotocol, seen in zip(("foxglove.websocket.v1", "foxglove.sdk.v1"), asyncio.run(both())):
        assert seen["subprotocol"] == subprotocol
        assert seen["ops"][:2] == ["serverInfo", "advertise"]
        assert seen["server_info"]["capabilities"] == [] and seen["server_info"]["name"] == "robodyn panda"
        assert seen["channel"]["encoding"] == "json" and seen["channel"]["schemaName"] == "robodyn.JointState"
        assert len(seen["states"]) == 50
        seqs = [m["seq"] for *_, m in seen["states"]]
        assert all(b > a for a, b in zip(seqs, seqs[1:])), seqs  # in order, each sample once
        for op, sub_id, log_time, m in seen["states"]:
            assert op == 1 and sub_id == 7  # messageData on the client's own subscription id
            assert log_time == m["timestamp"]["sec"] * 1_000_000_000 + m["timestamp"]["nsec"]
            assert m["name"] == names and len(m["position"]) == len(names) == len(m["effort"])
    assert idle_bridge.info["subprotocols"] == ["foxglove.sdk.v1", "foxglove.websocket.v1"]


def test_the_bridge_refuses_strangers_foreign_origins_and_rebound_hosts(idle_bridge):
    port, token = idle_bridge.info["port"], open(idle_bridge.info["token_file"]).read().strip()
    assert idle_bridge.info["serving"].endswith(f"/?token={token}")
    good = f"/?token={token}"
    assert upgrade(port, {}, good)[0] == 101
    assert upgrade(port, {"Authorization": f"Bearer {token}"})[0] == 101
    assert upgrade(port, {"Origin": f"http://127.0.0.1:{port}"}, good)[0] == 101
    assert upgrade(port, {"Origin": "https://viewer.example"}, good)[0] == 101  # --allow-origin
    # no token, a wrong one: 401, the token file named
    for path in ("/", "/?token=", f"/?token={token[:-2]}xx"):
        status, body = upgrade(port, {}, path)
        assert status == 401 and idle_bridge.info["token_file"] in body, (path, status)
    # cross-site WebSocket from a page in the operator's browser, DNS rebinding: 403 even with the token
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null"):
        status, body = upgrade(port, {"Origin": origin}, good)
        assert status == 403 and "Origin" in body, origin
    for host in (f"rebind.example:{port}", f"127.0.0.1:{port + 1}"):
        status, body = upgrade(port, {"Host": host}, good)
        assert status == 403 and "Host" in body, host
    # a real client without the token never sees a frame
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        asyncio.run(joint_states_over(idle_bridge.info["url"], "foxglove.websocket.v1", 1))
    assert refused.value.response.status_code == 401
