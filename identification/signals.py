"""Signal processing for identification data: resampling, zero-phase filtering, differentiation,
robust LOESS, decimation, period averaging and removal of near-zero-velocity samples.

Every function is pure (arrays in, arrays out). :func:`.processing.process` chains them from a
:class:`.processing.ProcessingConfig`, and the config plus what each step measured are recorded in
the result. :func:`choose_cutoff` reads a ProcessingConfig (duck-typed: this module sits below it)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.signal
from scipy.fft import irfft, next_fast_len, rfft

from .mapped_pages import release_rows_before


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
            row = first_nonfinite_row(arr, CHUNK_SAMPLES)
            if row is not None:
                raise ValueError(f"{name}: NaN or infinite value at sample {row} (t={self.t[row]:.6g} s); "
                                 "drop or repair those rows before identification")
        if first_nonfinite_row(self.t, CHUNK_SAMPLES) is not None:
            raise ValueError("t: NaN or infinite timestamps")
        for s, dt in _intervals(self.t, CHUNK_SAMPLES):
            if np.any(dt <= 0):
                k = s + int(np.argmax(dt <= 0))
                raise ValueError(f"t: timestamps must strictly increase (sample {k + 1}: {self.t[k + 1]} "
                                 f"after {self.t[k]})")

    @property
    def count(self) -> int:
        return int(self.t.shape[0])

    @property
    def dof(self) -> int:
        return int(self.q.shape[1])

    def select(self, mask) -> "SampledData":
        """The samples picked by a boolean mask, a slice or indices. Picking in order (a mask, a
        forward slice, increasing indices) from checked data keeps it valid, so it is not checked
        again: each check reads the whole recording."""
        pick = lambda a: None if a is None else a[mask]  # noqa: E731
        names = ("t", "q", "tau", "qd", "qdd", "tau_friction", "coulomb", "friction_extra")
        fields = [pick(getattr(self, k)) for k in names] + [self.trajectory]
        ordered = isinstance(mask, np.ndarray) and mask.ndim == 1 and (
            mask.dtype == bool or bool(np.all(mask[1:] > mask[:-1])))
        if not (ordered or (isinstance(mask, slice) and (mask.step or 1) > 0)):
            return SampledData(*fields)
        out = object.__new__(SampledData)
        out.__dict__.update(zip(names + ("trajectory",), fields))
        return out


# --------------------------------------------------------------------------- sampling

# Samples per pass over a long recording: checks and interval statistics run chunk by chunk, so a day
# at 1 kHz (86.4 M samples) never needs a whole-log temporary (0.7 GB for each float array).
CHUNK_SAMPLES = 1 << 20


def _intervals(t: np.ndarray, chunk: int = CHUNK_SAMPLES):
    """np.diff(t) in consecutive pieces of at most ``chunk`` intervals (bounded memory)."""
    for s in range(0, t.shape[0] - 1, chunk):
        yield s, np.diff(t[s:min(t.shape[0], s + chunk + 1)])
        release_rows_before((t,), s + chunk)  # a mapped log's pages read here: not kept resident


def first_nonfinite_row(arr: np.ndarray, chunk: int = CHUNK_SAMPLES) -> int | None:
    """The first row of ``arr`` holding NaN or an infinity, or None, read chunk by chunk."""
    rows = max(1, chunk // max(1, int(np.prod(arr.shape[1:]))))
    for s in range(0, arr.shape[0], rows):
        bad = ~np.isfinite(arr[s:s + rows])
        if bad.any():
            return s + int(np.argwhere(bad)[0][0])
        release_rows_before((arr,), s + rows)  # a mapped log's pages read here: not kept resident
    return None


def _order_keys(x: np.ndarray) -> np.ndarray:
    """Unsigned 64-bit keys that sort as the (non-NaN) float64 values do: the sign bit set for
    positive numbers, every bit flipped for negative ones."""
    bits = np.ascontiguousarray(x, np.float64).view(np.uint64)
    return np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))


RADIX_BITS = 16  # bits of the key resolved per pass of the selection (a 64k-bin histogram)


def _kth_interval(t: np.ndarray, k: int, chunk: int = CHUNK_SAMPLES) -> float:
    """The k-th smallest (0-based) of the intervals np.diff(t), exactly, in bounded memory: a radix
    selection on the intervals' order keys, 16 bits per pass over the time vector (at most four),
    ending early with a partition of the candidates once they fit in one chunk."""
    below = 0  # intervals whose key is below the candidate prefix
    prefix, known = 0, 0  # the top ``known`` bits of the k-th key
    while known < 64:
        shift = 64 - known - RADIX_BITS
        counts = np.zeros(1 << RADIX_BITS, np.int64)
        for _, dt in _intervals(t, chunk):
            key = _order_keys(dt)
            if known:
                key = key[(key >> np.uint64(64 - known)) == np.uint64(prefix)]
            counts += np.bincount(((key >> np.uint64(shift)) & np.uint64((1 << RADIX_BITS) - 1)).astype(np.intp),
                                  minlength=1 << RADIX_BITS)
        cum = np.cumsum(counts)
        b = int(np.searchsorted(cum, k - below, side="right"))
        below += int(cum[b - 1]) if b else 0
        prefix, known = (prefix << RADIX_BITS) | b, known + RADIX_BITS
        if known < 64 and counts[b] <= chunk:
            # few enough candidates left to hold: their exact order by one partition
            pick = [dt[(_order_keys(dt) >> np.uint64(64 - known)) == np.uint64(prefix)]
                    for _, dt in _intervals(t, chunk)]
            return float(np.partition(np.concatenate(pick), k - below)[k - below])
    bits = prefix & ~(1 << 63) if prefix >> 63 else ~prefix & ((1 << 64) - 1)  # the key back to the float
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def median_interval(t: np.ndarray, chunk: int = CHUNK_SAMPLES) -> float:
    """np.median(np.diff(t)), exactly (the same float), without a whole-log copy of the intervals."""
    t = np.asarray(t, float)
    n = t.shape[0] - 1
    if n < 1:
        raise ValueError("t: need at least two samples")
    if n <= chunk:
        return float(np.median(np.diff(t)))
    if n % 2:
        return _kth_interval(t, n // 2, chunk)
    low = _kth_interval(t, n // 2 - 1, chunk)
    # the upper middle interval: the same value when it repeats, else the next larger one
    at_most = sum(int(np.count_nonzero(dt <= low)) for _, dt in _intervals(t, chunk))
    high = low if at_most > n // 2 else min(float(dt[dt > low].min()) for _, dt in _intervals(t, chunk)
                                            if np.any(dt > low))
    return float(np.mean(np.array([low, high])))


def sampling_report(t: np.ndarray, chunk: int = CHUNK_SAMPLES) -> dict:
    """Median period, jitter and gaps of a time vector, computed chunk by chunk (bounded memory;
    the median is exact, the standard deviation equal to np.std up to rounding)."""
    t = np.asarray(t, float)
    med = median_interval(t, chunk)  # raises for fewer than two samples
    n = t.shape[0] - 1
    sums, lo, hi = [], np.inf, -np.inf
    for _, dt in _intervals(t, chunk):
        sums.append(float(np.add.reduce(dt)))
        lo, hi = min(lo, float(dt.min())), max(hi, float(dt.max()))
    mean = math.fsum(sums) / n
    squares, gaps = [], 0
    for _, dt in _intervals(t, chunk):
        x = dt - mean
        squares.append(float(np.add.reduce(x * x)))
        gaps += int(np.count_nonzero(dt > 1.5 * med))
    std = math.sqrt(math.fsum(squares) / n)
    return {"median_period": med, "rate_hz": 1.0 / med, "jitter_std": std, "jitter_relative": std / med,
            "max_period": hi, "min_period": lo, "gaps": gaps}


REPEATED_SHARE_WARNED = 0.01  # a share of repeated rows worth a warning: above rounding coincidences


def repeated_samples(data: "SampledData") -> dict:
    """Rows that repeat the previous one exactly, in every joint's position and torque: a log
    resampled by repeating samples (a 100 Hz stream logged at 400 Hz) or a sensor that froze.
    Differences of such a log are zero three rows in four and a spike in the fourth, so the
    velocity and acceleration it gives are wrong whatever the filter. Returns the share, the
    longest run of repeats, the rate the distinct rows have, and a warning line (or None)."""
    q, tau = np.asarray(data.q), None if data.tau is None else np.asarray(data.tau)
    n, longest, run = 0, 0, 0  # repeats, the longest run, the run still open at a chunk's end
    rows = max(1, CHUNK_SAMPLES // max(1, q.shape[1]))  # read in chunks: a day of rows is 0.6 GB of booleans
    for s in range(0, q.shape[0] - 1, rows):
        e = min(q.shape[0], s + rows + 1)
        same = np.all(q[s + 1:e] == q[s:e - 1], axis=1)
        if tau is not None:
            same &= np.all(tau[s + 1:e] == tau[s:e - 1], axis=1)
        n += int(same.sum())
        edges = np.diff(np.concatenate(([0], same.astype(np.int8), [0])))
        starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        if starts.size == 0:
            run = 0
            continue
        lengths = stops - starts
        if starts[0] == 0:
            lengths[0] += run  # continues the run the previous chunk ended in
        longest = max(longest, int(lengths.max()))
        run = int(lengths[-1]) if stops[-1] == same.size else 0
        release_rows_before((q, tau), e - 1)  # a mapped log's pages read here: not kept resident
    share = n / max(q.shape[0] - 1, 1)
    rate = sampling_report(data.t)["rate_hz"] if q.shape[0] > 1 else float("nan")
    distinct_rate = rate * (1.0 - share)
    warning = (f"data: {share:.0%} of the samples repeat the previous one exactly (positions and torques; "
               f"up to {longest} in a row): the log was resampled by repeating samples, or a sensor froze. "
               f"Its distinct samples come at about {distinct_rate:.3g} Hz, not {rate:.3g} Hz: give the log "
               "at its own rate, or drop the repeated rows") if share > REPEATED_SHARE_WARNED else None
    return {"share": share, "count": n, "longest_run": longest, "rate_hz": rate, "distinct_rate_hz": distinct_rate,
            "warning": warning}


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

    One case the definition leaves open: on a noise-free or quantised signal the residuals are
    rounding, and scaled by their median they make outliers of most samples, so that a window can keep
    fewer than the 3 samples a local quadratic needs (its solution is then arbitrary: qdd spikes of
    3.8e5 rad/s^2 on a smooth Panda-like log at span 0.02). Such a window keeps the previous pass's fit.
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
        A = A + 1e-12 * np.eye(3)
        new = np.linalg.solve(A, rhs[..., None])[..., 0, 0]
        if it > 0:
            # samples with a positive weight in each window (the tricube is positive on all of it)
            support = _convolve_same((robust > 0).astype(float), np.ones(2 * half + 1))
            new = np.where(support < 2.5, fit, new)
        fit = new
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


REPEAT_RATE_HZ = 100.0  # q is resampled at this rate to look for a repeat (a motion's period, not its noise)
REPEAT_CORRELATION = 0.9  # the motion repeats when q correlates with itself this well one period later
REPEAT_DIP = 0.5  # ... after first decorrelating below this (a slow motion correlates at short lags)


def repeat_period(t: np.ndarray, q: np.ndarray) -> float | None:
    """The period in seconds after which the joint positions repeat (a periodic excitation run for
    several periods), or None when they do not repeat at least twice within the recording.

    The autocorrelation of each moving joint's position about its mean, resampled on a uniform
    grid and averaged over joints: the period is the first lag, after the correlation has dipped
    below ``REPEAT_DIP``, at which it peaks above ``REPEAT_CORRELATION`` (the first peak, so a
    multiple of the period is never taken for it), and at most half the recording; then refined
    between grid steps (:func:`_refined_lag`)."""
    t = np.asarray(t, float)
    q = np.asarray(q, float)
    if t.size < 4 or t[-1] <= t[0]:
        return None
    grid = np.arange(t[0], t[-1], 1.0 / REPEAT_RATE_HZ)
    x = np.stack([np.interp(grid, t, q[:, j]) for j in range(q.shape[1])], axis=1)
    x = x - x.mean(axis=0)
    spread = x.std(axis=0)
    moving = spread > 1e-9 * max(1.0, float(np.max(np.abs(q))))
    if grid.size < 8 or not np.any(moving):
        return None
    x = x[:, moving] / spread[moving]
    N = x.shape[0]
    n_fft = next_fast_len(2 * N)
    F = rfft(x, n_fft, axis=0)
    rho = irfft(F * np.conj(F), n_fft, axis=0)[:N].mean(axis=1) / (N - np.arange(N))
    half = N // 2
    below = np.nonzero(rho[:half] < REPEAT_DIP)[0]
    if below.size == 0:
        return None
    above = below[0] + np.nonzero(rho[below[0]:half] >= REPEAT_CORRELATION)[0]
    if above.size == 0:
        return None
    k = int(above[0])
    while k + 1 < half and rho[k + 1] >= rho[k]:  # climb to the top of that first peak
        k += 1
    return _refined_lag(x, k, half) / REPEAT_RATE_HZ


def _refined_lag(x: np.ndarray, k: int, limit: int) -> float:
    """The lag near ``k`` (grid steps, below ``limit``) at which ``x`` best repeats, between grid
    steps: the mean squared difference of x and x a lag later is near zero and quadratic about
    the period, so a parabola through three lags locates it. Phase blocks are counted from the
    recording's start, so a period off by up to half a grid step (5 ms) shifts them by that much per
    period: after 20 periods of 1.2 s, by up to 0.1 s, 40 % of a fifth of the period."""

    def misfit(j):
        return float(np.mean(np.square(x[j:] - x[:-j])))

    for _ in range(4):  # bounded walk to the lag of least misfit (the correlation peak may sit a step off)
        if k - 1 < 1 or k + 1 >= limit:
            return float(k)
        d = [misfit(j) for j in (k - 1, k, k + 1)]
        step = int(np.argmin(d)) - 1
        if step == 0:
            break
        k += step
    else:
        return float(k)
    curvature = d[0] - 2.0 * d[1] + d[2]
    if not curvature > 0:
        return float(k)
    return k + float(np.clip(0.5 * (d[0] - d[2]) / curvature, -0.5, 0.5))


def moving_mask(qd: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """Samples where every joint moves faster than ``threshold`` (rad/s): the Coulomb
    model's discontinuity at zero velocity makes the others unreliable."""
    return np.all(np.abs(qd) > np.asarray(threshold, float), axis=1)


# --------------------------------------------------------------------------- segments and cut-off


def split_at_gaps(t: np.ndarray, gap_periods: float | None, median_period: float | None = None,
                  chunk: int = CHUNK_SAMPLES) -> list[slice]:
    """Index slices of the stretches between gaps: a step longer than ``gap_periods`` median
    periods ends one stretch and starts the next. Nothing is interpolated across a gap.
    ``median_period`` is np.median(np.diff(t)) when the caller has it (else computed)."""
    t = np.asarray(t, float)
    if gap_periods is None or t.shape[0] < 3:
        return [slice(0, t.shape[0])]
    limit = gap_periods * (median_interval(t, chunk) if median_period is None else median_period)
    cuts = [s + np.flatnonzero(dt > limit) + 1 for s, dt in _intervals(t, chunk)]
    edges = np.concatenate([[0], *cuts, [t.shape[0]]])
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


def choose_cutoff(datasets, config) -> dict:
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
