"""Long waits say where they are when no bar is drawn (piped, a service, --json)."""

from robodyn.commands import progress as bars


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_without_a_bar_a_long_step_writes_a_line_every_ten_seconds_and_a_short_one_nothing(capsys):
    clock = Clock()
    b = bars.bar(None, total=100, desc="run 20261127-070000-abc", unit="%")  # pytest's streams: no terminal
    assert isinstance(b, bars._NoBar)
    show = bars.stages(b, clock=clock)
    for k in range(26):  # a wait polled every second for 25 s
        show("executing" if k < 20 else "finalizing", k / 25)
        clock.t += 1.0
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["run 20261127-070000-abc: executing 40%", "run 20261127-070000-abc: finalizing 80%"]
    short = bars.stages(bars.bar(None, desc="job-x"), clock=clock)
    for k in range(9):
        short("fit", k / 9)
        clock.t += 1.0
    assert capsys.readouterr().err == ""


def test_a_wait_with_json_says_nothing_on_stdout(capsys):
    clock = Clock()

    class Args:
        json = True

    show = bars.stages(bars.bar(Args(), desc="job-y"), clock=clock)
    clock.t += 30
    show("validating", 0.95)
    out = capsys.readouterr()
    assert out.out == "" and out.err == "job-y: validating 95%\n"
