"""Li et al. 2023, UR5 kinematic calibration with joint stiffness: Tables 3 (stiffness), 4 and 5
through robodyn's replay of the paper's calibration (calibration.paper_replay), unchanged."""

from __future__ import annotations

from .report import Finding, Reproduction, Row, Table

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


def reproduce_calibration(quick: bool = False, plot: str | None = None) -> Reproduction:
    """Li et al. 2023 Tables 3-5 through robodyn.calibration.paper_replay (called as it is); with
    ``plot`` a PNG prefix, also the held-out error per pose of every method, PREFIX_no_load.png and
    PREFIX_loaded.png (the paper's Fig. 5 / Fig. 6 in kind)."""
    from robodyn.calibration.paper_replay import replay_with_plots

    report = replay_with_plots(plot, seed=0, holdout=50 if quick else 200)
    cmd = "robodyn calibrate replay --json" + (" --holdout 50" if quick else "")
    rep = Reproduction("calibration", "Simulated UR5 whose true geometry and joint stiffness are the paper's own "
                                      "Table 3 (combined row), a simulated AT960 tracker, 50 poses in the largest "
                                      "ISO 9283 cube, 20 loaded poses with the paper's 4.678 kg payload; the same "
                                      "three identification methods (robodyn.calibration.paper_replay, unchanged). "
                                      "The paper measured a real UR5; every robodyn row here is own-model (the "
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
        "and encoder errors). A replay on a plant with such effects (the heavy-arm plant) is not run here", cmd))
    rep.details = {"replay": report}
    return rep
