import numpy as np
import pytest

from robodyn.identification.friction import FRICTION_SWEEP_SPEEDS, extract_friction, fit_friction, model_from_fits, sweep_plan
from robodyn.robot.friction import FrictionModel
from robodyn.identification.signals import (SampledData, average_periods, central_difference, decimate, is_irregular,
                                            resample_uniform, rloess)
from robodyn.identification.processing import process, ProcessingConfig
from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.loader import load_model


def brute_force_rloess(y, span, iterations):
    """The definition, one least-squares problem per sample; where the bisquare leaves a window fewer
    than 3 samples the previous pass's fit stays."""
    N = len(y)
    half = max(1, int(np.ceil(span * N)) // 2)
    robust = np.ones(N)
    fit = np.zeros(N)
    for it in range(iterations + 1):
        new = np.zeros(N)
        for i in range(N):
            ks = np.arange(max(0, i - half), min(N, i + half + 1))
            k = (ks - i).astype(float)
            w = (1 - np.abs(k / (half + 1)) ** 3) ** 3 * robust[ks]
            if it > 0 and np.count_nonzero(robust[ks] > 0) < 3:
                new[i] = fit[i]
                continue
            A = np.vstack([np.ones_like(k), k, k**2]).T * np.sqrt(w)[:, None]
            new[i] = np.linalg.lstsq(A, y[ks] * np.sqrt(w), rcond=None)[0][0]
        fit = new
        if it == iterations:
            break
        r = (y - fit) / (6 * max(np.median(np.abs(y - fit)), np.finfo(float).tiny))
        robust = np.where(np.abs(r) < 1, (1 - r * r) ** 2, 0.0)
    return fit


def test_fft_rloess_equals_the_definition_and_rejects_outliers():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 4, 400)
    truth = np.sin(3 * x)
    y = truth + 0.05 * rng.normal(size=x.size)
    y[::37] += 2.0
    fast = rloess(y, 0.05, 5)
    assert np.max(np.abs(fast - brute_force_rloess(y, 0.05, 5))) < 1e-7
    assert np.max(np.abs(fast - truth)) < 0.1 < np.max(np.abs(y - truth))


def test_rloess_of_noise_free_and_quantised_signals_invents_no_spikes():
    # Without noise the residuals of the first pass are rounding or the local quadratic's own error;
    # scaled by their median they made outliers of most samples and left windows with too few to
    # fit (a real Panda-like log gave qdd spikes of 3.8e5 rad/s^2 at span 0.02)
    t = np.linspace(0, 3, 301)
    quadratic = 0.3 * t ** 2
    assert np.max(np.abs(rloess(quadratic, 0.02) - quadratic)) < 1e-8  # a local quadratic is exact
    sine = 10 * np.sin(2 * np.pi * 2 * t)
    fast = rloess(sine, 0.02)
    assert np.max(np.abs(fast - sine)) < 0.01 * 10
    assert np.max(np.abs(fast - brute_force_rloess(sine, 0.02, 5))) < 1e-7
    step = 0.01
    quantised = np.round(np.sin(2 * np.pi * 0.5 * t) / step) * step
    assert np.max(np.abs(rloess(quantised, 0.02) - quantised)) <= step


def test_irregular_timestamps_are_detected_and_resampled():
    rng = np.random.default_rng(1)
    t = np.cumsum(0.01 + rng.normal(scale=0.002, size=600))  # UR-like 10 ms with jitter
    q = np.sin(t)[:, None]
    data = SampledData(t, q, np.cos(t)[:, None])
    assert is_irregular(t)
    uniform = resample_uniform(data)
    assert not is_irregular(uniform.t)
    assert np.max(np.abs(uniform.q[:, 0] - np.sin(uniform.t))) < 1e-5
    steps = process(data, ProcessingConfig(q_cutoff_hz=None, tau_cutoff_hz=None)).steps
    assert any(s["step"] == "resample" and s["reason"] == "jittered timestamps" for s in steps)


def test_differences_decimation_and_period_averaging():
    t = np.arange(20000) / 1000.0
    q = np.sin(2 * np.pi * 0.5 * t)[:, None]
    qd = central_difference(q, 1e-3)
    assert np.max(np.abs(qd[1:-1, 0] - np.pi * np.cos(np.pi * t[1:-1]))) < 1e-5
    dec = decimate(q, 10)
    assert dec.shape[0] == 2000 and np.max(np.abs(dec[100:-100, 0] - q[::10][100:-100, 0])) < 1e-3
    rng = np.random.default_rng(2)
    noisy = SampledData(t, q, q + rng.normal(scale=0.1, size=q.shape))
    one, periods = average_periods(noisy, 2.0)
    assert periods == 10 and one.count == 2000
    assert np.std(one.tau[:, 0] - one.q[:, 0]) < 0.1 / np.sqrt(10) * 1.3
    with pytest.raises(ValueError, match="not a whole number of samples"):
        average_periods(noisy, 2.0005)


