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
    # the Stribeck excess column signal sgn(qd) exp(-(qd/vs)^2) of friction identified with the
    # dynamics (friction.FrictionColumns), filtered like tau for a fit
    friction_extra: np.ndarray | None = None
    # the trajectory the robot was commanded (a daemon recording carries it): its bandwidth bounds
    # the automatic cut-off from below
    trajectory: dict | None = None

    def __post_init__(self):
        self.t = np.asarray(self.t, float)
        self.q = np.asarray(self.q, float)
        self.tau = np.asarray(self.tau, float)
        if self.t.ndim != 1:
            raise ValueError(f"t: expected a 1-D time vector, got shape {self.t.shape}")
        N = self.t.shape[0]
        for name in ("q", "tau", "qd", "qdd", "tau_friction", "coulomb", "friction_extra"):
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
                           pick(self.tau_friction), pick(self.coulomb), pick(self.friction_extra), self.trajectory)


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
    """dx/dt by central differences (one-sided at the two ends), Mamedov & Mikhel 2020."""
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
    """Robust LOESS smoothing (Ni et al. 2024: span 0.02 on acceleration and torque).

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
                       avg(data.tau_friction), avg(data.coulomb), avg(data.friction_extra), data.trajectory), periods


def moving_mask(qd: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """Samples where every joint moves faster than ``threshold`` (rad/s): the Coulomb
    model's discontinuity at zero velocity makes the others unreliable."""
    return np.all(np.abs(qd) > np.asarray(threshold, float), axis=1)


# --------------------------------------------------------------------------- segments and cut-off


def split_at_gaps(t: np.ndarray, gap_periods: float | None) -> list[slice]:
    """Index slices of the stretches between gaps: a step longer than ``gap_periods`` median
    periods ends one stretch and starts the next. Nothing is interpolated across a gap."""
    t = np.asarray(t, float)
    if gap_periods is None or t.shape[0] < 3:
        return [slice(0, t.shape[0])]
    dt = np.diff(t)
    cuts = np.flatnonzero(dt > gap_periods * np.median(dt)) + 1
    edges = np.concatenate([[0], cuts, [t.shape[0]]])
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


# The automatic cut-off (documented in docs/identification-methods.md). A joint's acceleration
# spectrum falls with frequency while the motion dominates it and rises once the measurement noise
# does (velocity noise enters the acceleration with f^2, position noise with f^4): its minimum, in
# third-octave bands above the velocity's peak, marks where noise takes over. The cut-off is
# CUTOFF_PER_CROSSOVER times that frequency for the fastest joint, never below the same multiple
# of the commanded trajectory's bandwidth (when the recording carries it), and within
# [MIN_CUTOFF_HZ, 0.4 x Nyquist].
CUTOFF_PER_CROSSOVER = 2.0
MIN_CUTOFF_HZ = 0.5
SPECTRUM_WINDOW_S = 8.0  # Welch segment length: ~0.1 Hz resolution for slow excitations
BANDS_PER_OCTAVE = 3


def noise_crossover(v: np.ndarray, rate_hz: float) -> dict:
    """Per joint, the frequency where the acceleration spectrum of a uniformly sampled velocity
    signal (N, n) is lowest above the velocity's spectral peak: motion below, noise above."""
    N = v.shape[0]
    # the longest window the stretch allows (resolution near the slow excitation's harmonics) with
    # a low-sidelobe window, so the excitation's peak does not leak into the bands above it
    nperseg = int(min(N, max(256, 2 ** np.ceil(np.log2(SPECTRUM_WINDOW_S * rate_hz)))))
    f, P = scipy.signal.welch(v - v.mean(axis=0), fs=rate_hz, window="blackmanharris", nperseg=nperseg, axis=0)
    A = P * (2.0 * np.pi * f[:, None]) ** 2
    crossover, peaks = [], []
    for j in range(v.shape[1]):
        ip = 1 + int(np.argmax(P[1:, j]))
        peaks.append(float(f[ip]))
        if not P[ip, j] > 100.0 * np.median(P[1:, j]):
            crossover.append(None)  # a joint that does not move (a flat, noise-only spectrum) says nothing
            continue
        lo = f[ip] * 2 ** (1.0 / BANDS_PER_OCTAVE)
        edges = lo * 2 ** (np.arange(0, 64) / BANDS_PER_OCTAVE)
        edges = edges[edges <= f[-1]]
        bands = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if np.any((f >= a) & (f < b))]
        if not bands:
            crossover.append(float(f[-1]))
            continue
        level = np.array([A[(f >= a) & (f < b), j].mean() for a, b in bands])
        k = int(np.argmin(level))
        crossover.append(float(np.sqrt(bands[k][0] * bands[k][1])))
    moving = [c for c in crossover if c is not None]
    return {"crossover_hz": crossover, "peak_hz": peaks, "resolution_hz": float(f[1] - f[0]),
            "bandwidth_hz": max(moving) if moving else None}


