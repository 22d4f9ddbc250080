"""bench/realdata/loro.py's rows for the three logs the defaults were first checked on (Panda, UR10e,
TX40): listed with their splits, left out on request, loaded by bench/peers/run.py's load_log (here
replaced by a synthetic two-link log), the loaded split and couplings reaching every fit, and a log
not at hand reported as one skipped line. No real data is needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realdata"
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402
import loro  # noqa: E402

KNOWN = {k.name: k for k in loro.KNOWN_LOGS}


def test_the_three_known_logs_are_listed_after_the_corpus_with_their_splits(capsys):
    assert loro.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    corpus_lines = [f"{a.name}: {', '.join(s.label for s in a.splits)}" for a in corpus.ARMS]
    assert lines == corpus_lines + ["panda: time", "ur10e: cross-run", "tx40: time"]

    assert loro.main(["--list", "--corpus-only"]) == 0
    assert capsys.readouterr().out.splitlines() == corpus_lines
    # --corpus-only wins over an --arm naming a known log
    assert loro.main(["--list", "--corpus-only", "--arm", "tx40", "--arm", corpus.ARMS[0].name]) == 0
    assert capsys.readouterr().out.splitlines() == corpus_lines[:1]


def test_an_unknown_arm_is_refused_in_one_line_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exc:
        loro.main(["--list", "--arm", "nosuch"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--arm: unknown ['nosuch']" in err and "'tx40'" in err


def _synthetic_log():
    from robodyn.identification.signals import SampledData
    from robodyn.robot.loader import load_model

    model = load_model("twolink")
    t = np.arange(400) / 100.0
    q = np.column_stack([0.5 * np.sin(2 * np.pi * 0.3 * t), 0.4 * np.sin(2 * np.pi * 0.7 * t + 1.0)])
    tau = np.column_stack([np.cos(t), np.sin(t)])
    fit, held = loro.split_run(SampledData(t, q, tau))
    return {"model": model, "fit": fit, "held": held, "couplings": ((0.0, 1.0),), "setup": "arm",
            "split": "time: first 60 % -> last 40 %", "source": "synthetic two-link log of this test"}


def test_a_known_log_is_read_by_the_peers_loader_and_its_couplings_reach_every_fit(monkeypatch, tmp_path):
    log = _synthetic_log()
    loaded, fits, plains = [], [], []

    def load_log(name, args, scratch):
        loaded.append((name, args.panda_log, args.ur10e_log))
        return log

    def identify(model, fit, held, config, select=False):
        fits.append((fit, held, config, select))
        out = {"rmse": [0.5, 0.5], "rmse_sum": 1.0, "cutoff_hz": 5.0, "warnings": []}
        return {**out, "chosen": {"standard_error": 0.1}} if select else out

    def plain(model, fit, held, cutoff_hz=loro.PLAIN_CUTOFF_HZ, motor_couplings=()):
        plains.append((fit, held, motor_couplings))
        return {"rmse": [1.0, 1.0], "rmse_sum": 2.0}

    monkeypatch.setattr(loro._peers_run(), "load_log", load_log)
    monkeypatch.setattr(loro, "_identify_and_validate", identify)
    monkeypatch.setattr(loro, "plain_script", plain)
    out = tmp_path / "loro.json"
    assert loro.main(["--arm", "tx40", "--panda-log", str(tmp_path / "p"), "--out", str(out)]) == 0
    assert loaded == [("tx40", tmp_path / "p", None)]
    (row,) = json.loads(out.read_text())["arms"]
    assert row["arm"] == "tx40" and row["maker"] == KNOWN["tx40"].maker and row["defaults_first_checked_on"] is True
    assert row["source"] == log["source"] and row["dof"] == 2 and "skipped" not in row
    (split,) = row["splits"]
    assert split["kind"] == "time" and split["split"] == log["split"]
    assert (split["fit_samples"], split["held_samples"]) == (log["fit"].count, log["held"].count)
    for column in ("plain", "default", "default_cutoff_10hz", "default_without_rotor_inertia", "selected", "ceiling",
                   "ceiling_plain"):
        assert "error" not in split[column], column
    assert split["default"]["vs_plain"] == 0.5 and split["selected"]["within_one_fold_standard_error"] is True

    # the untimed first default fit, then default, cut-off 10 Hz, without rotor inertia, --select,
    # the default and --select timed again in turn (TIMING_RUNS in all), the ceiling: each with the
    # log's coupling
    assert fits[0][2] == fits[1][2] and fits[0][3] is False  # the untimed one is the default
    fits = fits[1:]
    again = 2 * (loro.TIMING_RUNS - 1)
    assert [c.motor_couplings for _, _, c, _ in fits] == [((0.0, 1.0),)] * (5 + again)
    assert [c.processing.cutoff_hz == 10.0 for _, _, c, _ in fits] == [False, True] + [False] * (3 + again)
    assert [c.rotor_inertia for _, _, c, _ in fits] == [True, True, False] + [True] * (2 + again)
    assert [s for *_, s in fits] == [False, False, False, True] + [False, True] * (loro.TIMING_RUNS - 1) + [False]
    assert all(f is log["fit"] and h is log["held"] for f, h, _, _ in fits[:-1])
    assert fits[-1][0] is log["held"] and fits[-1][1] is log["held"]  # the ceiling fits the held-out part
    for column in ("default", "selected"):  # the medians of the runs, each run listed
        runs = split[column]["runs"]
        assert len(runs) == loro.TIMING_RUNS
        assert split[column]["seconds"] == sorted(r["seconds"] for r in runs)[loro.TIMING_RUNS // 2]
        assert split[column]["cpu_seconds"] == sorted(r["cpu_seconds"] for r in runs)[loro.TIMING_RUNS // 2]
    fastest = {c: {f: min(r[f] for r in split[c]["runs"]) for f in ("seconds", "cpu_seconds")}
               for c in ("default", "selected")}
    for key, field in (("time_vs_default_fastest", "seconds"), ("cpu_time_vs_default_fastest", "cpu_seconds")):
        assert split["selected"][key] == loro._ratio(fastest["selected"][field], fastest["default"][field])
    # the fastest run of each, from runs whose fastest are not their first (made-up seconds)
    made_up = {"selected": {"runs": [{"seconds": 1.6, "cpu_seconds": 2.2}, {"seconds": 1.2, "cpu_seconds": 1.9},
                                     {"seconds": 1.4, "cpu_seconds": 1.7}]},
               "default": {"runs": [{"seconds": 0.9, "cpu_seconds": 1.1}, {"seconds": 0.5, "cpu_seconds": 0.8},
                                    {"seconds": 0.6, "cpu_seconds": 0.68}]}}
    assert loro._fastest_ratio(made_up["selected"], made_up["default"], "seconds") == 2.4
    assert loro._fastest_ratio(made_up["selected"], made_up["default"], "cpu_seconds") == 2.5
    assert loro._fastest_ratio({"seconds": 3.0}, {"seconds": 1.0}, "seconds") == 3.0  # timed once
    # the plain script and its ceiling, both with the coupling
    assert [(f is log["fit"], h is log["held"], c) for f, h, c in plains] == [(True, True, ((0.0, 1.0),)),
                                                                               (False, True, ((0.0, 1.0),))]


def test_corpus_only_leaves_the_known_logs_unread(monkeypatch, tmp_path):
    read = []
    monkeypatch.setattr(loro, "evaluate_arm", lambda arm, cache: {"arm": arm.name})
    monkeypatch.setattr(loro, "evaluate_known_log", lambda log, *a: read.append(log.name) or {"arm": log.name})
    out = tmp_path / "loro.json"
    assert loro.main(["--corpus-only", "--out", str(out)]) == 0
    assert [a["arm"] for a in json.loads(out.read_text())["arms"]] == [a.name for a in corpus.ARMS]
    assert read == []
    assert loro.main(["--out", str(out)]) == 0
    assert [a["arm"] for a in json.loads(out.read_text())["arms"]] == [a.name for a in corpus.ARMS] + list(KNOWN)
    assert read == list(KNOWN)


@pytest.mark.parametrize("name", ["panda", "ur10e"])
def test_a_missing_log_is_one_skipped_line_not_an_exception(monkeypatch, tmp_path, name):
    peers = loro._peers_run()
    monkeypatch.setattr(peers, "PANDA_MIRROR", tmp_path / "no_panda_mirror")
    monkeypatch.setattr(peers, "UR10E_MIRROR", tmp_path / "no_ur10e_mirror")
    row = loro.evaluate_known_log(KNOWN[name])
    assert "splits" not in row and row["arm"] == name
    assert "\n" not in row["skipped"] and f"--{name}-log" in row["skipped"]

    # a folder given that holds no log: also one line (the reader's own message)
    empty = tmp_path / "empty"
    empty.mkdir()
    row = loro.evaluate_known_log(KNOWN[name], **{f"{name}_log": empty})
    assert "splits" not in row and row["skipped"] and "\n" not in row["skipped"]

    # a mirror that is there but is no git directory: the copy fails, one line
    broken = tmp_path / "broken_mirror"
    broken.mkdir()
    monkeypatch.setattr(peers, "PANDA_MIRROR", broken)
    if name == "panda":
        row = loro.evaluate_known_log(KNOWN[name])
        assert "splits" not in row and row["skipped"].startswith("CalledProcessError") and "\n" not in row["skipped"]

    # through the command: the JSON is written, the row skipped
    out = tmp_path / "loro.json"
    monkeypatch.setattr(peers, "PANDA_MIRROR", tmp_path / "no_panda_mirror")
    assert loro.main(["--arm", name, "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["arms"]
    assert row["skipped"].startswith("ValueError") and f"--{name}-log" in row["skipped"]
