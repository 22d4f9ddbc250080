"""Daemon configuration: defaults work out of the box, every bad key is named."""

import pytest
from robodyn.daemon.access import state_socket_path
from robodyn.daemon.config import DEFAULT_CONTROL, load_config


def test_no_config_is_a_simulated_panda_on_loopback():
    cfg = load_config(None)
    assert (cfg.robot, cfg.driver, cfg.control) == ("panda", "sim", DEFAULT_CONTROL)
    assert cfg.driver_options == {"speed": 1.0}
    # the state stream: an ipc socket beside the access token, only this user reaches it
    assert cfg.state == f"ipc://{state_socket_path(DEFAULT_CONTROL)}" and cfg.state.endswith("127.0.0.1-47770.state")


def test_file_and_overrides(tmp_path):
    p = tmp_path / "d.toml"
    p.write_text('[robot]\nname = "ur5"\n[driver]\nrate_hz = 500\nspeed = 0.0\n[recorder]\nblock_ms = 20\n')
    cfg = load_config(p, overrides={"data_dir": str(tmp_path), "control": None})
    assert cfg.robot == "ur5" and cfg.driver_options == {"rate_hz": 500, "speed": 0.0}
    assert cfg.block_ms == 20 and cfg.data_dir == str(tmp_path) and cfg.control == DEFAULT_CONTROL


@pytest.mark.parametrize("text, words", [
    ("[robto]\n", "unknown section"),
    ("[daemon]\nport = 1\n", "unknown key(s) ['port'] in [daemon]"),
    ("[loop]\nrt_priority = 'high'\n", "[loop].rt_priority has the wrong type"),
    ("[recorder]\nblock_ms = 500\n", "crash-loss bound"),
    ("[daemon]\ncontrol = 'localhost:1'\n", "tcp:// or ipc://"),
    ("[daemon\n", "not valid TOML"),
    ("[safety]\nsupervisor_silence_s = 0.05\n", "[safety].supervisor_silence_s must be in [0.1, 5] s, got 0.05"),
    ("[safety]\nsupervisor_silence_s = 6\n", "[safety].supervisor_silence_s must be in [0.1, 5] s, got 6"),
    ("[safety]\nsupervisor_silence_s = nan\n", "[safety].supervisor_silence_s must be in [0.1, 5] s, got nan"),
    ("[safety]\nsupervisor_silence_s = '1'\n", "[safety].supervisor_silence_s has the wrong type"),
])
def test_bad_config_names_the_key(tmp_path, text, words):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        load_config(p)
    assert words in str(e.value)


def test_the_supervisor_silence_bound_defaults_under_a_second_and_is_read(tmp_path):
    assert load_config(None).supervisor_silence_s == 0.5
    p = tmp_path / "d.toml"
    p.write_text("[safety]\nsupervisor_silence_s = 1.5\n")
    assert load_config(p).supervisor_silence_s == 1.5