def trajectory_bandwidth(trajectory: dict, rate_hz: float = 1000.0) -> float | None:
    """Highest frequency holding 99.9 % of the commanded velocity's energy (noise-free)."""
    from robodyn.trajectory import trajectory_from_dict

    try:
        traj = trajectory_from_dict(trajectory)
    except (ValueError, KeyError, TypeError):
        return None
    t = np.arange(0.0, traj.duration, 1.0 / rate_hz)
    if t.size < 16:
        return None
    qd = traj.evaluate(t)[1]
    S = np.abs(np.fft.rfft(qd - qd.mean(axis=0), axis=0)) ** 2
    f = np.fft.rfftfreq(t.size, 1.0 / rate_hz)
    total = S.sum(axis=1)
    if not total.sum() > 0:
        return None
    c = np.cumsum(total) / total.sum()
    return float(f[min(np.searchsorted(c, 0.999), f.size - 1)])


def choose_cutoff(datasets, config: "ProcessingConfig") -> dict:
    """The cut-off for ``config.cutoff_hz = "auto"``, from the data (and their trajectories)."""
    knee_all, details = [], []
    traj_bw = None
    for d in datasets:
        if d.trajectory is not None:
            bw = trajectory_bandwidth(d.trajectory)
            traj_bw = bw if traj_bw is None or (bw is not None and bw > traj_bw) else traj_bw
        pieces = split_at_gaps(d.t, config.gap_periods)
        longest = max(pieces, key=lambda s: s.stop - s.start)
        seg = d.select(longest)
        if seg.count < 64:
            continue
        seg = seg.select(slice(0, min(seg.count, 1 << 20)))
        rate = 1.0 / float(np.median(np.diff(seg.t)))
        if is_irregular(seg.t, config.jitter_tolerance):
            seg = resample_uniform(seg, rate)
        dt = 1.0 / rate
        measured = seg.qd is not None and config.velocity != "differentiate"
        v = seg.qd if measured else central_difference(seg.q, dt)
        bw = noise_crossover(v, rate)
        details.append({"velocity": "measured" if measured else "central difference of q", "rate_hz": rate,
                        "crossover_hz": bw["crossover_hz"], "resolution_hz": bw["resolution_hz"]})
        if bw["bandwidth_hz"] is not None:
            knee_all.append((bw["bandwidth_hz"], rate))
    if not knee_all and traj_bw is None:
        return {"cutoff_hz": 10.0, "source": "default", "reason": "no joint moved enough to measure a bandwidth",
                "spectra": details}
    bandwidth = max([k for k, _ in knee_all] + [traj_bw or 0.0])
    source = "trajectory" if traj_bw is not None and traj_bw >= max([k for k, _ in knee_all], default=0.0) \
        else "spectrum"
    nyquist = min((r for _, r in knee_all), default=2.0 * 1000.0) / 2.0
    cutoff = float(np.clip(CUTOFF_PER_CROSSOVER * bandwidth, MIN_CUTOFF_HZ, 0.4 * nyquist))
    return {"cutoff_hz": round(cutoff, 3), "source": source, "bandwidth_hz": bandwidth,
            "trajectory_bandwidth_hz": traj_bw,
            "rule": f"{CUTOFF_PER_CROSSOVER:g} x the frequency where the fastest joint's acceleration spectrum "
                    "turns from motion to noise (its minimum in third-octave bands)"
                    + ("; not below that multiple of the commanded trajectory's bandwidth" if traj_bw is not None
                       else ""),
            "spectra": details}


# --------------------------------------------------------------------------- pipeline

