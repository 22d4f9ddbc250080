"""Li et al. 2023, UR5 kinematic calibration with joint stiffness: Tables 3 (stiffness), 4 and 5
through robodyn's replay of the paper's calibration on the simulated UR5 (calibration.paper_replay;
part ``ur5``), and the same procedure on the heavy-arm plant, which the model does not describe
(calibration.heavy_arm_replay; part ``heavy``): Table 4's methods on held-out poses, Table 5's
compensation and its max-error reduction, the identified joint stiffness, and what keeps the
reduction from the paper's headline."""

from __future__ import annotations

from .report import Finding, Reproduction, Row, Table, verdict

# The paper's numbers as it prints them (mm; mean, max, min); Table 4's loaded 'geometric then
# stiffness' mean 0.060 is below its own min 0.348: a misprint, shown as printed.
PAPER_TABLE4 = {
    "no_load": {"nominal": ("2.280", "3.299"), "geometric": ("0.264", "0.520"), "combined": ("0.192", "0.453")},
    "loaded": {"nominal": ("2.668", "4.173"), "geometric": ("1.752", "3.261"),
               "geometric_then_stiffness": ("0.060", "0.934"), "combined": ("0.361", "0.615")},
}
PAPER_TABLE5 = {"no_load": {"before": ("1.831", "2.338"), "after": ("0.337", "0.572"), "reduction": "75.5 %"},
                "loaded": {"before": ("2.771", "4.478"), "after": ("0.399", "0.666"), "reduction": "85.1 %"}}
# Table 3, combined identification, joints 1-6 (joint 1 keeps the initial 50 000: the load has no
# moment about it)
PAPER_STIFFNESS = ("50 000", "18 764", "165 771", "115 648", "5 404", "4 319")
PAPER_ORIGIN = "real (the paper's UR5, Leica AT960 laser tracker)"
ORIGIN = ("own-model (simulated UR5 whose true geometry and stiffness are the paper's Table 3 and whose errors "
          "are exactly of the form the calibration model identifies: an inverse crime of robodyn's replay)")
NAMES = {"nominal": "nominal", "geometric": "geometric", "geometric_then_stiffness": "geometric-stiffness",
         "combined": "combined"}


def stiffness_cell(k: dict) -> tuple[object, str]:
    """(value, note) for one joint's identified stiffness. The data determine a stiffness only if its
    compliance is more than two standard errors from zero; otherwise the stiffness is reported as
    unidentifiable with the lower bound the data do support, never as the point value (which can be
    1e15 for a compliance that is zero within its noise)."""
    c, sd = k["compliance_rad_per_Nm"], k["compliance_std"]
    if not k["identified"]:
        return "not identified", "held at its prior (no load moment about this joint)"
    if sd is None or c <= 2 * sd:
        bound = "" if sd is None else f"; K > {1.0 / (c + 2 * sd):.0f} N.m/rad at 2 standard errors"
        return "unidentifiable", f"compliance {c:.3g} +- {sd if sd is not None else float('nan'):.2g} rad/N.m{bound}"
    return float(1.0 / c), f"+-2 standard errors: {1.0 / (c + 2 * sd):.0f}..{1.0 / (c - 2 * sd):.0f}"


CALIBRATION_PARTS = ("ur5", "heavy")


def reproduce_calibration(quick: bool = False, plot: str | None = None, part: str | None = None) -> Reproduction:
    """Li et al. 2023: Tables 3-5 through robodyn.calibration.paper_replay on the simulated UR5 (part
    "ur5"; with ``plot`` a PNG prefix, also the held-out error per pose of every method,
    PREFIX_no_load.png and PREFIX_loaded.png, the paper's Fig. 5 / Fig. 6 in kind) and the same
    procedure on the heavy-arm plant (part "heavy", robodyn.calibration.heavy_arm_replay); both
    unless ``part`` names one."""
    if part not in (None, "all") + CALIBRATION_PARTS:
        raise ValueError(f"part: expected one of {list(CALIBRATION_PARTS)}, got {part!r}")
    if plot and part == "heavy":
        raise ValueError("plot: only the part ur5 draws plots, not heavy")
    rep = Reproduction("calibration", "")
    if part in (None, "all", "ur5"):
        _ur5(rep, quick, plot)
    if part in (None, "all", "heavy"):
        heavy_arm_part(rep, quick)
    rep.setup = rep.setup.strip()
    return rep


