"""The command line, one module per task.

Each module defines ``register(subparsers)``; :mod:`robodyn.cli` (the ``robodyn`` console script)
loads them in help order. The algorithms live in the library packages (robodyn.identification,
robodyn.calibration, ...); the modules here only parse options, call them and print.

=================  ==========================================================================
models             ``models``, ``model``, ``drivers``: the robot models and the daemon's drivers
daemon             ``daemon``, ``worker``, ``keys``: the acquisition daemon and its services
daemon_client      ``status``, ``arm``, ``run``, ``recordings``, ``export``, ``stream``, ...
operator           ``bridge foxglove``, ``status-page``: read-only views for an operator
identify           ``identify`` (every method), ``drive-gains``
predict            ``validate``, ``predict``: a result on other recordings
jobs               ``submit-identify``, ``jobs``, ``pull``: identification jobs on the daemon's worker
urdf               ``export-urdf``: an identification or a calibration as URDF
compare            ``compare``: any set of methods on any data, side by side
excitation         ``excitation design|check|sample|plot``
reproduce          ``reproduce PAPER``: the source papers' tables beside robodyn's
scaleout           ``scaleout run``: batches on a process pool or Ray
calibrate          ``calibrate ...``: kinematic calibration
demo               ``demo``: the simulated end-to-end loop
=================  ==========================================================================

Shared pieces: :mod:`.common` (``--json``, deprecated names, number parsing and table cells) and
:mod:`.progress` (progress bars on a terminal, silent otherwise).
"""
