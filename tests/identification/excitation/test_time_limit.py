"""The time limit and the progress heartbeat of the optimizers and the excitation design, on an
injected clock: the limit is judged before every evaluation (not once per iteration), the run
stops at the first check after the deadline with the best point evaluated so far, and progress
comes from inside the evaluations at the heartbeat's pace. No wall-clock bound: every time here is
the fake clock's."""

import numpy as np
import pytest

from robodyn.identification import optimizers as opt
from robodyn.identification.excitation import DesignRequest, design_excitation
from robodyn.identification.regressor import ColumnSpec
from robodyn.limits import check_trajectory
from robodyn.robot.loader import load_model
from tests.clocks import TickingClock

BOUNDS = opt.Bounds(np.full(4, -5.0), np.full(4, 5.0))


class EvaluationClock:
    """Fake wall time that advances ``step`` s per fitness call (the clock itself never moves it)."""

    def __init__(self, step: float = 1.0):
        self.now = 0.0
        self.step = step
        self.calls: list[np.ndarray] = []

    def __call__(self) -> float:
        return self.now

    def fitness(self, X):
        X = np.atleast_2d(X)
        self.calls.append(X.copy())
        self.now += self.step
        return rosenbrock(X)


def rosenbrock(X):
    """Slow enough to converge that no method here finishes within the few evaluations a test allows."""
    return np.sum(100.0 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (1.0 - X[:, :-1]) ** 2, axis=1)


@pytest.mark.parametrize("method", ["pso", "ga", "wso", "slsqp"])
def test_the_run_stops_at_the_first_evaluation_after_the_deadline(method):
    clock = EvaluationClock()
    # the deadline falls between two evaluations: calls start at t = 0, 1, ..., 6; the check before
    # the call at t = 7 is the first after 6.5
    res = opt.minimize(clock.fitness, BOUNDS, method, seed=1, time_limit=6.5, clock=clock)
    assert len(clock.calls) == 7
    assert res.message == "stopped (time limit)"
    # the best point so far: for the population methods every evaluated point competes; SLSQP's
    # gradient stencils (dim + 1 points) are not iterates, its single-point calls are
    pool = np.vstack([X for X in clock.calls if method != "slsqp" or X.shape[0] == 1])
    values = rosenbrock(pool)
    assert res.fun == pytest.approx(values.min(), rel=0, abs=0)
    assert np.array_equal(res.x, pool[np.argmin(values)])


def test_an_slsqp_iteration_is_cut_inside_it_not_at_its_end():
    """One SLSQP iteration is at least a value and a gradient call; a limit judged only per
    iteration would let the run overshoot by whole iterations (the 156 s for 40 s seen at load 16)."""
    clock = EvaluationClock()
    iterations = []
    res = opt.minimize(clock.fitness, BOUNDS, "slsqp", seed=1, time_limit=1.5, clock=clock,
                       callback=lambda p: iterations.append(p.iteration))
    # f(x0) at t = 0 and its gradient at t = 1 (iteration 1 begins); the line search's f(x1) would
    # start at t = 2 and is refused, so iteration 1 never completes (a check at the iteration's end
    # would have let f(x1) run and stopped at t = 3)
    assert [X.shape[0] for X in clock.calls] == [1, BOUNDS.dim]
    assert iterations == [] and res.message == "stopped (time limit)"
    assert np.array_equal(res.x, clock.calls[0][0])  # the only point evaluated as a candidate


def test_a_deadline_already_passed_still_evaluates_one_point_and_starts_no_second_run():
    clock = EvaluationClock()
    clock.now = 100.0
    res = opt.minimize(clock.fitness, BOUNDS, "pso", seed=0, options=opt.PSOOptions(population=6, iterations=50),
                       restarts=3, deadline=50.0, clock=clock)
    assert len(clock.calls) == 1 and res.nfev == 6  # the initial swarm, then the stop
    assert len(res.runs) == 1 and np.isfinite(res.fun)


def test_the_heartbeat_reports_every_period_of_the_clock_from_inside_the_evaluations():
    clock = EvaluationClock()
    beats: list[opt.Progress] = []
    heartbeat = opt.Heartbeat(beats.append, every_s=3.0)
    # a GA generation is one population call; the limit stops the run after 10 calls
    opt.minimize(clock.fitness, BOUNDS, "ga", seed=0, time_limit=9.5, clock=clock, heartbeat=heartbeat)
    assert len(clock.calls) == 10
    # checks before the calls at t = 0..10 (the last one refused); beats at t = 0, 3, 6, 9
    assert [b.elapsed for b in beats] == [0.0, 3.0, 6.0, 9.0]
    assert [b.time_left for b in beats] == [9.5, 6.5, 3.5, 0.5]
    pop = opt.GAOptions().population
    assert [b.nfev for b in beats] == [0, 3 * pop, 6 * pop, 9 * pop]
    assert all(b.method == "ga" for b in beats)
    assert beats[0].best_x is None and beats[-1].best_fitness < beats[1].best_fitness


def test_the_design_keeps_its_budget_and_reports_what_it_optimises():
    model = load_model("twolink")
    req = DesignRequest(family="fourier", harmonics=3, wf=1.0, optimizer="slsqp", columns=ColumnSpec(), grid=60,
                        seed=0, time_limit=10.0)
    lines: list[str] = []
    clock = TickingClock(0.5)
    r = design_excitation(model, req, progress=lines.append, clock=clock, progress_every_s=2.0)
    assert r.optimizer["message"] == "stopped (time limit)"
    # the best design so far is a real one: proved within limits, every base parameter excited
    assert r.limit_report["ok"] and check_trajectory(model, r.trajectory, rate_hz=500).ok
    assert r.metrics["rank"] == r.metrics["base_parameters"]
    beats = [line for line in lines if line.startswith("optimising cond(W_base) with slsqp")]
    assert "starting" in beats[0] and "s left" in beats[0]
    assert len(beats) >= 4 and all("best cond(W_base)" in b for b in beats[1:])
    # the best cond is reported as cond (SLSQP minimises its log): it never rises and stays >= 1
    best = [float(b.split("best cond(W_base) ")[1].split(",")[0]) for b in beats[1:]]
    assert all(v >= 1.0 for v in best) and best == sorted(best, reverse=True)
    assert lines[-1].startswith("optimisation ended (stopped (time limit))")


