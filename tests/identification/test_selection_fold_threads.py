"""Folds scored at once, in threads, give the table scored one fold at a time.

Data: the UR-like realistic plant (identification/realistic_logs.py: a simulated plant unlike the
model -- inertial parameters off, Stribeck friction with position ripple, an elastic shoulder,
drive gains off, quantised noisy currents), 4 s of one excitation. Checked:

- select's whole candidate table (every fold score, parameter count and error) and its choice are
  the same to the bit with one worker and with three, for every friction model (no fold reads
  another's work; the shared cache of processed held-out recordings gives each the same pieces);
- the outcomes are merged in the folds' order whichever thread finishes first: fold scores in
  fold order, and a candidate's first failure in fold order is the one told; a fold that fails
  stops the others at their next step, and its error is what select raises;
- how many folds run at once: one under a Numba threading layer that aborts on concurrent kernel
  launches, at most one per processor and per fold, and no more than the memory budget holds; what
  a fold keeps (its fit samples' rows of the widest candidate's columns), and select's one-line
  refusal when that is over half the memory available;
- ProcessedCache.sharing_pieces shares the processed pieces and keeps regressor rows of its own; a
  friction-column set's prediction pieces are derived from the kept plain ones on each use.
"""

import threading

import numpy as np
import pytest

from robodyn.identification import fold_budget, selection
from robodyn.identification.pipeline import IdentificationConfig, ProcessedCache
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.realistic_logs import realistic_log
from robodyn.robot.loader import load_model

GUARD_S = 120.0  # a hung selection fails the test instead of hanging it; no timing is asserted
CONFIG = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0))
CANDIDATES = dict(folds=3, frictions=("coulomb-viscous", "sigmoid", "stribeck"), rotor_inertia=(True, False),
                  methods=("ols", "wls"))


@pytest.fixture(scope="module")
def plant():
    return load_model("ur5e"), realistic_log("ur", 2, duration=4.0).data


@pytest.fixture
def threads(plant):
    """Skip where Numba's threading layer would abort on kernels launched from two threads (select
    then scores one fold at a time, whatever it is asked): one parallel kernel run chooses the layer."""
    from robodyn.identification.regressor import ColumnSpec, regressor

    model, data = plant
    regressor(model, data.q[:64], data.q[:64] * 0, data.q[:64] * 0, ColumnSpec(True, (), ()))
    if not fold_budget.concurrent_kernels_safe():
        pytest.skip("Numba's threading layer here is not safe for concurrent kernel launches")


def _table(result) -> list:
    return [(c["friction"], c["rotor_inertia"], c["method"], c["fold_scores"], c["parameters"], c["error"])
            for c in result.selection["candidates"]]


def test_folds_scored_at_once_give_the_table_scored_one_at_a_time(plant, threads):
    model, data = plant
    alone = selection.select(model, [data], CONFIG, workers=1, **CANDIDATES)
    together = selection.select(model, [data], CONFIG, workers=3, **CANDIDATES)
    assert _table(together) == _table(alone)
    assert together.selection["chosen"] == alone.selection["chosen"]
    np.testing.assert_array_equal(together.values, alone.values)
    assert len(alone.selection["candidates"]) == 12 and all(len(c["fold_scores"]) == 3
                                                             for c in alone.selection["candidates"])


