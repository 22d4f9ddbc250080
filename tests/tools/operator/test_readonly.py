"""The viewers' view of the daemon: only read commands, and the robot model they draw."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from robodyn.robot.loader import load_model
from robodyn.tools.operator.foxglove_bridge import LinkTransforms, check_model_matches, urdf_with_visuals
from robodyn.daemon.readonly import READ_ONLY_COMMANDS, ReadOnlyClient, run_progress

WRITE_COMMANDS = ("submit_run", "arm", "disarm", "abort", "identify")


def test_the_viewers_client_cannot_send_a_motion_arming_or_job_command():
    # nothing listens on this endpoint: a refused command must fail before anything is sent
    client = ReadOnlyClient("tcp://127.0.0.1:9", timeout=0.2)
    try:
        for cmd in WRITE_COMMANDS:
            assert cmd not in READ_ONLY_COMMANDS
            assert not hasattr(client, cmd)
            with pytest.raises(PermissionError, match="not a read-only daemon command"):
                client.call(cmd, robot="panda", trajectory={})
    finally:
        client.close()


def test_run_progress_follows_the_phases_of_a_run():
    run = {"run_id": "r1", "state": "move_to_start", "duration_s": 4.0, "trajectory_samples": 4001,
           "move_samples": 1001, "progress": {"phase": "move_to_start", "move_index": 250, "move_samples": 1001,
                                              "trajectory_index": 0, "trajectory_samples": 4001}}
    p = run_progress(run)
    assert p["fraction"] == 0.0 and p["move_fraction"] == pytest.approx(250 / 1001)
    assert "moving to the start" in p["text"]
    run.update(state="execute", progress=dict(run["progress"], phase="execute", move_index=1001,
                                              trajectory_index=1000))
    p = run_progress(run)
    assert p["fraction"] == pytest.approx(1000 / 4001) and "25.0 % of 4.0 s" in p["text"]
    run.update(state="completed", summary={"executed_samples": 4001})
    assert run_progress(run)["fraction"] == 1.0
    assert run_progress(None) is None


def test_the_model_must_be_the_one_the_daemon_drives():
    panda = load_model("panda")
    check_model_matches(panda, {"robot": panda.summary()})
    with pytest.raises(ValueError, match="--robot: 'ur5' has joints"):
        check_model_matches(load_model("ur5"), {"robot": panda.summary()})


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_published_transforms_place_the_published_urdf_like_pinocchio_does(robot):
    """The /tf chain the bridge sends, composed from base_link to tool, equals the forward
    kinematics pinocchio computes from the /robot_description URDF the bridge sends."""
    import pinocchio as pin
    model = load_model(robot)
    urdf = urdf_with_visuals(model)
    root = ET.fromstring(urdf)
    assert len(root.findall("link/visual")) >= model.dof + 2  # a sphere per frame, cylinders between
    pm = pin.buildModelFromXML(urdf)
    data = pm.createData()
    tf = LinkTransforms(model)
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(np.maximum(model.q_min, -3), np.minimum(model.q_max, 3))
        pin.framesForwardKinematics(pm, data, q)
        T = np.eye(4)
        for parent, child, Tj in zip(tf.parents, tf.children, tf.matrices(q)):
            T = T @ Tj
            ref = data.oMf[pm.getFrameId(child)]
            np.testing.assert_allclose(T[:3, :3], ref.rotation, atol=1e-9, err_msg=child)
            np.testing.assert_allclose(T[:3, 3], ref.translation, atol=1e-9, err_msg=child)


def test_viewers_say_when_no_daemon_answers(tmp_path, capsys):
    """No daemon: the bridge refuses to start with one sentence; the status page serves a page
    that says the daemon is unreachable (and keeps polling)."""
    import json
    import urllib.request

    from robodyn.cli import main
    from tests.daemon.conftest import free_port
    from tests.tools.operator.conftest import ViewerProcess

    nobody = f"tcp://127.0.0.1:{free_port()}"
    assert main(["bridge", "foxglove", "--endpoint", nobody, "--timeout", "0.5", "--port", "0", "--nice", "0"]) == 2
    assert "no reply from the daemon" in capsys.readouterr().err
    page = ViewerProcess(["status-page", "--endpoint", nobody, "--timeout", "0.5", "--port", "0"], tmp_path / "p.log")
    try:
        assert page.info["connected"] is False
        token = open(page.info["token_file"]).read().strip()
        req = urllib.request.Request(page.info["url"] + "api/status", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            snap = json.loads(r.read())
        assert snap["connected"] is False and "no reply from the daemon" in snap["error"]
        assert snap["stale"] is True and snap["age_s"] is None  # no answer yet: nothing to show as fresh
    finally:
        page.stop()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", ""])
def test_views_refuse_a_non_loopback_host_with_one_line(host, capsys):
    """The views have no TLS (their token would travel in clear text): another address than
    loopback is refused before anything is served or any daemon asked (the endpoint here answers
    nothing: the refusal comes first)."""
    from robodyn.cli import main
    from robodyn.errors import UserError
    from robodyn.tools.operator.listen import check_listen_host, is_loopback_host
    from robodyn.tools.operator.status_page import serve_status_page
    from tests.daemon.conftest import free_port

    nobody = f"tcp://127.0.0.1:{free_port()}"
    for view in (["status-page"], ["bridge", "foxglove"]):
        assert main([*view, "--endpoint", nobody, "--timeout", "0.5", "--host", host, "--port", "0",
                     "--nice", "0"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "refused: the" in err and "has no TLS" in err, err
        assert "no reply from the daemon" not in err
    with pytest.raises(UserError, match="no TLS"):  # the library refuses too
        serve_status_page(lambda: None, host, 0)
    for local in ("127.0.0.1", "127.0.1.1", "::1", "localhost"):
        assert is_loopback_host(local)
        check_listen_host(local, "status page")
    assert not is_loopback_host(host)
