"""The daemon's parts are objects handed what they need, not mixins reading one shared ``self``.

Read from the source (ast): each composed part reads on ``self`` only what its own class defines
or assigns (its collaborators arrive through ``__init__``), and the mixins that are left of
``Daemon`` are the ones listed here, so the list can only shrink.
"""

from __future__ import annotations

import ast

import pytest

from tests.architecture.layers import ROOT

DAEMON = ROOT / "daemon"
# (file, class): the parts of the main process built by Daemon.__init__ and handed their collaborators
COMPOSED = [("admission.py", "RunAdmission"), ("runs.py", "Runs"), ("heavy.py", "HeavyReads"),
            ("status.py", "RobotState"), ("status.py", "StatusReport"), ("dispatch.py", "RequestContext")]
# still mixins of Daemon over its shared state (docs/architecture.md): never more of them
MIXINS_LEFT = {"Supervision", "Dispatch"}


def class_node(path, name: str) -> ast.ClassDef:
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)


def foreign_self_reads(cls: ast.ClassDef) -> set[str]:
    """Names read as ``self.X`` in the class that the class neither assigns nor defines (a method,
    a class attribute or a dataclass field)."""
    own, read = set(), set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(item.name)
        elif isinstance(item, ast.Assign):
            own |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            own.add(item.target.id)
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (own if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    return read - own


@pytest.mark.parametrize("file,name", COMPOSED)
def test_a_composed_part_reads_only_what_it_was_handed(file, name):
    assert foreign_self_reads(class_node(DAEMON / file, name)) == set()


def test_the_checker_sees_a_mixin_read():
    """The check itself: a class that reads what another class assigns is caught."""
    cls = ast.parse("class Mixin:\n    def f(self):\n        self.own = 1\n        return self.current, self.own\n").body[0]
    assert foreign_self_reads(cls) == {"current"}


def test_daemon_holds_its_parts_and_no_new_mixin():
    daemon = class_node(DAEMON / "server.py", "Daemon")
    bases = {b.id for b in daemon.bases if isinstance(b, ast.Name)}
    assert bases <= MIXINS_LEFT, bases - MIXINS_LEFT
    assert not bases & {name for _, name in COMPOSED}