def test_friction_experiment_recovers_the_franka_stribeck_within_5_percent():
    model = load_model("panda")
    truth = FrictionModel.franka_stribeck()
    rng = np.random.default_rng(3)
    home = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])
    fits = []
    for joint in (0, 1):
        speeds, torques = [], []
        low, high = -0.15, 0.15
        # 0.005 .. 1.5 rad/s; 0.001 alone would take 10 minutes
        for sweep in sweep_plan(model, home, joint, low, high, FRICTION_SWEEP_SPEEDS[1::2]):
            v = sweep.speed
            _, q, qd, _, _ = sweep.sample(1000.0 if v > 0.05 else 100.0)
            tau = gravity_torques(model, q) + truth.torque(qd)
            tau += rng.normal(scale=0.005, size=tau.shape)
            point = extract_friction(q, qd, tau, joint, v, low, high)
            speeds.append(v)
            torques.append(point.torque)
        fits.append(fit_friction(np.array(speeds), np.array(torques), "stribeck", joint=joint))
    for fit in fits:
        j = fit.joint
        assert fit.converged
        for k in ("fc", "fs", "vs"):
            assert fit.params[k] == pytest.approx(truth.params[k][j], rel=0.05), (j, k)
    assembled = model_from_fits(fits, 7)
    assert assembled.kind == "stribeck" and assembled.params["fc"][1] == fits[1].params["fc"]


def test_sweeps_pass_the_validator_and_cross_the_window_at_constant_speed():
    from robodyn.limits import check_trajectory
    from robodyn.trajectory import trajectory_from_dict

    model = load_model("panda")
    home = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])
    for sweep in sweep_plan(model, home, 3, -1.8, -1.2, (0.05, 0.5, 1.0)):
        report = check_trajectory(model, sweep, current_q=sweep.evaluate(0.0)[0][0])
        assert report.ok, report.summary()
        t, q, qd, qdd, jerk = sweep.sample(1000.0)
        inside = (q[:, 3] > -1.8 + 1e-9) & (q[:, 3] < -1.2 - 1e-9)
        assert np.allclose(np.abs(qd[inside, 3]), sweep.speed)
        assert np.allclose(trajectory_from_dict(sweep.to_dict()).evaluate(t)[0], q)
    with pytest.raises(ValueError, match="exceed joint 4's velocity limit"):
        sweep_plan(model, home, 3, -1.8, -1.2, (3.0,))
    # at 2 rad/s, ramp and settling carry joint 4 past its upper limit: the plan refuses it, and the
    # daemon's validator, given the same sweep, agrees on the joint and the limit
    with pytest.raises(ValueError, match=r"2.0 rad/s .* runs joint 4 over .* outside its limits"):
        sweep_plan(model, home, 3, -1.8, -1.2, (2.0,))
    from robodyn.trajectory import SweepTrajectory

    fast = SweepTrajectory.within_limits(home, 3, -1.8, -1.2, 2.0, model.qdd_max[3], model.qddd_max[3], 0.5, settle=0.3)
    report = check_trajectory(model, fast, current_q=fast.evaluate(0.0)[0][0])
    assert not report.ok and report.violations[0].limit == "q_max" and report.violations[0].joint == "joint4"


def test_friction_models_and_bad_input():
    qd = np.linspace(-1, 1, 11)[:, None].repeat(2, axis=1)
    cv = FrictionModel("coulomb-viscous", {"fc": [1, 2], "fv": [0.5, 0], "fo": [0.1, 0]})
    assert np.allclose(cv.torque(qd)[-1], [1.6, 2.0])
    st = FrictionModel("stribeck", {"fc": [1, 1], "fs": [2, 2], "vs": [0.1, 0.1], "fv": [0, 0]})
    tiny = np.array([[1e-3, -1e-3]])
    assert np.all(np.abs(st.torque(tiny)) < 0.5)  # linear zone near standstill, continuous through 0
    sg = FrictionModel("sigmoid", {"fc": [1, 1], "fv": [0, 0], "fo": [0, 0]})
    assert np.allclose(sg.torque(np.array([[10.0, -10.0]])), [[1, -1]])
    assert FrictionModel.from_dict(st.to_dict()).params["fs"].tolist() == [2, 2]
    with pytest.raises(ValueError, match="unknown model"):
        FrictionModel("magic", {"fc": [1]})
    with pytest.raises(ValueError, match="at least 3 friction points"):
        fit_friction(np.array([0.1, 0.2]), np.array([1.0, 1.1]))


