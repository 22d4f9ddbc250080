"""The simulated UR controller's lockstep queue, without a network or a clock: which tick waits,
which command it applies, and how the client's lead is counted (tools/testing/ur_controller/lockstep.py)."""

import threading

from robodyn.tools.testing.ur_controller.lockstep import Lockstep
from robodyn.tools.testing.ur_controller.script import CMD_SERVO_STOP, CMD_SERVOJ

SHORT = 0.01  # the wait of a tick whose command never comes (its outcome, not its length, is checked)


def servo(k: int) -> dict:
    return {"input_int_register_0": CMD_SERVOJ, "input_double_register_0": float(k)}


def receive(ls: Lockstep, lock, values: dict, streaming: bool = True, tick: int = 0) -> bool:
    with lock:
        return ls.receive(values, streaming, tick)


def pop(ls: Lockstep, lock):
    with lock:
        return ls.pop()


def test_in_step_each_tick_applies_the_answer_to_the_package_before_it():
    lock = threading.Lock()
    ls = Lockstep(lock, SHORT)
    for k in range(5):
        assert receive(ls, lock, servo(k), tick=k)
        assert ls.wait(k) is False  # the answer is there: no wait
        assert pop(ls, lock)["input_double_register_0"] == k
    assert (ls.lead, ls.waits, ls.timeouts, list(ls.leads)) == (0, 0, 0, [])


def test_a_client_a_command_ahead_is_counted_and_the_tick_waits_for_its_newest_answer():
    lock = threading.Lock()
    ls = Lockstep(lock, 10.0)  # an outer bound only: the answer is sent while the tick waits
    receive(ls, lock, servo(0), tick=10)  # answers package 9, but arrived after tick 10
    receive(ls, lock, servo(1), tick=10)  # answers package 10 before tick 11 applied the first
    assert ls.lead == 1 and list(ls.leads) == [10]
    assert ls.wait(11) is False  # two queued, lead 1: the client has answered package 10
    assert pop(ls, lock)["input_double_register_0"] == 0  # in arrival order, none dropped
    # the spare is queued but the answer to package 11 is not: the tick must wait for it
    got = {}
    waiter = threading.Thread(target=lambda: got.setdefault("waited", ls.wait(12)))
    waiter.start()
    for _ in range(10_000):  # until the tick is waiting (it counts the wait before it blocks)
        if ls.waits == 1:
            break
        waiter.join(0.001)
    assert ls.waits == 1 and waiter.is_alive()
    receive(ls, lock, servo(2), tick=11)
    waiter.join(10)
    assert got == {"waited": True} and ls.timeouts == 0
    assert ls.lead == 1  # in step at one command ahead: a lead is counted once
    assert [pop(ls, lock)["input_double_register_0"] for _ in range(2)] == [1, 2]


def test_a_tick_that_would_go_ahead_on_the_spare_alone_waits_and_then_pauses_lockstep():
    lock = threading.Lock()
    ls = Lockstep(lock, SHORT)
    receive(ls, lock, servo(0), tick=5)
    receive(ls, lock, servo(1), tick=5)
    pop(ls, lock)
    assert ls.wait(6) is True  # one queued is the spare; its successor never comes
    assert ls.timeouts == 1 and ls.paused and ls.lead == 0 and list(ls.pauses) == [[6, None]]
    assert pop(ls, lock)["input_double_register_0"] == 1  # the paused tick drains the queue
    assert ls.wait(7) is False and ls.wait(8) is False  # paused: the ticks run on the wall clock
    receive(ls, lock, servo(2), tick=8)
    assert ls.lead == 0  # a command that ends a pause is no lead
    assert ls.wait(9) is False and not ls.paused and list(ls.pauses) == [[6, 9]]


def test_a_command_other_than_servoj_ends_the_lead_and_is_applied_after_what_is_queued():
    lock = threading.Lock()
    ls = Lockstep(lock, SHORT)
    receive(ls, lock, servo(0))
    receive(ls, lock, servo(1))
    pop(ls, lock)
    assert ls.lead == 1
    stop = {"input_int_register_0": CMD_SERVO_STOP, "input_double_register_0": 10.0}
    receive(ls, lock, stop)
    assert ls.lead == 0 and ls.wait(3) is False and ls.timeouts == 0
    assert [pop(ls, lock)["input_int_register_0"] for _ in range(2)] == [CMD_SERVOJ, CMD_SERVO_STOP]


def test_outside_streaming_a_command_is_written_at_once_unless_others_are_queued():
    lock = threading.Lock()
    ls = Lockstep(lock, SHORT)
    assert receive(ls, lock, servo(0), streaming=False) is False and pop(ls, lock) is None
    receive(ls, lock, servo(1))  # streaming
    assert receive(ls, lock, servo(2), streaming=False) is True  # behind a queued one: order is kept
    assert ls.lead == 0  # counted while streaming only: the second arrived after streaming ended
    assert [pop(ls, lock)["input_double_register_0"] for _ in range(2)] == [1, 2]