def test_the_first_compile_is_announced_and_kept_out_of_the_search_budget():
    """The first evaluation of a design compiles its numba kernels (66 s at load 8 with an empty
    cache, docs/excitation.md); counted inside a 40 s limit it left a search of one evaluation. Here
    a criterion of one's own stands in: its first call takes 100 s of the fake clock, later ones 1 s."""
    model = load_model("twolink")
    clock = EvaluationClock()
    first = []

    def criterion(q, qd, qdd):
        clock.now += 100.0 if not first else 1.0
        first.append(q.shape[0])
        return 1.0 / (1.0 + np.mean(qd ** 2, axis=(1, 2)))  # more motion is better

    req = DesignRequest(family="fourier", harmonics=3, wf=1.0, optimizer="pso", columns=ColumnSpec(), grid=60,
                        seed=0, time_limit=5.5, criterion=criterion, options=opt.PSOOptions(population=8))
    lines: list[str] = []
    r = design_excitation(model, req, progress=lines.append, clock=clock)
    assert first[0] == 1  # the priming evaluation: one point, before the search
    assert r.optimizer["preparation_s"] == 100.0
    # the search: calls at t = 100, 101, ..., 105 (the limit runs from 100 to 105.5), then the stop
    assert r.optimizer["nfev"] == 6 * 8 and r.optimizer["message"] == "stopped (time limit)"
    assert lines[0].startswith("preparing the given criterion for")


def test_the_command_says_what_it_optimises_on_stderr_when_no_bar_is_drawn(tmp_path, capsys):
    from robodyn.cli import main

    out = tmp_path / "t.json"
    rc = main(["excitation", "design", "--robot", "twolink", "--harmonics", "2", "--wf", "1", "--grid", "40",
               "--friction", "none", "--iterations", "3", "--out", str(out)])
    assert rc == 0 and out.exists()
    err = capsys.readouterr().err.splitlines()
    name = "robodyn excitation design: "
    assert err[0].startswith(name + "preparing cond(W_base) for")
    assert err[1].startswith(name + "optimising cond(W_base) with slsqp: starting")
    assert err[-1].startswith(name + "optimisation ended")
    assert main(["excitation", "design", "--robot", "twolink", "--harmonics", "2", "--wf", "1", "--grid", "40",
                 "--friction", "none", "--iterations", "3", "--quiet", "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""


def test_a_large_population_is_cut_between_chunks_once_the_deadline_passes():
    """SLSQP's gradient is one evaluation of dim + 1 rows; the design's criterion looks at the
    deadline every CHUNK_ROWS rows, so a budget is overrun by a chunk, not a whole gradient."""
    from robodyn.identification.excitation.designer import CHUNK_ROWS, interruptible

    clock = EvaluationClock()
    rows = []

    def criterion(Z):
        rows.append(Z.shape[0])
        clock.now += 1.0
        return rosenbrock(Z)

    X = np.random.default_rng(0).normal(size=(5 * CHUNK_ROWS + 3, 4))
    whole = interruptible(criterion, deadline=100.0, clock=clock)(X)
    assert np.array_equal(whole, rosenbrock(X))  # chunked, the same values
    assert rows == [CHUNK_ROWS] * 5 + [3]
    rows.clear()
    clock.now = 0.0
    with pytest.raises(opt.OutOfTime):
        interruptible(criterion, deadline=1.5, clock=clock)(X)  # chunks start at t = 0, 1, 2: the third is refused
    assert rows == [CHUNK_ROWS, CHUNK_ROWS]
    rows.clear()
    clock.now = 50.0  # past the deadline: a call's first chunk still runs (a run's first point is always evaluated)
    small = interruptible(criterion, deadline=1.5, clock=clock)(X[:CHUNK_ROWS])
    assert rows == [CHUNK_ROWS] and np.array_equal(small, rosenbrock(X[:CHUNK_ROWS]))


def test_a_design_past_its_deadline_stops_inside_a_gradient():
    """A 7-joint design whose clock passes the deadline while SLSQP evaluates a gradient stops
    there: the run reports the time limit, and no more than one chunk ran after the deadline."""
    from robodyn.identification.excitation.designer import CHUNK_ROWS

    model = load_model("panda")
    clock = EvaluationClock()
    seen = []

    def criterion(q, qd, qdd):
        seen.append((clock.now, q.shape[0]))
        clock.now += 1.0
        return np.full(q.shape[0], 10.0) + np.std(qdd, axis=(1, 2))

    req = DesignRequest(wf=0.6, harmonics=3, grid=40, time_limit=3.5, criterion=criterion,
                        columns=ColumnSpec(), seed=1)
    r = design_excitation(model, req, clock=clock)
    assert r.optimizer["message"] == "stopped (time limit)"
    # the clock starts at the first (priming) call; every call is a chunk at most, and after the
    # deadline (prepared + 3.5) the only call that starts is one refused at its second chunk
    prepared = seen[0][0] + 1.0
    late = [rows for t, rows in seen[1:] if t > prepared + 3.5]
    assert all(rows <= CHUNK_ROWS for _, rows in seen[1:])
    assert len(late) <= 1
