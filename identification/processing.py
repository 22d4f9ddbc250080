"""The one processing path of identification data: :class:`ProcessingConfig` (every step, recorded
verbatim in results), the cut-off resolved from the data, and :func:`process` /
:func:`process_windows`, which chain the pure functions of :mod:`.signals` (resampling within
stretches between gaps, zero-phase filtering with parallel filtering of the torque-side companions,
differentiation, robust LOESS, decimation, period averaging, trimming, near-zero-velocity removal).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.signal

from .mapped_pages import release_rows_before
from .signals import (SampledData, average_periods, central_difference, choose_cutoff, moving_mask, rloess,
                      sampling_report, second_difference, split_at_gaps)

# --------------------------------------------------------------------------- pipeline

SAME = "same"  # a per-signal cut-off that follows ``cutoff_hz``


@dataclass
class ProcessingConfig:
    """Every step of :func:`process`, recorded verbatim in identification results.

    One zero-phase low-pass (``cutoff_hz``) is applied to q, to a measured qd and to tau, and every
    torque-side companion (the Coulomb sign columns, a subtracted friction torque) goes through the
    same filter as tau. ``"auto"`` chooses it from the data (:func:`choose_cutoff`); the value
    chosen is what a result stores, so validation and prediction use the same number (when no
    filter in use follows it, nothing is chosen and "auto" stays: :func:`cutoff_needed`). The
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
        # values a recording cannot give meaning to: refused here, where every caller passes (the
        # command line, a daemon job's config at submit, a script), not found deep in a fit
        for name, low, open_low, optional in (("trim_s", 0.0, False, False), ("jitter_tolerance", 0.0, False, False),
                                              ("min_velocity", 0.0, False, True), ("rate_hz", 0.0, True, True),
                                              ("average_period_s", 0.0, True, True),
                                              ("rloess_iterations", 0, False, False), ("filter_order", 1, False, False)):
            v = getattr(self, name)
            if v is None and optional:
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v or (v <= low if open_low else v < low):
                raise ValueError(f"{name}: must be {'>' if open_low else '>='} {low}, got {v!r}")
        if self.rloess_span is not None and not 0 < self.rloess_span < 1:
            raise ValueError(f"rloess_span: a fraction of the samples, between 0 and 1, got {self.rloess_span!r}")

    def processing_key(self) -> tuple:
        """What the processing of a recording depends on: every field but the record of how an
        automatic cut-off was chosen (a cache key; to_dict copies that whole record)."""
        return tuple((f.name, repr(getattr(self, f.name))) for f in dataclasses.fields(self)
                     if f.name != "cutoff_choice")

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

    def uses_measured_velocity(self, has_qd: bool) -> bool:
        """Whether data with (``has_qd``) or without measured velocity columns is processed from its
        measured velocity (filtered at the qd cut-off) rather than from differences of q."""
        return self.velocity == "measured" or (self.velocity == "auto" and has_qd)

    def slowest_cutoff(self, rate_hz: float, measured_velocity: bool = True) -> float | None:
        """The lowest low-pass in the chain at this rate: it sets how long edge transients last.
        The qd filter is in the chain only when the velocity is the measured one."""
        signals = ("q", "qd", "tau") if measured_velocity else ("q", "tau")
        cuts = [c for c in (self.cutoff(s) for s in signals) if c]
        if self.decimation > 1:
            cuts.append(DECIMATION_PASSBAND * rate_hz / self.decimation)
        return min(cuts) if cuts else None


def cutoff_needed(config: ProcessingConfig, datasets) -> bool:
    """Whether an "auto" ``cutoff_hz`` would filter anything in ``datasets``: some signal's cut-off
    follows it ("same") and that signal's filter runs. q and tau are always filtered; the qd
    filter runs only on a measured velocity, so with q and tau cut-offs of their own and the
    velocity differentiated from q, the automatic choice (a spectrum of the whole recording)
    would choose a number nothing uses."""
    if config.resolved:
        return False
    if config.q_cutoff_hz == SAME or config.tau_cutoff_hz == SAME:
        return True
    return any(config.uses_measured_velocity(d.qd is not None) for d in datasets)