def test_outcomes_are_merged_in_fold_order_whichever_thread_finishes_first(plant, threads, monkeypatch):
    """The first fold waits until the last has finished (bounded), and every fold reports one
    candidate failed with its own fold's name: the table tells the first fold's failure and keeps
    every other candidate's scores in fold order."""
    model, data = plant
    score_fold = selection._score_fold
    last_done = threading.Event()
    finished: list = []
    victim = ("sigmoid", False, 8.0, "wls")

    def ordered(model, datasets, holdout, fold, *args):
        if fold.name.startswith("block 1") or fold.name.startswith("phase 1"):
            last_done.wait(GUARD_S)  # a guard against a hang only: the order asserted below judges
        outcome = score_fold(model, datasets, holdout, fold, *args)
        finished.append(fold.name)
        if fold.name.startswith("block 3") or fold.name.startswith("phase 3"):
            last_done.set()
        assert victim in outcome
        outcome[victim] = (f"failed in {fold.name}", None)
        return outcome

    alone = selection.select(model, [data], CONFIG, workers=1, **CANDIDATES)
    monkeypatch.setattr(selection, "_score_fold", ordered)
    together = selection.select(model, [data], CONFIG, workers=3, **CANDIDATES)
    plan = [f["name"] for f in together.selection["folds"]]
    assert finished[0] != plan[0] and finished[-1] == plan[0]  # the first fold finished last
    rows = {(c["friction"], c["rotor_inertia"], c["cutoff_hz"], c["method"]): c
            for c in together.selection["candidates"]}
    assert rows[victim]["error"] == f"failed in {plan[0]}" and rows[victim]["mean"] is None
    before = {(c["friction"], c["rotor_inertia"], c["cutoff_hz"], c["method"]): c["fold_scores"]
              for c in alone.selection["candidates"]}
    for key, row in rows.items():
        if key != victim:
            assert row["fold_scores"] == before[key], key


def test_a_failed_fold_stops_the_others_at_their_next_step_and_is_what_select_raises(plant, threads, monkeypatch):
    """The first fold fails once the second is running; the second keeps asking for its next step
    (progress) and is stopped there, instead of scoring on; select raises the first fold's error."""
    model, data = plant
    second_running = threading.Event()
    seen: dict = {}

    def failing(model, datasets, holdout, fold, *args):
        progress = args[-1]
        if fold.name.startswith(("block 1", "phase 1")):
            second_running.wait(GUARD_S)  # a guard against a hang only: what the second fold saw judges
            raise RuntimeError("broken fold")
        if fold.name.startswith(("block 2", "phase 2")):
            second_running.set()
            for step in range(20_000):  # bounded: each step sleeps a millisecond at most
                try:
                    progress(f"step {step}")
                except selection.SelectionStopped as stopped:
                    seen["stopped_after"] = step
                    raise stopped
                threading.Event().wait(0.001)
            seen["never_stopped"] = True
        return {}

    monkeypatch.setattr(selection, "_score_fold", failing)
    with pytest.raises(RuntimeError, match="broken fold"):
        selection.select(model, [data], CONFIG, workers=3, **CANDIDATES)
    assert "never_stopped" not in seen and "stopped_after" in seen


def test_under_a_layer_unsafe_for_threads_the_folds_asked_for_run_one_at_a_time(plant, monkeypatch):
    import numba

    model, data = plant
    score_fold = selection._score_fold
    ran_in: list = []

    def where(*args):
        ran_in.append(threading.current_thread().name)
        return score_fold(*args)

    monkeypatch.setattr(selection, "_score_fold", where)
    monkeypatch.setattr(numba, "threading_layer", lambda: "workqueue")
    selection.select(model, [data], CONFIG, workers=3, **CANDIDATES)
    assert ran_in == [threading.current_thread().name] * 3


