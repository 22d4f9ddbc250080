"""The leave-one-robot-out choice between variants of a default: the variant picked for an arm is
the one that does best on the OTHER arms, whatever it does on the arm itself."""

from __future__ import annotations

import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realdata"
sys.path.insert(0, str(BENCH))

import loro_choice  # noqa: E402


def rows(scores: dict) -> list[dict]:
    """One split per arm: plain 1, default exp(score) per variant (so the arm score is the score)."""
    return [{"arm": arm, "split": "time", "plain": 1.0, "default": {v: math.exp(x) for v, x in by.items()}}
            for arm, by in scores.items()]


def test_each_arm_gets_the_variant_the_others_prefer():
    cur, new = loro_choice.CURRENT, "other"
    table = loro_choice.leave_one_robot_out(rows({
        "a": {cur: -0.1, new: -0.5},  # the new variant much better here ...
        "b": {cur: -0.3, new: -0.2},  # ... and a little worse on the two others
        "c": {cur: -0.3, new: -0.2},
    }), [cur, new])
    chosen = {r["arm_left_out"]: r["chosen_on_the_others"] for r in table}
    # without a: b and c prefer the current one; without b: a and c average -0.2 vs -0.35 -> new
    assert chosen == {"a": cur, "b": new, "c": new}
    by = {r["arm_left_out"]: r for r in table}
    assert by["a"]["score_on_the_arm_left_out"] == -0.1 and by["a"]["current_default_on_it"] == -0.1
    assert by["b"]["score_on_the_arm_left_out"] == -0.2 and by["b"]["current_default_on_it"] == -0.3
    assert by["b"]["mean_log_ratio_on_the_others"] == {cur: -0.2, new: -0.35}


def test_an_arms_score_is_the_mean_log_ratio_over_its_splits():
    cur = loro_choice.CURRENT
    split_rows = [{"arm": "a", "split": "s1", "plain": 2.0, "default": {cur: 1.0}},
                  {"arm": "a", "split": "s2", "plain": 1.0, "default": {cur: 4.0}},
                  {"arm": "b", "split": "s1", "plain": 1.0, "default": {cur: 1.0}}]
    table = loro_choice.leave_one_robot_out(split_rows, [cur])
    a = next(r for r in table if r["arm_left_out"] == "a")
    assert a["current_default_on_it"] == round((math.log(0.5) + math.log(4.0)) / 2, 4)
