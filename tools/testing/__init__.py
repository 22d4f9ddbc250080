"""Test doubles and launchers, installed so that tests, benchmarks and the demo run from an installed
package: the simulated Universal Robots controller (``ur_controller``) and a simulated daemon
started as a child process (``local_daemon``). Nothing in the runtime (daemon, drivers, library)
imports them."""
