"""Signal processing for identification data: resampling, zero-phase filtering, differentiation,
robust LOESS, decimation, period averaging and removal of near-zero-velocity samples.

Every function is pure (arrays in, arrays out). :func:`process` chains them from a
:class:`ProcessingConfig`, and the config plus what each step measured are recorded in the result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.signal
from scipy.fft import irfft, next_fast_len, rfft


@dataclass
class SampledData:
    """Uniformly or irregularly sampled joint data. Arrays are (N, n); optional ones may be None."""

    t: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    qd: np.ndarray | None = None
    qdd: np.ndarray | None = None
    # Torque-side companions, filtered exactly like tau ("parallel filtering", Gautier): the friction
    # torque already subtracted from tau, and sgn(qd) for the Coulomb columns. A filtered torque with
    # a friction step is only comparable with a model whose friction step went through the same filter.
    tau_friction: np.ndarray | None = None
    coulomb: np.ndarray | None = None

    def __post_init__(self):
        self.t = np.asarray(self.t, float)
        self.q = np.asarray(self.q, float)
        self.tau = np.asarray(self.tau, float)
        if self.t.ndim != 1:
            raise ValueError(f"t: expected a 1-D time vector, got shape {self.t.shape}")
        N = self.t.shape[0]
        for name in ("q", "tau", "qd", "qdd", "tau_friction", "coulomb"):
            arr = getattr(self, name)
            if arr is None:
                continue
            arr = np.asarray(arr, float)
            setattr(self, name, arr)
            if arr.ndim != 2 or arr.shape[0] != N:
                raise ValueError(f"{name}: expected shape ({N}, joints) to match t, got {arr.shape}")
            if arr.shape[1] != self.q.shape[1]:
                raise ValueError(f"{name}: has {arr.shape[1]} joints but q has {self.q.shape[1]}")
            if not np.all(np.isfinite(arr)):
                row = int(np.argwhere(~np.isfinite(arr))[0][0])
                raise ValueError(f"{name}: NaN or infinite value at sample {row} (t={self.t[row]:.6g} s); "
                                 "drop or repair those rows before identification")
        if not np.all(np.isfinite(self.t)):
            raise ValueError("t: NaN or infinite timestamps")
        if N > 1 and np.any(np.diff(self.t) <= 0):
            k = int(np.argmax(np.diff(self.t) <= 0))
            raise ValueError(f"t: timestamps must strictly increase (sample {k + 1}: {self.t[k + 1]} after {self.t[k]})")

    @property
    def count(self) -> int:
        return int(self.t.shape[0])

    @property
    def dof(self) -> int:
        return int(self.q.shape[1])

    def select(self, mask: np.ndarray) -> "SampledData":
        pick = lambda a: None if a is None else a[mask]  # noqa: E731
        return SampledData(self.t[mask], self.q[mask], self.tau[mask], pick(self.qd), pick(self.qdd),
                           pick(self.tau_friction), pick(self.coulomb))


# --------------------------------------------------------------------------- sampling


def sampling_report(t: np.ndarray) -> dict:
    """Median period, jitter and gaps of a time vector."""
    dt = np.diff(np.asarray(t, float))
    if dt.size == 0:
        raise ValueError("t: need at least two samples")
    med = float(np.median(dt))
    return {"median_period": med, "rate_hz": 1.0 / med, "jitter_std": float(np.std(dt)),
            "jitter_relative": float(np.std(dt) / med), "max_period": float(dt.max()),
            "min_period": float(dt.min()), "gaps": int(np.sum(dt > 1.5 * med))}


def is_irregular(t: np.ndarray, tolerance: float = 0.01) -> bool:
    """True when periods jitter by more than ``tolerance`` (relative std) or there are gaps."""
    rep = sampling_report(t)
    return rep["jitter_relative"] > tolerance or rep["gaps"] > 0


def resample_uniform(data: SampledData, rate_hz: float | None = None) -> SampledData:
    """Resample onto a uniform grid (default: the median rate) by cubic interpolation of q
    and linear interpolation of torque and any given velocity/acceleration."""
    from scipy.interpolate import CubicSpline

    rate = rate_hz or sampling_report(data.t)["rate_hz"]
    t_new = data.t[0] + np.arange(int(np.floor((data.t[-1] - data.t[0]) * rate)) + 1) / rate
    q = CubicSpline(data.t, data.q, axis=0)(t_new)

    def lin(arr):
        if arr is None:
            return None
        return np.stack([np.interp(t_new, data.t, arr[:, j]) for j in range(arr.shape[1])], axis=1)

    return SampledData(t_new, q, lin(data.tau), lin(data.qd), lin(data.qdd))


# --------------------------------------------------------------------------- filtering


def lowpass(x: np.ndarray, cutoff_hz: float, rate_hz: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass (filtfilt) along axis 0."""
    nyquist = rate_hz / 2.0
    if not 0 < cutoff_hz < nyquist:
        raise ValueError(f"cutoff_hz: must be between 0 and the Nyquist frequency {nyquist:g} Hz, got {cutoff_hz}")
    sos = scipy.signal.butter(order, cutoff_hz / nyquist, output="sos")
    padlen = min(3 * (2 * len(sos) + 1), x.shape[0] - 1)
    return scipy.signal.sosfiltfilt(sos, x, axis=0, padlen=padlen)