def _ur5(rep: Reproduction, quick: bool, plot: str | None) -> None:
    from robodyn.calibration.paper_replay import replay_with_plots

    report = replay_with_plots(plot, seed=0, holdout=50 if quick else 200)
    cmd = "robodyn reproduce calibration --part ur5 --json" + (" --quick" if quick else "")
    rep.setup += ("Simulated UR5 whose true geometry and joint stiffness are the paper's own "
                  "Table 3 (combined row), a simulated AT960 tracker, 50 poses in the largest "
                  "ISO 9283 cube, 20 loaded poses with the paper's 4.678 kg payload; the same "
                  "three identification methods (robodyn.calibration.paper_replay, unchanged). "
                  "The paper measured a real UR5; every robodyn row of the UR5 tables is own-model (the "
                  "replay's simulated arm has only the errors the model identifies).")
    for cond, label in (("no_load", "no load"), ("loaded", "loaded")):
        rows = []
        for paper_key, (mean, mx) in PAPER_TABLE4[cond].items():
            ours = report["table4_mm"][cond]
            fit = ours["identification_poses_measured"][NAMES[paper_key]]
            held = ours["held_out_true"][NAMES[paper_key]]
            note = f"held-out true error {held['mean_mm']:.3f} / {held['max_mm']:.3f}"
            if paper_key == "geometric_then_stiffness":
                note += "; the paper's mean 0.060 is below its own min 0.348: a misprint"
            rows.append(Row(f"{NAMES[paper_key]} mean / max (mm), identification poses", f"{mean} / {mx}",
                            f"{fit['mean_mm']:.3f} / {fit['max_mm']:.3f}", cmd, ORIGIN, note, PAPER_ORIGIN))
        rep.tables.append(Table(f"Table 4, {label}: position error after calibration", rows))
    rows = []
    for cond, label in (("no_load", "no load"), ("loaded", "loaded")):
        t5, paper = report["table5_mm"][cond], PAPER_TABLE5[cond]
        for when in ("before", "after"):
            ours = t5["measured"][when]
            rows.append(Row(f"{label}, {when} compensation, mean / max (mm)", " / ".join(paper[when]),
                            f"{ours['mean_mm']:.3f} / {ours['max_mm']:.3f}", cmd, ORIGIN,
                            f"true (untracked) {t5['true'][when]['mean_mm']:.3f} / {t5['true'][when]['max_mm']:.3f}",
                            PAPER_ORIGIN))
        rows.append(Row(f"{label}, max-error reduction", paper["reduction"],
                        f"{100 * t5['measured']['max_reduction']:.1f} %", cmd, ORIGIN,
                        f"true {100 * t5['true']['max_reduction']:.1f} %; 1 - max after / max before at the five "
                        "ISO 9283 points", PAPER_ORIGIN))
    rep.tables.append(Table("Table 5 (the abstract's headline): compensation with the combined model at the five "
                            "ISO 9283 points, tracker-measured", rows))
    combined = report["table3"]["combined"]
    rows = []
    for k in combined["joint_stiffness"]:
        j = k["joint"]
        value, note = stiffness_cell(k)
        rows.append(Row(f"joint {j} stiffness K (N.m/rad), combined", PAPER_STIFFNESS[j - 1], value, cmd, ORIGIN,
                        f"simulated {report['scenario']['true_stiffness_Nm_per_rad'][j - 1]:.0f}; {note}",
                        PAPER_ORIGIN))
    rep.tables.append(Table("Table 3: joint stiffness of the combined identification (unidentifiable = compliance "
                            "within two standard errors of zero)", rows))
    unresolved = [r.quantity.split(" stiffness")[0] for r in rows if r.robodyn == "unidentifiable"]
    if unresolved:
        rep.findings.append(Finding(
            "Table 3 stiffness of " + ", ".join(unresolved), "not determined by the data",
            "The 20 loaded poses with one vertical load leave these compliances within two standard errors of zero "
            "(the point value of K is then arbitrary, up to 1e15): robodyn reports them as unidentifiable with the "
            "lower bound the data support", cmd))
    comb = report["table4_mm"]["no_load"]["identification_poses_measured"]["combined"]["mean_mm"]
    rep.findings.append(Finding(
        f"combined calibration, no load: 0.192 mm mean (robodyn {comb:.3f} mm)", "inverse crime in robodyn's replay",
        "The simulated UR5's errors are exactly of the form the model identifies (its true parameters are the "
        "paper's Table 3), so the residual falls to the simulated tracker's noise; this applies to every row of "
        "Tables 3-5 above. The real arm's 0.192 mm includes effects outside the 18-parameter model (link sag, gear "
        "and encoder errors). The same procedure on a plant with such effects: the heavy-arm tables (part heavy)",
        cmd))
    rep.details["replay"] = report


