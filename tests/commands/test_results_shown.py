"""Results where users look: the report carries its plots inside the file, a default result file
is never overwritten without a word. (The daemon commands' summaries, table headers and export
folder are tested against a running daemon: tests/daemon/test_e2e.py and
tests/identification/test_identify_through_daemon.py.)"""

from __future__ import annotations

import base64
import re

import pytest

from robodyn.cli import main
from tests.commands.test_identify_methods import write_recordings

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return write_recordings(tmp_path_factory.mktemp("twolink"))


def test_the_report_embeds_its_torque_plots(recordings, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the `plot` extra (installed by make test)")
    ident, held = recordings
    report = tmp_path / "report.html"
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "--holdout", str(held),
                 "--out", str(tmp_path / "r.json"), "--report", str(report)]) == 0
    html = report.read_text()
    images = re.findall(r"<img [^>]*src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(images) == 2  # the identification data and the held-out recording, one plot each
    for data in images:
        png = base64.b64decode(data, validate=True)
        assert png.startswith(PNG_MAGIC) and len(png) > 5000  # a real picture, not an empty frame
    assert "held out" in html and str(held.name) in html


def test_the_default_result_file_is_not_overwritten_silently(recordings, tmp_path, monkeypatch, capsys):
    ident, _ = recordings
    monkeypatch.chdir(tmp_path)
    argv = ["identify", str(ident), "--robot", "twolink", "--cutoff", "8"]
    assert main(argv) == 0
    assert "result written to result.json" in capsys.readouterr().out
    (tmp_path / "result.json").write_text("keep me")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "result.json exists" in err and "--force" in err and "--out" in err
    assert (tmp_path / "result.json").read_text() == "keep me"
    assert main(argv + ["--force"]) == 0
    assert (tmp_path / "result.json").read_text().startswith("{")


def test_an_exports_default_file_is_not_overwritten_silently(recordings, tmp_path, monkeypatch, capsys):
    ident, _ = recordings
    monkeypatch.chdir(tmp_path)
    argv = ["export", str(ident), "--format", "npz"]
    assert main(argv) == 0 and (tmp_path / "ident.npz").exists()
    (tmp_path / "ident.npz").write_text("keep me")
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ident.npz exists" in err and "--force" in err
    assert (tmp_path / "ident.npz").read_text() == "keep me"
    assert main(argv + ["--force"]) == 0 and (tmp_path / "ident.npz").read_bytes() != b"keep me"
    assert main(argv + ["--out", str(tmp_path / "ident.npz")]) == 0  # a file the user names is written