def test_windowed_processing_equals_whole_recording_processing():
    from robodyn.identification.processing import process_windows

    rng = np.random.default_rng(5)
    t = np.arange(30000) / 1000.0
    q = np.column_stack([np.sin(0.7 * t), np.cos(1.3 * t)]) + rng.normal(scale=1e-4, size=(t.size, 2))
    tau = np.column_stack([np.cos(0.7 * t), np.sin(1.3 * t)]) + rng.normal(scale=0.05, size=(t.size, 2))
    raw = SampledData(t, q, tau)
    cfg = ProcessingConfig(q_cutoff_hz=15, tau_cutoff_hz=15, decimation=5)
    whole = process(raw, cfg).data
    pieces = list(process_windows(raw, cfg, window=4000, margin=1500))
    assert len(pieces) > 3
    joined = SampledData(np.concatenate([p.data.t for p in pieces]), np.concatenate([p.data.q for p in pieces]),
                         np.concatenate([p.data.tau for p in pieces]), np.concatenate([p.data.qd for p in pieces]),
                         np.concatenate([p.data.qdd for p in pieces]))
    assert np.array_equal(joined.t, whole.t)
    inner = slice(50, -50)  # the recording's own ends are filtered the same way; compare away from them
    for name in ("q", "qd", "qdd", "tau"):
        a, b = getattr(joined, name)[inner], getattr(whole, name)[inner]
        assert np.max(np.abs(a - b)) < 1e-6 * np.max(np.abs(b)), name


def test_experiment_run_is_one_validated_sequence_and_extraction_finds_every_sweep():
    from robodyn.identification.friction import experiment_trajectory, points_from_run
    from robodyn.limits import check_trajectory
    from robodyn.trajectory import trajectory_from_dict

    model = load_model("panda")
    truth = FrictionModel.franka_stribeck()
    home = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])
    traj, spans = experiment_trajectory(model, home, 1, -0.2, 0.2, (0.02, 0.08, 0.3))
    assert [s[0] for s in spans] == [0.02, 0.08, 0.3]
    report = check_trajectory(model, traj, current_q=traj.evaluate(0.0)[0][0])
    assert report.ok, report.summary()
    again = trajectory_from_dict(traj.to_dict())  # the daemon stores the document in the recording
    t, q, qd, _, _ = again.sample(500.0)
    tau = gravity_torques(model, q) + truth.torque(qd)
    points = points_from_run(again, t, q, qd, tau)
    assert [p.speed for p in points] == [0.02, 0.08, 0.3]
    for p in points:
        assert p.torque == pytest.approx(truth.torque(np.full((1, 7), p.speed))[0, 1], rel=1e-4)


def test_other_friction_signals_keep_the_samples_and_are_checked_alone():
    """processed_cache.replace_friction_signals: the states and torque are the same arrays, the new Coulomb
    and Stribeck signals replace the old ones (None clears them), and a wrong shape or a NaN in a new
    signal is one line naming it."""
    import pytest

    from robodyn.identification.processed_cache import replace_friction_signals

    rng = np.random.default_rng(0)
    t = np.arange(50) * 0.01
    q, tau, qd = rng.normal(size=(50, 3)), rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    data = SampledData(t, q, tau, qd, qd, coulomb=np.sign(qd), friction_extra=np.ones((50, 3)))
    coulomb = np.tanh(qd / 0.1)
    other = replace_friction_signals(data, coulomb, None)
    assert all(getattr(other, k) is getattr(data, k) for k in ("t", "q", "tau", "qd", "qdd", "trajectory"))
    np.testing.assert_array_equal(other.coulomb, coulomb)
    assert other.friction_extra is None and data.friction_extra is not None  # the original is untouched
    with pytest.raises(ValueError, match=r"^coulomb: expected shape \(50, 3\) to match q, got \(49, 3\)$"):
        replace_friction_signals(data, coulomb[1:], None)
    bad = np.ones((50, 3))
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"^friction_extra: NaN or infinite value at sample 7 "):
        replace_friction_signals(data, coulomb, bad)