# --------------------------------------------------------------------------- part heavy

HEAVY_ORIGIN = ("plant (robodyn's simulated heavy arm, a six-axis arm of the 165 kg payload class; differs from the "
                "identifier's model: links "
                "bend under gravity, true masses up to 15 % off the model's with shifted centres of mass, joint 3 "
                "leans out of the arm plane; no DH parameter or joint spring of the model expresses these)")
HEAVY_ABLATION_REASON = ("ablation, not a reproduction: the paper's procedure on a simulated 165 kg-class arm, not "
                         "on the paper's UR5")
HEAVY_TABLE_PREFIX = "Ablation (a simulated 165 kg-class arm, not the paper's UR5): "
HEAVY_OWN_MODEL = ("own-model (the heavy-arm plant with bending, mass errors and the joint-3 lean switched off: its "
                   "errors are of the model's own form, the inverse crime of the UR5 replay)")
PAPER_KEY = {"nominal": "nominal", "geometric": "geometric", "geometric-stiffness": "geometric_then_stiffness",
             "combined": "combined"}  # robodyn's method name -> the paper's Table 4 row


def _mm(stats: dict) -> str:
    return f"{stats['mean_mm']:.3f} / {stats['max_mm']:.3f}"


def heavy_arm_part(rep: Reproduction, quick: bool) -> None:
    """Append the heavy-arm tables and findings to ``rep``."""
    from robodyn.calibration.heavy_arm_replay import HELD_OUT_POSES, PLANT_DIFFERENCES, run_heavy_arm_replay

    holdout = 30 if quick else HELD_OUT_POSES
    report = run_heavy_arm_replay(seed=0, holdout=holdout, ablation=not quick)
    cmd = "robodyn reproduce calibration --part heavy --json" + (" --quick" if quick else "")
    sc = report["scenario"]
    rep.setup += (f" Heavy-arm plant: the paper's procedure (one target ball read by an AT960-class tracker in the "
                  f"arm's base frame, {sc['noload_poses']} poses in an ISO 9283 test cube of edge "
                  f"{sc['cube']['edge']:.3f} m, the D-optimal {sc['loaded_poses']} of them with a "
                  f"{sc['load']['mass_kg']:g} kg test weight, its three methods, the combined model's compensation "
                  f"at the five ISO 9283 points) on heavy6, {holdout} held-out poses in the same cube; "
                  f"{PLANT_DIFFERENCES}.")
    rows = []
    for cond, label in (("no_load", "no load"), ("loaded", "loaded")):
        t = report["table4_mm"][cond]
        for m, paper_key in PAPER_KEY.items():
            paper = PAPER_TABLE4[cond].get(paper_key)
            rows.append(Row(f"{label}, {m}: held-out mean / max (mm)", None if paper is None else " / ".join(paper),
                            _mm(t["held_out_true"][m]), cmd, HEAVY_ORIGIN,
                            f"tracker-read {_mm(t['held_out_measured'][m])}; identification poses "
                            f"{_mm(t['identification_poses_measured'][m])}; the paper's figure is its UR5's, "
                            "on its identification poses", PAPER_ORIGIN if paper else ""))
    rep.tables.append(Table(HEAVY_TABLE_PREFIX + "heavy-arm plant, Table 4's methods: position error on held-out poses (true)", rows,
                            own_model_allowed=False))
    rows = []
    for cond, label in (("no_load", "no load"), ("loaded", "loaded")):
        t5, paper = report["table5_mm"][cond], PAPER_TABLE5[cond]
        for when in ("before", "after"):
            rows.append(Row(f"{label}, {when} compensation, mean / max (mm)", " / ".join(paper[when]),
                            _mm(t5["true"][when]), cmd, HEAVY_ORIGIN, f"tracker-read {_mm(t5['measured'][when])}",
                            PAPER_ORIGIN))
        rows.append(Row(f"{label}, max-error reduction", paper["reduction"], f"{100 * t5['true']['max_reduction']:.1f} %",
                        cmd, HEAVY_ORIGIN, f"tracker-read {100 * t5['measured']['max_reduction']:.1f} %; 1 - max after / "
                                     "max before at the five ISO 9283 points", PAPER_ORIGIN))
    rep.tables.append(Table(HEAVY_TABLE_PREFIX + "heavy-arm plant, Table 5: compensation with the combined model at the five ISO 9283 "
                            "points (true error)", rows, own_model_allowed=False))
    rows = []
    for k in report["joint_stiffness"]:
        j = k["joint"]
        value, note = stiffness_cell(k)
        rows.append(Row(f"heavy arm, joint {j} stiffness K (N.m/rad), combined", None, value, cmd, HEAVY_ORIGIN,
                        f"plant's joint spring {sc['true_stiffness_Nm_per_rad'][j - 1]:.3g}; {note}"))
    rep.tables.append(Table(HEAVY_TABLE_PREFIX + "heavy-arm plant: joint stiffness of the combined identification (unidentifiable = "
                            "compliance within two standard errors of zero)", rows, own_model_allowed=False))
    rows = []
    for cond, label in (("no_load", "no load"), ("loaded", "loaded")):
        sag = report["gravity_sag_held_out_mm"][cond]
        rb = report["combined_residual_vs_bending"][cond]
        rows.append(Row(f"{label}: gravity sag of the ball at the held-out poses, max: total / joint springs / link "
                        "bending (mm)", None, f"{sag['total']['max_mm']:.3f} / {sag['joint_springs']['max_mm']:.3f} / "
                        f"{sag['bending']['max_mm']:.3f}", cmd, HEAVY_ORIGIN,
                        f"rms {sag['total']['rms_mm']:.3f} / {sag['joint_springs']['rms_mm']:.3f} / "
                        f"{sag['bending']['rms_mm']:.3f}; combined residual rms {rb['residual_rms_mm']:.3f}, its "
                        f"correlation with the bending over the poses {rb['correlation']:.2f}"))
    for name, ab in report.get("ablation", {}).items():
        h, t5 = ab["combined_held_out_true"], ab["table5_true"]
        last = name == list(report["ablation"])[-1]
        rows.append(Row(f"{name}: combined held-out max no load / loaded (mm); Table 5 max reduction no load / "
                        "loaded", None, f"{h['no_load']['max_mm']:.3f} / {h['loaded']['max_mm']:.3f}; "
                        f"{100 * t5['no_load']['max_reduction']:.1f} % / {100 * t5['loaded']['max_reduction']:.1f} %",
                        cmd, HEAVY_OWN_MODEL if last else HEAVY_ORIGIN,
                        "same poses and tracker noise"))
    rep.tables.append(Table(HEAVY_TABLE_PREFIX + "heavy-arm plant: what the combined model leaves (the plant's sag split into its parts; "
                            "the fit rerun with the plant's unmodelled effects switched off one after another)", rows))
    _heavy_findings(rep, report, cmd)
    rep.details["heavy_arm_replay"] = report