def central_difference(x: np.ndarray, dt: float) -> np.ndarray:
    """dx/dt by central differences (one-sided at the two ends), seed 003."""
    if x.shape[0] < 3:
        raise ValueError(f"x: need at least 3 samples to differentiate, got {x.shape[0]}")
    out = np.empty_like(x)
    out[1:-1] = (x[2:] - x[:-2]) / (2.0 * dt)
    out[0] = (x[1] - x[0]) / dt
    out[-1] = (x[-1] - x[-2]) / dt
    return out


def second_difference(x: np.ndarray, dt: float) -> np.ndarray:
    """d2x/dt2 by the central second difference (copied outward at the two ends)."""
    if x.shape[0] < 3:
        raise ValueError(f"x: need at least 3 samples to differentiate, got {x.shape[0]}")
    out = np.empty_like(x)
    out[1:-1] = (x[2:] - 2.0 * x[1:-1] + x[:-2]) / (dt * dt)
    out[0] = out[1]
    out[-1] = out[-2]
    return out


def _convolve_same(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """'same'-size linear convolution along axis 0 with zero padding, by FFT."""
    N = x.shape[0]
    K = kernel.shape[0]
    L = next_fast_len(N + K - 1)
    fx = rfft(x, L, axis=0)
    fk = rfft(kernel, L)
    shape = (-1,) + (1,) * (x.ndim - 1)
    full = irfft(fx * fk.reshape(shape), L, axis=0)
    start = (K - 1) // 2
    return full[start:start + N]


def rloess(y: np.ndarray, span: float = 0.02, iterations: int = 5) -> np.ndarray:
    """Robust LOESS smoothing (seed 000: span 0.02 on acceleration and torque).

    Local quadratic regression with tricube weights over ``span`` (a fraction of the samples, or
    a sample count if > 1), then ``iterations`` robustness passes with bisquare weights on
    residuals scaled by 6 median absolute deviations (the classic MATLAB 'rloess'). For uniformly
    spaced samples every weighted local fit is a ratio of convolutions, so each pass costs a few
    FFTs instead of one least-squares problem per sample. Near the ends the window is truncated.
    """
    y = np.asarray(y, float)
    one_d = y.ndim == 1
    Y = y[:, None] if one_d else y
    N = Y.shape[0]
    width = int(np.ceil(span * N)) if span <= 1 else int(span)
    half = max(1, width // 2)
    if N < 5:
        raise ValueError(f"y: need at least 5 samples for LOESS, got {N}")
    k = np.arange(-half, half + 1, dtype=float)
    u = k / (half + 1)
    tricube = (1 - np.abs(u) ** 3) ** 3
    # kernels K_m(k) = tricube(k) * k^m; convolution flips k, so use (-k)^m for correlation
    kern = [tricube * (-k) ** m for m in range(5)]
    robust = np.ones_like(Y)
    fit = Y
    for it in range(iterations + 1):
        S = [_convolve_same(robust, kern[m]) for m in range(5)]
        T = [_convolve_same(robust * Y, kern[m]) for m in range(3)]
        # local quadratic about each sample: minimise sum w (y - b0 - b1 k - b2 k^2)^2, fit = b0
        A = np.stack([np.stack([S[0], S[1], S[2]], -1), np.stack([S[1], S[2], S[3]], -1),
                      np.stack([S[2], S[3], S[4]], -1)], -2)
        rhs = np.stack([T[0], T[1], T[2]], -1)
        scale = np.maximum(np.abs(A).max(axis=(-2, -1), keepdims=True), 1e-300)
        A = A / scale
        rhs = rhs / scale[..., 0]
        # regularise rank-deficient windows (all robust weights ~0) towards the local mean
        A = A + 1e-12 * np.eye(3)
        fit = np.linalg.solve(A, rhs[..., None])[..., 0, 0]
        if it == iterations:
            break
        resid = Y - fit
        mad = np.median(np.abs(resid), axis=0)
        mad = np.where(mad > 0, mad, np.finfo(float).tiny)
        r = resid / (6.0 * mad)
        robust = np.where(np.abs(r) < 1, (1 - r * r) ** 2, 0.0)
    return fit[:, 0] if one_d else fit


def decimate(x: np.ndarray, factor: int) -> np.ndarray:
    """Low-pass then keep every ``factor``-th sample; applied identically to every signal.

    The anti-alias filter is a zero-phase order-8 Butterworth at 0.8 of the new Nyquist frequency:
    maximally flat, so the slow excitation content keeps its amplitude (a Chebyshev filter's
    passband ripple would scale positions by ~1 %, which the nonlinear regressor cannot absorb).
    """
    if factor == 1:
        return x
    if int(factor) != factor or factor < 1:
        raise ValueError(f"decimation factor: must be a positive integer, got {factor}")
    factor = int(factor)
    if x.shape[0] < 30 * factor:
        raise ValueError(f"x: too short ({x.shape[0]} samples) to decimate by {factor}")
    sos = scipy.signal.butter(8, 0.8 / factor, output="sos")
    return scipy.signal.sosfiltfilt(sos, x, axis=0)[::factor]


def average_periods(data: SampledData, period_s: float) -> tuple[SampledData, int]:
    """Average whole periods of a periodic excitation sample by sample (noise / sqrt(periods)).

    Requires uniform sampling with an integer number of samples per period; trailing partial
    periods are dropped. Returns the one-period data and the number of periods averaged.
    """
    rate = sampling_report(data.t)["rate_hz"]
    per = period_s * rate
    if abs(per - round(per)) > 1e-6 * per:
        raise ValueError(f"period: {period_s} s is not a whole number of samples at {rate:g} Hz; resample first")
    per = int(round(per))
    periods = data.count // per
    if periods < 2:
        raise ValueError(f"period: the recording holds {data.count / per:.2f} periods; need at least 2 to average")
    cut = periods * per

    def avg(a):
        return None if a is None else a[:cut].reshape(periods, per, -1).mean(axis=0)

    return SampledData(data.t[:per], avg(data.q), avg(data.tau), avg(data.qd), avg(data.qdd),
                       avg(data.tau_friction), avg(data.coulomb)), periods


def moving_mask(qd: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """Samples where every joint moves faster than ``threshold`` (rad/s): the Coulomb
    model's discontinuity at zero velocity makes the others unreliable."""
    return np.all(np.abs(qd) > np.asarray(threshold, float), axis=1)


# --------------------------------------------------------------------------- pipeline


@dataclass
class ProcessingConfig:
    """Every step of :func:`process`, recorded verbatim in identification results."""

    resample: str = "auto"  # "auto" (when jitter > jitter_tolerance), "always", "never"
    jitter_tolerance: float = 0.01
    rate_hz: float | None = None  # resampling rate; default the median rate
    q_cutoff_hz: float | None = 10.0  # Butterworth filtfilt on q (None = off)
    tau_cutoff_hz: float | None = 10.0  # Butterworth filtfilt on tau
    filter_order: int = 4
    velocity: str = "auto"  # "auto" (measured if given, else differentiate), "differentiate", "measured"
    qd_cutoff_hz: float | None = None  # optional filtfilt on measured velocity
    rloess_span: float | None = None  # seed 000: 0.02 on qdd and tau (None = off)
    rloess_iterations: int = 5
    decimation: int = 1
    average_period_s: float | None = None
    trim_s: float = 0.0  # dropped at both ends after filtering (filter transients)
    min_velocity: float | None = None  # drop samples where some |qd| is below this (rad/s)

    def to_dict(self) -> dict:
        return asdict(self)


def process_windows(raw: SampledData, config: ProcessingConfig, window: int = 200_000,
                    margin: int | None = None, friction=None):
    """Yield processed pieces of a long recording, window by window, with bounded memory.

    Each window is processed with ``margin`` extra samples on both sides, which are then cut, so
    zero-phase filter transients never reach the kept samples (the margin spans many filter time
    constants). Falls back to one whole-recording pass when a step needs the whole signal
    (resampling irregular data, period averaging) or the recording is short.
    """
    N = raw.count
    f = max(1, int(config.decimation))
    if margin is None:
        rate = 1.0 / float(np.median(np.diff(raw.t[: min(N, 10000)])))
        cutoffs = [c for c in (config.q_cutoff_hz, config.tau_cutoff_hz, config.qd_cutoff_hz) if c]
        slowest = min(cutoffs + [rate / (2.5 * f)])  # the decimation filter sits at 0.4 of the new rate
        margin = int(np.ceil(20.0 * rate / slowest))  # ~20 periods of the lowest cut-off
    margin = int(np.ceil(margin / f) * f)
    window = int(max(window, 4 * margin) // f * f)
    needs_whole = (config.average_period_s is not None or config.resample == "always"
                   or (config.resample == "auto" and is_irregular(raw.t[: min(N, 100000)], config.jitter_tolerance)))
    if needs_whole or N <= window + 2 * margin:
        yield process(raw, config, friction)
        return
    cfg = ProcessingConfig(**{**config.to_dict(), "resample": "never", "trim_s": 0.0})
    if cfg.rloess_span is not None and cfg.rloess_span <= 1:
        cfg.rloess_span = float(np.ceil(cfg.rloess_span * N))  # keep the span relative to the whole recording
    trim = int(round(config.trim_s / float(np.median(np.diff(raw.t[:1000]))))) if config.trim_s else 0
    start = trim
    stop_all = N - trim
    while start < stop_all:
        stop = min(stop_all, start + window)
        lo = max(0, start - margin)
        hi = min(N, stop + margin)
        piece = SampledData(raw.t[lo:hi], raw.q[lo:hi], raw.tau[lo:hi],
                            None if raw.qd is None else raw.qd[lo:hi], None if raw.qdd is None else raw.qdd[lo:hi])
        done = process(piece, cfg, friction)
        d = done.data
        keep = (d.t >= raw.t[start] - 1e-12) & (d.t < (raw.t[stop] if stop < N else np.inf))
        yield ProcessedData(d.select(keep), cfg, done.steps)
        start = stop


@dataclass
class ProcessedData:
    data: SampledData  # with qd and qdd filled
    config: ProcessingConfig
    steps: list[dict] = field(default_factory=list)  # what each step did / measured


def process(raw: SampledData, config: ProcessingConfig = ProcessingConfig(), friction=None) -> ProcessedData:
    """Run the configured chain; returns uniformly sampled q, qd, qdd, tau and a step log.

    ``friction`` (a FrictionModel) is subtracted from the raw torque before any filtering; the
    subtracted torque and sgn(qd) are filtered alongside tau and returned with the data.
    """
    steps: list[dict] = []
    data = raw
    if data.count < 50:
        raise ValueError(f"recording: only {data.count} samples; need at least 50 (ideally several excitation "
                         "periods) to filter and differentiate")
    rep = sampling_report(data.t)
    steps.append({"step": "sampling", **rep})
    irregular = rep["jitter_relative"] > config.jitter_tolerance or rep["gaps"] > 0
    if config.resample == "always" or (config.resample == "auto" and irregular):
        data = resample_uniform(data, config.rate_hz)
        steps.append({"step": "resample", "rate_hz": sampling_report(data.t)["rate_hz"], "reason":
                      "irregular timestamps" if irregular else "requested", "samples": data.count})
    elif config.resample not in ("auto", "always", "never"):
        raise ValueError(f"resample: expected auto, always or never, got {config.resample!r}")
    rate = sampling_report(data.t)["rate_hz"]
    dt = 1.0 / rate
    q, tau, qd = data.q, data.tau, data.qd
    if config.q_cutoff_hz:
        q = lowpass(q, config.q_cutoff_hz, rate, config.filter_order)
        steps.append({"step": "lowpass_q", "cutoff_hz": config.q_cutoff_hz, "order": config.filter_order})
    use_measured = config.velocity == "measured" or (config.velocity == "auto" and qd is not None)
    if config.velocity not in ("auto", "measured", "differentiate"):
        raise ValueError(f"velocity: expected auto, measured or differentiate, got {config.velocity!r}")
    if use_measured:
        if qd is None:
            raise ValueError("velocity: 'measured' requested but the data has no qd columns")
        if config.qd_cutoff_hz:
            qd = lowpass(qd, config.qd_cutoff_hz, rate, config.filter_order)
        qdd = central_difference(qd, dt)
        steps.append({"step": "velocity", "source": "measured", "acceleration": "central difference of qd"})
    else:
        qd = central_difference(q, dt)
        qdd = second_difference(q, dt)
        steps.append({"step": "velocity", "source": "central difference of q",
                      "acceleration": "second central difference of q"})
    # torque-side signals: everything below happens to all of them alike
    torque_side = {"tau": tau, "coulomb": np.sign(qd)}
    if friction is not None:
        tau_f = friction.torque(qd)
        torque_side["tau"] = tau - tau_f  # seed 000 eq. 9, before any filter touches the friction step
        torque_side["tau_friction"] = tau_f
        steps.append({"step": "friction_compensation", "model": friction.kind,
                      "applied": "to the raw torque, before filtering"})
    if config.tau_cutoff_hz:
        torque_side = {k: lowpass(v, config.tau_cutoff_hz, rate, config.filter_order) for k, v in torque_side.items()}
        steps.append({"step": "lowpass_tau", "cutoff_hz": config.tau_cutoff_hz, "order": config.filter_order,
                      "parallel": sorted(k for k in torque_side if k != "tau")})
    if config.rloess_span:
        qdd = rloess(qdd, config.rloess_span, config.rloess_iterations)
        torque_side = {k: rloess(v, config.rloess_span, config.rloess_iterations) for k, v in torque_side.items()}
        steps.append({"step": "rloess", "span": config.rloess_span, "iterations": config.rloess_iterations,
                      "signals": ["qdd", "tau"]})
    t = data.t
    if config.trim_s > 0:
        k = int(round(config.trim_s * rate))
        if 2 * k >= t.shape[0] - 10:
            raise ValueError(f"trim_s: trimming {config.trim_s} s at both ends leaves too few samples")
        sl = slice(k, t.shape[0] - k)
        t, q, qd, qdd = t[sl], q[sl], qd[sl], qdd[sl]
        torque_side = {k2: v[sl] for k2, v in torque_side.items()}
        steps.append({"step": "trim", "seconds": config.trim_s})
    if config.decimation > 1:
        f = config.decimation
        q, qd, qdd = (decimate(a, f) for a in (q, qd, qdd))
        torque_side = {k: decimate(v, f) for k, v in torque_side.items()}
        t = t[::f][: q.shape[0]]
        steps.append({"step": "decimate", "factor": f, "rate_hz": rate / f})
    out = SampledData(t, q, torque_side["tau"], qd, qdd, torque_side.get("tau_friction"), torque_side["coulomb"])
    if config.average_period_s:
        out, periods = average_periods(out, config.average_period_s)
        steps.append({"step": "average_periods", "period_s": config.average_period_s, "periods": periods})
    if config.min_velocity:
        mask = moving_mask(out.qd, config.min_velocity)
        steps.append({"step": "drop_slow_samples", "min_velocity": config.min_velocity,
                      "dropped": int(np.sum(~mask)), "kept": int(np.sum(mask))})
        out = out.select(mask)
        if out.count < 10:
            raise ValueError(f"min_velocity: only {out.count} samples move faster than {config.min_velocity} rad/s "
                             "on every joint; lower the threshold or excite the robot more")
    return ProcessedData(out, config, steps)