def resolve_processing(config: ProcessingConfig, datasets) -> ProcessingConfig:
    """The config with an "auto" cut-off replaced by the number chosen from ``datasets`` (and how).
    When no filter in use follows it (:func:`cutoff_needed`), the config is returned as it is: its
    ``cutoff_hz`` stays "auto", and data that would use it (a measured velocity) resolve it then."""
    if not cutoff_needed(config, datasets):
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
    # a fit piece's friction signals' source: (the velocity they are functions of, over the whole
    # filtered window; the rate; which of the window's samples ``data`` kept), so that another column
    # set's signals are filtered alone (:func:`friction_signals`) instead of the whole piece again
    friction_source: tuple | None = None


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
    return scipy.signal.sosfiltfilt(_butter_sos(order, cutoff / nyquist).copy(), x, axis=0,
                                    padlen=_filter_pad(rate, cutoff, x.shape[0]))


@functools.lru_cache(maxsize=64)
def _butter_sos(order: int, normalised_cutoff: float) -> np.ndarray:
    """The Butterworth design, made once per order and cut-off: designing it cost more than
    filtering a short piece with it (model selection filters hundreds of pieces at a few cut-offs)."""
    sos = scipy.signal.butter(order, normalised_cutoff, output="sos")
    sos.flags.writeable = False  # shared between calls: callers filter with a copy
    return sos


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


def _torque_side_filters(cfg: ProcessingConfig, rate: float, n: int) -> list:
    """The filters every torque-side signal goes through, in order (parallel filtering): the torque
    low-pass, the decimation's anti-alias filter, the robust LOESS; (name, function) pairs."""
    order = cfg.filter_order
    out = []
    if cfg.cutoff("tau"):
        out.append(("lowpass_tau", lambda v: _lowpass_padded(v, cfg.cutoff("tau"), rate, order)))
    if cfg.decimation > 1:
        f = cfg.decimation
        if n < 30 * f:
            raise ValueError(f"decimation: a stretch of {n} samples is too short to decimate by {f}")
        sos = scipy.signal.butter(8, 2.0 * DECIMATION_PASSBAND / f, output="sos")
        pad = _filter_pad(rate, DECIMATION_PASSBAND * rate / f, n)
        out.append(("antialias", lambda v: scipy.signal.sosfiltfilt(sos, v, axis=0, padlen=pad)))
    if cfg.rloess_span:
        out.append(("rloess", lambda v: rloess(v, cfg.rloess_span, cfg.rloess_iterations)))
    return out


def friction_signals(piece: ProcessedData, columns) -> dict:
    """A fit piece's Coulomb and Stribeck signals for friction columns ``columns``, filtered as its
    torque was (:func:`_torque_side_filters` over the same window, the same samples kept): what
    processing the recording again for those columns would give them, without filtering the states
    and the torque again. KeyError when the piece has no source (a prediction, period averaging)."""
    qd, rate, kept = piece.friction_source
    raw = {"coulomb": columns.coulomb(qd)}
    extra = columns.extra(qd)
    if extra is not None:
        raw["friction_extra"] = extra
    for _, apply in _torque_side_filters(piece.config, rate, qd.shape[0]):
        raw = {k: apply(v) for k, v in raw.items()}
    return {"coulomb": raw["coulomb"][kept], "friction_extra": raw["friction_extra"][kept] if extra is not None else None}