SAME = "same"  # a per-signal cut-off that follows ``cutoff_hz``


@dataclass
class ProcessingConfig:
    """Every step of :func:`process`, recorded verbatim in identification results.

    One zero-phase low-pass (``cutoff_hz``) is applied to q, to a measured qd and to tau, and every
    torque-side companion (the Coulomb sign columns, a subtracted friction torque) goes through the
    same filter as tau. ``"auto"`` chooses it from the data (:func:`choose_cutoff`); the value
    chosen is what a result stores, so validation and prediction use the same number. The
    per-signal overrides (``q_cutoff_hz``, ``qd_cutoff_hz``, ``tau_cutoff_hz``) exist to replay a
    published recipe; ``None`` turns one filter off.
    """

    resample: str = "auto"  # "auto" (when jitter > jitter_tolerance), "always", "never"
    jitter_tolerance: float = 0.01
    rate_hz: float | None = None  # resampling rate; default the median rate
    cutoff_hz: float | str | None = "auto"  # Hz, "auto", or None (no low-pass)
    q_cutoff_hz: float | str | None = SAME
    qd_cutoff_hz: float | str | None = SAME  # applies to a measured velocity
    tau_cutoff_hz: float | str | None = SAME
    filter_order: int = 4
    velocity: str = "auto"  # "auto" (measured if given, else differentiate), "differentiate", "measured"
    rloess_span: float | None = None  # Ni et al. 2024: 0.02 on qdd and tau (None = off)
    rloess_iterations: int = 5
    decimation: int = 1
    average_period_s: float | None = None
    trim_s: float = 0.0  # dropped at both ends of the recording after filtering (filter transients)
    min_velocity: float | None = None  # drop samples where some |qd| is below this (rad/s)
    gap_periods: float | None = 3.0  # a step longer than this many median periods splits the recording
    cutoff_choice: dict | None = None  # how an "auto" cut-off was chosen (filled in by resolve)

    def __post_init__(self):
        if self.resample not in ("auto", "always", "never"):
            raise ValueError(f"resample: expected auto, always or never, got {self.resample!r}")
        if self.velocity not in ("auto", "measured", "differentiate"):
            raise ValueError(f"velocity: expected auto, measured or differentiate, got {self.velocity!r}")
        for name in ("cutoff_hz", "q_cutoff_hz", "qd_cutoff_hz", "tau_cutoff_hz"):
            v = getattr(self, name)
            if v == 0:
                setattr(self, name, None)
            elif isinstance(v, str):
                if v != ("auto" if name == "cutoff_hz" else SAME):
                    raise ValueError(f"{name}: expected a frequency in Hz, None or "
                                     f"{'auto' if name == 'cutoff_hz' else SAME!r}, got {v!r}")
            elif v is not None and not (isinstance(v, (int, float)) and v > 0):
                raise ValueError(f"{name}: must be > 0 Hz, got {v!r}")
        if self.gap_periods is not None and not self.gap_periods > 1:
            raise ValueError(f"gap_periods: a gap is longer than one period; expected > 1, got {self.gap_periods}")
        if int(self.decimation) != self.decimation or self.decimation < 1:
            raise ValueError(f"decimation: must be a positive integer, got {self.decimation}")

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def resolved(self) -> bool:
        return self.cutoff_hz != "auto" or all(getattr(self, k) != SAME for k in ("q_cutoff_hz", "qd_cutoff_hz",
                                                                                  "tau_cutoff_hz"))

    def cutoff(self, signal: str) -> float | None:
        """The effective cut-off of 'q', 'qd' or 'tau'."""
        own = getattr(self, f"{signal}_cutoff_hz")
        value = self.cutoff_hz if own == SAME else own
        if value == "auto":
            raise ValueError("cutoff_hz: 'auto' must be resolved from the data first (resolve_processing)")
        return value

    def slowest_cutoff(self, rate_hz: float) -> float | None:
        """The lowest low-pass in the chain at this rate: it sets how long edge transients last."""
        cuts = [c for c in (self.cutoff("q"), self.cutoff("qd"), self.cutoff("tau")) if c]
        if self.decimation > 1:
            cuts.append(DECIMATION_PASSBAND * rate_hz / self.decimation)
        return min(cuts) if cuts else None