def _heavy_findings(rep: Reproduction, report: dict, cmd: str) -> None:
    """The headline on the plant, and what the residual is made of: the plant's sag split into its
    parts, the fit beside the same fit on the plant with its unmodelled effects switched off."""
    t5 = report["table5_mm"]
    got = {c: 100 * t5[c]["true"]["max_reduction"] for c in ("no_load", "loaded")}
    missed = [c for c in got if got[c] < float(PAPER_TABLE5[c]["reduction"].split()[0])]
    held = report["table4_mm"]["no_load"]["held_out_true"]["combined"]
    text = (f"max-error reduction by compensation 75.5 % unloaded / 85.1 % loaded, combined calibration 0.192 mm "
            f"mean (robodyn on the heavy-arm plant: {got['no_load']:.1f} % / {got['loaded']:.1f} %, "
            f"{held['mean_mm']:.3f} mm held out)")
    sag = report["gravity_sag_held_out_mm"]["no_load"]
    why = (f"Held out, gravity moves the ball by up to {sag['total']['max_mm']:.2f} mm, "
           f"{sag['bending']['max_mm']:.2f} mm of it link bending (no joint rotation)")
    ab = report.get("ablation")
    if ab:
        names = list(ab)
        plant, own = ab[names[0]], ab[names[-1]]
        why += (f"; the combined fit leaves a held-out max of {plant['combined_held_out_true']['no_load']['max_mm']:.3f}"
                f" / {plant['combined_held_out_true']['loaded']['max_mm']:.3f} mm (no load / loaded) on the plant "
                f"and {own['combined_held_out_true']['no_load']['max_mm']:.3f} / "
                f"{own['combined_held_out_true']['loaded']['max_mm']:.3f} mm with bending, mass errors and the "
                f"joint-3 lean switched off (errors of the model's own form: tracker noise is what remains), "
                f"compensation reductions {100 * plant['table5_true']['no_load']['max_reduction']:.1f} / "
                f"{100 * plant['table5_true']['loaded']['max_reduction']:.1f} % against "
                f"{100 * own['table5_true']['no_load']['max_reduction']:.1f} / "
                f"{100 * own['table5_true']['loaded']['max_reduction']:.1f} %. ")
        why += ("In the paper's cube the plant's unmodelled effects stay near the tracker's noise after the combined "
                "fit, so they do not explain the paper's residual on its real UR5; effects this plant lacks (gear "
                "and encoder errors, temperature, the tracker's set-up) are not measured here" if not missed else
                "The effect whose removal closes most of the gap is what keeps the reduction from the headline")
    else:
        why += "; the ablation of the plant's effects is not run with --quick"
    # another robot class than the paper's UR5: whichever way the numbers come out, an ablation
    rep.findings.append(Finding(text, HEAVY_ABLATION_REASON + (", below the paper's figures" if missed else
                                                               ", at or above the paper's figures"),
                                why, cmd, verdict(not missed, on_papers_robot_and_setup=False)))
    unresolved = [f"joint {k['joint']}" for k in report["joint_stiffness"]
                  if stiffness_cell(k)[0] == "unidentifiable"]
    if unresolved:
        rep.findings.append(Finding(
            "heavy-arm stiffness of " + ", ".join(unresolved), "not determined by the data",
            f"The plant's data leave {'these compliances' if len(unresolved) > 1 else 'this compliance'} within two "
            "standard errors of zero: reported as "
            "unidentifiable with the lower bound the data support, not as a number", cmd,
            verdict(False, on_papers_robot_and_setup=False)))