def _filter_piece(piece: SampledData, cfg: ProcessingConfig, rate: float, friction, purpose: str,
                  steps: list | None, columns=None, velocity: list | None = None) -> SampledData:
    """Low-pass, differentiate and (for a fit) filter the torque side of one uniform piece, at full
    rate. ``velocity``, when given, receives the velocity the friction signals are functions of."""
    dt = 1.0 / rate
    order = cfg.filter_order
    q, tau, qd = piece.q, piece.tau, piece.qd
    log = steps.append if steps is not None else (lambda item: None)
    if cfg.cutoff("q"):
        q = _lowpass_padded(q, cfg.cutoff("q"), rate, order)
        log({"step": "lowpass_q", "cutoff_hz": cfg.cutoff("q"), "order": order})
    use_measured = cfg.uses_measured_velocity(qd is not None)
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
        if velocity is not None:
            velocity.append(qd)
    # the anti-alias filter belongs to the processing (prediction sees it too); only keeping every
    # f-th sample is a fit-time step. The states go through it and the LOESS (qdd) with the torque side.
    for name, apply in _torque_side_filters(cfg, rate, q.shape[0]):
        torque_side = {k: apply(v) for k, v in torque_side.items()}
        if name == "lowpass_tau":
            log({"step": "lowpass_tau", "cutoff_hz": cfg.cutoff("tau"), "order": order,
                 "parallel": sorted(k for k in torque_side if k != "tau")})
        elif name == "antialias":
            q, qd, qdd = apply(q), apply(qd), apply(qdd)
            log({"step": "antialias", "cutoff_hz": DECIMATION_PASSBAND * rate / cfg.decimation, "order": 8,
                 "for_decimation": cfg.decimation})
        else:
            qdd = apply(qdd)
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


def _edge_samples(cfg: ProcessingConfig, rate: float, measured_velocity: bool = True) -> int:
    """Samples dropped at a stretch's edges created by a gap: half a period of the lowest cut-off
    (with the odd-extension padding of the zero-phase filters, the transient is mostly gone by
    then; measured on a real 1 kHz Franka log: held-out error 1.764 keeping every sample, 1.752
    dropping half a period, 1.752 dropping a whole one)."""
    cut = cfg.slowest_cutoff(rate, measured_velocity)
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
    stretches = split_at_gaps(raw.t, cfg.gap_periods, rep["median_period"])
    measured_velocity = cfg.uses_measured_velocity(raw.qd is not None)
    edge = _edge_samples(cfg, rate, measured_velocity)
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
        gaps = [{"t": float(raw.t[s.start - 1]), "seconds": float(raw.t[s.start] - raw.t[s.start - 1])}
                for s in stretches[1:]]
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
        cut = cfg.slowest_cutoff(rate, measured_velocity)
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
            # the rows before this window are not read again in this pass: a mapped recording's
            # pages for them go back to the kernel (mapped_pages.py), so residence stays a window
            release_rows_before((seg.t, seg.q, seg.tau, seg.qd), lo)
            piece = seg.select(slice(lo, hi))
            if resample:
                piece = _resample_to(piece, _grid(piece.t[0], piece.t[-1], rate, anchor))
            piece_steps = [] if first else None
            velocity: list = []
            done = _filter_piece(piece, cfg, rate, friction, purpose, piece_steps, columns, velocity)
            keep = np.flatnonzero((done.t >= b0 - 1e-9) & (done.t < b1 - 1e-9))
            if f > 1:
                keep = keep[np.round((done.t[keep] - anchor) * rate).astype(np.int64) % f == 0]
            out = done.select(keep)
            if out.count == 0:
                continue
            fit_steps = []
            if purpose == "fit" and cfg.min_velocity:
                mask = moving_mask(out.qd, cfg.min_velocity)
                fit_steps.append({"step": "drop_slow_samples", "min_velocity": cfg.min_velocity})
                out = out.select(mask)
                keep = keep[mask]
            if first:
                steps += piece_steps
                if trim:
                    steps.append({"step": "trim", "seconds": cfg.trim_s})
                if f > 1:
                    steps.append({"step": "decimate", "factor": f, "rate_hz": rate / f})
                steps += fit_steps
                first = False
            yield ProcessedData(out, cfg, steps, [(float(b0), float(min(b1, t_hi)))] if out.count else [],
                                (velocity[0], rate, keep) if velocity else None)


def _process_whole_periodic(raw: SampledData, cfg: ProcessingConfig, friction, steps: list,
                            columns=None) -> ProcessedData:
    """Period averaging needs one uninterrupted, uniformly sampled recording."""
    rep = sampling_report(raw.t)
    if len(split_at_gaps(raw.t, cfg.gap_periods, rep["median_period"])) > 1:
        raise ValueError("average_period_s: the recording has gaps; periods can only be averaged over an "
                         "uninterrupted recording")
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
