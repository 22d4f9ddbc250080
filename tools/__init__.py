"""robodyn.tools: programs beside the library, on top of it.

- ``operator``: the operator's read-only views of a running daemon (status page, Foxglove bridge);
- ``testing``: test doubles and launchers for tests, benchmarks and the demo (the simulated UR
  controller, a local simulated daemon).

The daemon's client is ``robodyn.daemon.client``. Developer tools that are not installed live
beside these folders (``tools/mutation``, ``tools/setup``).
"""