def resolve_processing(config: ProcessingConfig, datasets) -> ProcessingConfig:
    """The config with an "auto" cut-off replaced by the number chosen from ``datasets`` (and how)."""
    if config.resolved:
        return config
    choice = choose_cutoff(datasets, config)
    out = ProcessingConfig(**{**config.to_dict(), "cutoff_hz": choice["cutoff_hz"], "cutoff_choice": choice})
    return out


DECIMATION_PASSBAND = 0.4  # of the decimated rate: the anti-alias filter sits at 0.8 x its Nyquist


@dataclass
class ProcessedData:
    data: SampledData  # with qd and qdd filled; pieces of several stretches are concatenated
    config: ProcessingConfig
    steps: list[dict] = field(default_factory=list)  # what each step did / measured
    # the (first, last) processed time of each stretch in ``data``: measured samples inside these
    # spans are comparable with predictions (the grid may be a resampled one)
    spans: list[tuple[float, float]] = field(default_factory=list)


def _filter_pad(rate: float, cutoff: float | None, n: int) -> int:
    """Samples of odd extension at each end of a zero-phase pass: a few time constants of the
    filter, so its start-up transient falls in the padding, not on the data."""
    if not cutoff:
        return 0
    return int(min(n - 1, max(27, np.ceil(3.0 * rate / cutoff))))


def _lowpass_padded(x: np.ndarray, cutoff: float, rate: float, order: int) -> np.ndarray:
    nyquist = rate / 2.0
    if not 0 < cutoff < nyquist:
        raise ValueError(f"cutoff_hz: must be between 0 and the Nyquist frequency {nyquist:g} Hz, got {cutoff}")
    sos = scipy.signal.butter(order, cutoff / nyquist, output="sos")
    return scipy.signal.sosfiltfilt(sos, x, axis=0, padlen=_filter_pad(rate, cutoff, x.shape[0]))


def _grid(t0: float, t1: float, rate: float, anchor: float) -> np.ndarray:
    """The uniform grid points anchor + k / rate inside [t0, t1]."""
    k0 = int(np.ceil((t0 - anchor) * rate - 1e-9))
    k1 = int(np.floor((t1 - anchor) * rate + 1e-9))
    return anchor + np.arange(k0, k1 + 1) / rate


def _resample_to(data: SampledData, t_new: np.ndarray) -> SampledData:
    """Cubic interpolation of q, linear of torque and any measured velocity, onto ``t_new``."""
    from scipy.interpolate import CubicSpline

    q = CubicSpline(data.t, data.q, axis=0)(t_new)

    def lin(arr):
        if arr is None:
            return None
        return np.stack([np.interp(t_new, data.t, arr[:, j]) for j in range(arr.shape[1])], axis=1)

    return SampledData(t_new, q, lin(data.tau), lin(data.qd), None, trajectory=data.trajectory)


