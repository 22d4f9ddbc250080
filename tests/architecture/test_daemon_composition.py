"""The daemon's parts are objects handed what they need, not mixins reading one shared ``self``.

Read from the source (ast): each composed part reads on ``self`` only what its own class defines
or assigns (its collaborators arrive through ``__init__``), ``Daemon`` has no base class left,
and no file of the main process reads on ``self`` what another of them defines (the measure of
the daemon's shared state: 262 such reads when the loop and the dispatch were still mixins).
"""

from __future__ import annotations

import ast

import pytest

from tests.architecture.layers import ROOT

DAEMON = ROOT / "daemon"
# (file, class): the parts of the main process built by Daemon.__init__ and handed their collaborators
COMPOSED = [("admission.py", "RunAdmission"), ("runs.py", "Runs"), ("heavy.py", "HeavyReads"),
            ("status.py", "RobotState"), ("status.py", "StatusReport"), ("dispatch.py", "RequestContext"),
            ("dispatch.py", "Dispatcher"), ("dispatch.py", "ReplyChannel"), ("control_access.py", "AccessControl"),
            ("supervision.py", "Workers"), ("supervision.py", "MainLoop")]
# the files of the main process's classes: Daemon and its parts
MAIN_PROCESS_FILES = ["server.py"] + sorted({file for file, _ in COMPOSED})


def class_node(path, name: str) -> ast.ClassDef:
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)


def own_names(cls: ast.ClassDef) -> set[str]:
    """What a class defines: its methods, class attributes and dataclass fields."""
    own = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(item.name)
        elif isinstance(item, ast.Assign):
            own |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            own.add(item.target.id)
    return own


def self_attributes(tree: ast.AST) -> tuple[set[str], list[str]]:
    """The names assigned as ``self.X`` in ``tree``, and every ``self.X`` read (with repeats)."""
    stored, read = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if isinstance(node.ctx, ast.Store):
                stored.add(node.attr)
            else:
                read.append(node.attr)
    return stored, read


def foreign_self_reads(cls: ast.ClassDef) -> set[str]:
    """Names read as ``self.X`` in the class that the class neither assigns nor defines (a method,
    a class attribute or a dataclass field)."""
    stored, read = self_attributes(cls)
    return set(read) - own_names(cls) - stored


def cross_file_reads(sources: dict[str, str]) -> list[tuple[str, str]]:
    """(file, X) for each ``self.X`` read in a file (counted with repeats) where X is not defined
    in that file (by any of its classes, or assigned on ``self``) but is in another of
    ``sources``: the reads of a mixin into the state of the class it is mixed into."""
    defined, reads = {}, {}
    for name, text in sources.items():
        tree = ast.parse(text)
        stored, read = self_attributes(tree)
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        defined[name] = stored.union(*(own_names(c) for c in classes))
        reads[name] = read
    found = []
    for name in sources:
        elsewhere = set().union(*(d for other, d in defined.items() if other != name))
        found += [(name, x) for x in reads[name] if x not in defined[name] and x in elsewhere]
    return found


@pytest.mark.parametrize("file,name", COMPOSED)
def test_a_composed_part_reads_only_what_it_was_handed(file, name):
    assert foreign_self_reads(class_node(DAEMON / file, name)) == set()


def test_the_checker_sees_a_mixin_read():
    """The check itself: a class that reads what another class assigns is caught."""
    cls = ast.parse("class Mixin:\n    def f(self):\n        self.own = 1\n        return self.current, self.own\n").body[0]
    assert foreign_self_reads(cls) == {"current"}


def test_daemon_has_no_mixin_left():
    daemon = class_node(DAEMON / "server.py", "Daemon")
    assert daemon.bases == [], [ast.unparse(b) for b in daemon.bases]


def test_no_file_of_the_main_process_reads_what_another_defines():
    sources = {name: (DAEMON / name).read_text() for name in MAIN_PROCESS_FILES}
    assert cross_file_reads(sources) == []


def test_the_cross_file_count_sees_a_mixin_and_counts_each_read():
    """The count itself: a mixin's two reads of the host's ``runs`` are two, its read of what it
    assigns itself is none, and the host's reads of its own state are none."""
    sources = {"host.py": "class Host(Mixin):\n    def __init__(self):\n        self.runs = []\n"
                          "    def g(self):\n        return self.runs\n",
               "mixin.py": "class Mixin:\n    def f(self):\n        self.mine = 1\n"
                           "        return self.runs, self.runs, self.mine, self.g\n"}
    assert cross_file_reads(sources) == [("mixin.py", "runs"), ("mixin.py", "runs"), ("mixin.py", "g")]
