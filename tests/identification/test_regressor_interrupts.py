"""regressor.signals_deferred: a SIGINT that arrives while a compiled kernel runs is recorded and
handed to the previous handler once the kernel has returned (issue 49 item 1; the child-process
test with real kernels is tests/commands/test_interrupt.py)."""

import os
import signal
import threading

import pytest

from robodyn.identification.regressor import signals_deferred


def _python_work():
    """Bytecode to run: where Python calls a pending signal's handler."""
    total = 0
    for k in range(1000):
        total += k
    return total


def test_a_sigint_inside_is_raised_after_the_block_and_the_handler_restored():
    reached = []
    # Python's own Ctrl-C handler, as a command has it (a test runner's worker may ignore SIGINT)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                _python_work()  # the handler runs here and only records the signal
                reached.append("end of block")
        assert reached == ["end of block"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)


def test_the_previous_handler_gets_the_signal_once_and_nested_blocks_defer_to_the_outer_one():
    calls = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        with signals_deferred():
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                _python_work()
            assert calls == []  # the inner block did not hand it on
            os.kill(os.getpid(), signal.SIGINT)
            _python_work()
            assert calls == []
        assert calls == [signal.SIGINT]  # two signals while deferred: the handler is called once
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_nothing_is_changed():
    seen = []

    def worker():
        with signals_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [before]