def _filter_piece(piece: SampledData, cfg: ProcessingConfig, rate: float, friction, purpose: str,
                  steps: list | None, columns=None) -> SampledData:
    """Low-pass, differentiate and (for a fit) filter the torque side of one uniform piece, at full rate."""
    dt = 1.0 / rate
    order = cfg.filter_order
    q, tau, qd = piece.q, piece.tau, piece.qd
    log = steps.append if steps is not None else (lambda item: None)
    if cfg.cutoff("q"):
        q = _lowpass_padded(q, cfg.cutoff("q"), rate, order)
        log({"step": "lowpass_q", "cutoff_hz": cfg.cutoff("q"), "order": order})
    use_measured = cfg.velocity == "measured" or (cfg.velocity == "auto" and qd is not None)
    if use_measured:
        if qd is None:
            raise ValueError("velocity: 'measured' requested but the data has no qd columns")
        if cfg.cutoff("qd"):
            qd = _lowpass_padded(qd, cfg.cutoff("qd"), rate, order)
        qdd = central_difference(qd, dt)
        log({"step": "velocity", "source": "measured", "lowpass_hz": cfg.cutoff("qd"),
             "acceleration": "central difference of the filtered measured velocity"})
    else:
        qd = central_difference(q, dt)
        qdd = second_difference(q, dt)
        log({"step": "velocity", "source": "central difference of the filtered q",
             "acceleration": "second central difference of the filtered q"})
    # The torque side. For a fit, everything below happens to all of its signals alike (parallel
    # filtering): the measured torque less a known friction model (Ni et al. 2024 eq. 9, subtracted before
    # any filter touches the friction step), that friction torque, and sgn(qd) for the Coulomb
    # columns. For a prediction the model's friction stays sharp, as in the measured torque it is
    # compared with; the measured torque is filtered only for the 'against filtered torque' figures.
    fit = purpose == "fit"
    torque_side = {"tau": tau}
    tau_friction = None
    if friction is not None:
        tau_friction = friction.torque(qd)
        if fit:
            torque_side["tau"] = tau - tau_friction
            torque_side["tau_friction"] = tau_friction
            log({"step": "friction_compensation", "model": friction.kind,
                 "applied": "to the raw torque, before filtering"})
    coulomb = np.sign(qd) if columns is None else columns.coulomb(qd)
    extra = None if columns is None else columns.extra(qd)
    if fit:
        torque_side["coulomb"] = coulomb
        if extra is not None:
            torque_side["friction_extra"] = extra
    if cfg.cutoff("tau"):
        torque_side = {k: _lowpass_padded(v, cfg.cutoff("tau"), rate, order) for k, v in torque_side.items()}
        log({"step": "lowpass_tau", "cutoff_hz": cfg.cutoff("tau"), "order": order,
             "parallel": sorted(k for k in torque_side if k != "tau")})
    if cfg.decimation > 1:
        # the anti-alias filter belongs to the processing (prediction sees it too); only keeping
        # every f-th sample is a fit-time step
        f = cfg.decimation
        if q.shape[0] < 30 * f:
            raise ValueError(f"decimation: a stretch of {q.shape[0]} samples is too short to decimate by {f}")
        sos = scipy.signal.butter(8, 2.0 * DECIMATION_PASSBAND / f, output="sos")
        pad = _filter_pad(rate, DECIMATION_PASSBAND * rate / f, q.shape[0])
        smooth = lambda a: scipy.signal.sosfiltfilt(sos, a, axis=0, padlen=pad)  # noqa: E731
        q, qd, qdd = smooth(q), smooth(qd), smooth(qdd)
        torque_side = {k: smooth(v) for k, v in torque_side.items()}
        log({"step": "antialias", "cutoff_hz": DECIMATION_PASSBAND * rate / f, "order": 8, "for_decimation": f})
    if cfg.rloess_span:
        qdd = rloess(qdd, cfg.rloess_span, cfg.rloess_iterations)
        torque_side = {k: rloess(v, cfg.rloess_span, cfg.rloess_iterations) for k, v in torque_side.items()}
        log({"step": "rloess", "span": cfg.rloess_span, "iterations": cfg.rloess_iterations,
             "signals": ["qdd"] + sorted(torque_side)})
    if fit:
        tau_friction = torque_side.get("tau_friction")
        coulomb, extra = torque_side["coulomb"], torque_side.get("friction_extra")
    else:  # of the final velocity, sharp
        tau_friction = None if friction is None else friction.torque(qd)
        coulomb = None if columns is None else columns.coulomb(qd)
        extra = None if columns is None else columns.extra(qd)
    return SampledData(piece.t, q, torque_side["tau"], qd, qdd, tau_friction, coulomb, extra, piece.trajectory)


EDGE_PERIODS = 0.5  # of the lowest cut-off, dropped at each edge a gap creates (filter transients)


def _edge_samples(cfg: ProcessingConfig, rate: float) -> int:
    """Samples dropped at a stretch's edges created by a gap: half a period of the lowest cut-off
    (with the odd-extension padding of the zero-phase filters, the transient is mostly gone by
    then; measured on a real 1 kHz Franka log: held-out error 1.764 keeping every sample, 1.752
    dropping half a period, 1.752 dropping a whole one)."""
    cut = cfg.slowest_cutoff(rate)
    return int(np.ceil(EDGE_PERIODS * rate / cut)) if cut else 0


