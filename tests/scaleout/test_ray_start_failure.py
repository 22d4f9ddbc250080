"""Ray's own start-up time-out (a fixed 30 s for a local instance's raylet) reaches the user as one
line naming the option to use instead; any other failure of ray.init is not hidden."""

from __future__ import annotations

import pytest

from robodyn.errors import UserError

ray = pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")


def _failing_init(message: str):
    def init(*_args, **_kwargs):
        raise Exception(message)
    return init


def _no_ray_running() -> None:
    """ray.init is replaced here: an instance already up would not call it, and in a test process
    such an instance is an earlier test's leak, which must fail, not skip this test."""
    if ray.is_initialized():
        pytest.fail("a Ray instance is already running in this process: an earlier test did not shut down "
                    "the one it started", pytrace=False)


def test_a_local_instance_that_does_not_start_in_time_is_one_line(monkeypatch):
    from robodyn.scaleout import RayExecutor

    _no_ray_running()
    monkeypatch.setattr(ray, "init", _failing_init("The current node timed out during startup. This could happen "
                                                   "because some of the raylet failed to startup or the GCS has "
                                                   "become overloaded."))
    with pytest.raises(UserError) as err:
        RayExecutor(workers=2)
    message = str(err.value)
    assert "\n" not in message and "--cluster local" in message and "30 s" in message


def test_other_start_failures_are_not_rewritten(monkeypatch):
    from robodyn.scaleout import RayExecutor

    _no_ray_running()
    monkeypatch.setattr(ray, "init", _failing_init("some other failure"))
    with pytest.raises(Exception, match="some other failure") as err:
        RayExecutor(workers=2)
    assert not isinstance(err.value, UserError)