def test_fold_workers_follow_the_threading_layer_the_processors_and_the_memory(monkeypatch):
    import numba

    monkeypatch.setattr(fold_budget.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(numba, "threading_layer", lambda: "workqueue")
    assert fold_budget.fold_workers(5, 1 << 20) == 1  # concurrent launches abort under workqueue

    def not_chosen():
        raise ValueError("no threading layer yet")

    monkeypatch.setattr(numba, "threading_layer", not_chosen)
    assert fold_budget.fold_workers(5, 1 << 20) == 1
    monkeypatch.setattr(numba, "threading_layer", lambda: "omp")
    assert fold_budget.fold_workers(5, 1 << 20) == 5  # one per fold
    assert fold_budget.fold_workers(12, 1 << 20) == 8  # one per processor
    assert fold_budget.fold_workers(5, fold_budget.FOLD_MEMORY_BYTES // 3) == 3  # what 1 GiB holds, memory unknown
    assert fold_budget.fold_workers(5, 2 * fold_budget.FOLD_MEMORY_BYTES) == 1  # always at least one
    # a quarter of the memory available: 16 GiB hold four folds of 1 GiB, 8 GiB two
    assert fold_budget.fold_workers(5, 1 << 30, 16 << 30) == 4 and fold_budget.fold_workers(5, 1 << 30, 8 << 30) == 2
    monkeypatch.setattr(fold_budget.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert fold_budget.fold_workers(5, 1 << 20) == 1


def test_a_fold_memory_counts_the_largest_fit_of_the_widest_columns(plant):
    """The UR5e (6 joints): 10 inertial + rotor + 3 friction columns per joint, and a Stribeck
    column each: 90 columns; 3 contiguous folds over 400 samples hold out 133, 134 and 133, so the
    largest fit is 267 samples."""
    model, data = plant
    from robodyn.identification.folds import blocked_folds

    plan = blocked_folds([400], 3, min_block=100)
    bytes_, counted = fold_budget.fold_memory(model, CONFIG, plan)
    assert bytes_ == 267 * 6 * 90 * 8 and counted.startswith("267 fit samples x 6 joints x 90 columns")
    decimated = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0, decimation=2))
    assert fold_budget.fold_memory(model, decimated, plan)[0] == 133 * 6 * 90 * 8


def test_select_refuses_in_one_line_what_would_not_fit_in_memory(plant, monkeypatch):
    model, data = plant
    monkeypatch.setattr(fold_budget, "available_memory", lambda: 1 << 20)
    with pytest.raises(ValueError) as refused:
        selection.select(model, [data], CONFIG, **CANDIDATES)
    text = str(refused.value)
    assert "\n" not in text and text.startswith("select: a fold keeps") and "of the 0.0 GiB of memory available" in text
    assert "fit samples x 6 joints x 90 columns" in text
    monkeypatch.setattr(fold_budget, "available_memory", lambda: None)  # not known: no refusal
    assert selection.select(model, [data], CONFIG, **CANDIDATES).selection["chosen"]


def test_available_memory_is_what_the_kernel_says():
    got = fold_budget.available_memory()
    if got is None:
        pytest.skip("no /proc/meminfo here")
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert 0 < got <= total


def test_a_cache_sharing_pieces_keeps_rows_of_its_own(plant):
    model, data = plant
    shared = ProcessedCache()
    view = shared.sharing_pieces()
    pieces = view.pieces(data, CONFIG.processing, purpose="predict")
    assert shared.pieces(data, CONFIG.processing, purpose="predict") is pieces  # processed once
    from robodyn.identification.pipeline import prepare

    spec = prepare(model, [data], CONFIG).base.spec
    d = pieces[0].data
    rows = view.rows(model, d, spec, 0, 100)
    assert view.rows(model, d, spec, 0, 100) is rows  # kept for the view's own candidates
    assert shared.rows(model, d, spec, 0, 100) is not rows  # not in the cache it shares pieces with
    np.testing.assert_array_equal(shared.rows(model, d, spec, 0, 100), rows)


def test_a_column_sets_prediction_pieces_are_derived_on_use_not_kept(plant):
    """A fold's own sigmoid or Stribeck scales would otherwise keep the whole held-out recording's
    friction signals once per fold and set: the pieces come from the kept plain ones each time."""
    from robodyn.identification.friction import FrictionColumns

    _, data = plant
    cache = ProcessedCache()
    columns = FrictionColumns("stribeck", np.full(6, 0.1))
    first = cache.pieces(data, CONFIG.processing, purpose="predict", columns=columns)
    again = cache.pieces(data, CONFIG.processing, purpose="predict", columns=columns)
    plain = cache.pieces(data, CONFIG.processing, purpose="predict")
    assert first is not again and len(cache._store) == 1  # only the plain pieces are kept
    for a, b, p in zip(first, again, plain):
        assert a.data.q is p.data.q  # the states are the plain pieces', shared
        np.testing.assert_array_equal(a.data.friction_extra, b.data.friction_extra)
        np.testing.assert_array_equal(a.data.coulomb, columns.coulomb(p.data.qd))