def process_windows(raw: SampledData, config: ProcessingConfig, window: int = 200_000,
                    margin: int | None = None, friction=None, purpose: str = "fit", columns=None):
    """Yield processed pieces of a recording, stretch by stretch and window by window.

    The recording is split at gaps longer than ``config.gap_periods`` periods (never interpolated
    across); a stretch with jittered timestamps is resampled onto a uniform grid of its own. Long
    stretches are processed in windows with ``margin`` extra samples on both sides, which are cut
    again, so zero-phase filter transients never reach the kept samples and memory stays bounded.
    ``purpose`` "fit" adds the fit-only steps (decimation, slow-sample removal, period averaging);
    "predict" keeps every sample at the full rate, with a sharp friction model. ``friction`` (a
    FrictionModel) is subtracted before filtering; ``columns`` (friction.FrictionColumns) says which
    friction signals the regressor's friction columns carry.

    The first piece's ``steps`` describe the whole recording (sampling, stretches, every step).
    """
    if purpose not in ("fit", "predict"):
        raise ValueError(f"purpose: expected fit or predict, got {purpose!r}")
    if raw.count < 50:
        raise ValueError(f"recording: only {raw.count} samples; need at least 50 (ideally several excitation "
                         "periods) to filter and differentiate")
    cfg = resolve_processing(config, [raw])
    rep = sampling_report(raw.t)
    rate = cfg.rate_hz or rep["rate_hz"]
    steps: list[dict] = [{"step": "sampling", **rep}]
    if cfg.cutoff_choice is not None and config.cutoff_hz == "auto":
        steps.append({"step": "cutoff", **cfg.cutoff_choice})
    if cfg.average_period_s is not None and purpose == "fit":
        yield _process_whole_periodic(raw, cfg, friction, steps, columns)
        return
    stretches = split_at_gaps(raw.t, cfg.gap_periods)
    edge = _edge_samples(cfg, rate)
    trim = int(round(cfg.trim_s * rate)) if cfg.trim_s else 0
    min_len = max(50, 4 * edge + 10)
    kept, dropped = [], []
    for k, sl in enumerate(stretches):
        seg = raw.select(sl)
        if seg.count < min_len:
            dropped.append({"t": float(seg.t[0]), "samples": seg.count})
            continue
        kept.append(seg)
    if len(stretches) > 1 or dropped:
        dt = np.diff(raw.t)
        gaps = [{"t": float(raw.t[s.start - 1]), "seconds": float(dt[s.start - 1])} for s in stretches[1:]]
        steps.append({"step": "split_at_gaps", "gap_periods": cfg.gap_periods, "stretches": len(stretches),
                      "gaps": gaps[:50], "gap_count": len(gaps), "dropped_short": dropped,
                      "edge_samples_dropped": edge, "reason": "never interpolated across a gap"})
    if not kept:
        raise ValueError(f"recording: every stretch between gaps is shorter than {min_len} samples; nothing to process")
    irregular = rep["jitter_relative"] > cfg.jitter_tolerance
    resample = cfg.resample == "always" or (cfg.resample == "auto" and irregular)
    if resample:
        steps.append({"step": "resample", "rate_hz": rate, "within": "each stretch",
                      "reason": "jittered timestamps" if irregular else "requested"})
    if margin is None:
        cut = cfg.slowest_cutoff(rate)
        margin = int(np.ceil(20.0 * rate / cut)) if cut else 64  # ~20 periods of the lowest cut-off
    f = cfg.decimation if purpose == "fit" else 1
    margin = int(np.ceil(margin / f) * f)
    window = int(max(window, 4 * margin) // f * f)
    first = True
    for si, seg in enumerate(kept):
        lead = edge if (seg.t[0] > raw.t[0]) else trim
        tail = edge if (seg.t[-1] < raw.t[-1]) else trim
        anchor = float(seg.t[0])
        t_lo, t_hi = seg.t[0] + lead / rate, seg.t[-1] - tail / rate
        if t_hi <= t_lo:
            continue
        # window boundaries in time, on the stretch's grid
        bounds = list(np.arange(t_lo, t_hi, window / rate)) + [t_hi + 0.5 / rate]
        for b0, b1 in zip(bounds[:-1], bounds[1:]):
            lo = max(0, int(np.searchsorted(seg.t, b0 - margin / rate)) - 1)
            hi = min(seg.count, int(np.searchsorted(seg.t, b1 + margin / rate)) + 1)
            piece = seg.select(slice(lo, hi))
            if resample:
                piece = _resample_to(piece, _grid(piece.t[0], piece.t[-1], rate, anchor))
            piece_steps = [] if first else None
            done = _filter_piece(piece, cfg, rate, friction, purpose, piece_steps, columns)
            keep = (done.t >= b0 - 1e-9) & (done.t < b1 - 1e-9)
            if f > 1:
                idx = np.flatnonzero(keep)
                keep = idx[np.round((done.t[idx] - anchor) * rate).astype(np.int64) % f == 0]
            out = done.select(keep)
            if out.count == 0:
                continue
            fit_steps = []
            if purpose == "fit" and cfg.min_velocity:
                mask = moving_mask(out.qd, cfg.min_velocity)
                fit_steps.append({"step": "drop_slow_samples", "min_velocity": cfg.min_velocity})
                out = out.select(mask)
            if first:
                steps += piece_steps
                if trim:
                    steps.append({"step": "trim", "seconds": cfg.trim_s})
                if f > 1:
                    steps.append({"step": "decimate", "factor": f, "rate_hz": rate / f})
                steps += fit_steps
                first = False
            yield ProcessedData(out, cfg, steps, [(float(b0), float(min(b1, t_hi)))] if out.count else [])


def _process_whole_periodic(raw: SampledData, cfg: ProcessingConfig, friction, steps: list,
                            columns=None) -> ProcessedData:
    """Period averaging needs one uninterrupted, uniformly sampled recording."""
    if len(split_at_gaps(raw.t, cfg.gap_periods)) > 1:
        raise ValueError("average_period_s: the recording has gaps; periods can only be averaged over an "
                         "uninterrupted recording")
    rep = sampling_report(raw.t)
    rate = cfg.rate_hz or rep["rate_hz"]
    data = raw
    if cfg.resample == "always" or (cfg.resample == "auto" and rep["jitter_relative"] > cfg.jitter_tolerance):
        data = _resample_to(raw, _grid(raw.t[0], raw.t[-1], rate, float(raw.t[0])))
        steps.append({"step": "resample", "rate_hz": rate})
    piece_steps: list = []
    out = _filter_piece(data, cfg, rate, friction, "fit", piece_steps, columns)
    steps += piece_steps
    if cfg.decimation > 1:
        out = out.select(slice(0, None, cfg.decimation))
        steps.append({"step": "decimate", "factor": cfg.decimation, "rate_hz": rate / cfg.decimation})
    out, periods = average_periods(out, cfg.average_period_s)
    steps.append({"step": "average_periods", "period_s": cfg.average_period_s, "periods": periods})
    if cfg.min_velocity:
        mask = moving_mask(out.qd, cfg.min_velocity)
        steps.append({"step": "drop_slow_samples", "min_velocity": cfg.min_velocity,
                      "dropped": int(np.sum(~mask)), "kept": int(np.sum(mask))})
        out = out.select(mask)
    return ProcessedData(out, cfg, steps, [(float(out.t[0]), float(out.t[-1]))])


def process(raw: SampledData, config: ProcessingConfig = ProcessingConfig(), friction=None,
            purpose: str = "fit", columns=None) -> ProcessedData:
    """The whole recording processed (all stretches concatenated); see :func:`process_windows`.

    ``friction`` (a FrictionModel) is subtracted from the raw torque before any filtering; the
    subtracted torque and sgn(qd) are filtered alongside tau and returned with the data.
    """
    pieces = list(process_windows(raw, config, friction=friction, purpose=purpose, columns=columns))
    if not pieces:
        raise ValueError("recording: no samples left after processing")
    if len(pieces) == 1:
        return pieces[0]
    cat = lambda name: (None if getattr(pieces[0].data, name) is None  # noqa: E731
                        else np.concatenate([getattr(p.data, name) for p in pieces]))
    data = SampledData(cat("t"), cat("q"), cat("tau"), cat("qd"), cat("qdd"), cat("tau_friction"), cat("coulomb"),
                       cat("friction_extra"), raw.trajectory)
    steps = pieces[0].steps
    if purpose == "fit" and pieces[0].config.min_velocity:
        for st in steps:
            if st["step"] == "drop_slow_samples":
                st["kept"] = data.count
    return ProcessedData(data, pieces[0].config, steps, [s for p in pieces for s in p.spans])
