"""The grader's layout is its architecture: rooms, the directions they import, and the map.

``autograder/`` is five rooms (subpackages) and a few root modules. Each room's ``__init__``
says what it may import (``MAY_IMPORT``); these tests read every module's imports (top-level
and inside functions, absolute and relative) and hold them to it, hold ``MAY_IMPORT`` to the
order below (nothing imports a room above it), and hold ``autograder/README.md``'s map to the
folders. Read, never imported: the tests see the source as a maintainer does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"
# Lowest first. A room may import only rooms before it; the judge and the sandbox, the trust
# boundary, import none. deploy and the command line sit on top.
ORDER = ["sandbox", "judge", "pipeline", "outputs", "authoring", "deploy"]
BASE = {"course", "terminal"}            # root modules every room may import
ENTRY = {"cli", "__main__", "__init__"}  # root modules nothing but deploy imports


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _room(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported(path: Path) -> set[str]:
    """The ``autograder.X...`` names a module imports, as dotted paths under the package."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                if node.module:
                    found.add(".".join(base + [node.module]))
                else:
                    found.update(".".join(base + [a.name]) for a in node.names)
            elif node.module == "autograder":
                found.update(f"autograder.{a.name}" for a in node.names)
            elif node.module and node.module.startswith("autograder."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("autograder."))
    return found


def _may_import(room: str) -> tuple[str, ...]:
    init = PACKAGE / room / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MAY_IMPORT":
            return tuple(ast.literal_eval(node.value))
    return ()


def _rooms() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def test_every_module_is_in_a_room_or_one_of_the_few_root_modules():
    assert sorted(_rooms()) == sorted(ORDER), "a new room goes into ORDER and the README's map"
    roots = {p.stem for p in PACKAGE.glob("*.py")}
    assert roots == BASE | ENTRY, f"root modules beyond the map: {sorted(roots - BASE - ENTRY)}"
    for room in ORDER:
        doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text()))
        assert doc and len(doc) > 80, f"autograder/{room}/__init__.py: the room's contract, please"


def test_no_room_may_import_a_room_above_it():
    for room in ORDER:
        below = ORDER[:ORDER.index(room)]
        for other in _may_import(room):
            assert other in below, f"{room} may not import {other}: it is not below it in {ORDER}"
    assert _may_import("sandbox") == () and _may_import("judge") == (), \
        "the trust boundary (sandbox, judge) stands alone"


def _violations(path: Path) -> list[str]:
    room, bad = _room(path), []
    if room in ENTRY:
        return []              # the command line imports every room
    allowed = set(_may_import(room)) if room in ORDER else set()   # BASE imports only BASE
    if room == "deploy":
        allowed |= ENTRY       # a recipe runs the command line
    for name in _imported(path):
        parts = name.split(".")
        if parts[0] != "autograder" or len(parts) < 2:
            continue
        other = parts[1]
        if other != room and other not in BASE and other not in allowed:
            bad.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return bad


def test_every_import_goes_in_an_allowed_direction():
    bad = [line for path in _modules() for line in _violations(path)]
    assert not bad, "imports against the layout (see autograder/README.md, The map):\n" + "\n".join(bad)


def test_the_direction_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The checker itself can fail: a judge module that imports the report, lazily, is caught."""
    fake = tmp_path / "autograder"
    (fake / "judge").mkdir(parents=True)
    (fake / "judge" / "__init__.py").write_text('"""x"""\nMAY_IMPORT: tuple[str, ...] = ()\n')
    module = fake / "judge" / "sneaky.py"
    module.write_text("def f():\n    from ..outputs import report\n    return report\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert _violations(module) == ["autograder/judge/sneaky.py imports autograder.outputs"]


def _map() -> str:
    text = (PACKAGE / "README.md").read_text(encoding="utf-8")
    assert text.split("\n## ")[1].startswith("The map"), "autograder/README.md opens with the map"
    return text.split("\n## ")[1]


def test_the_readmes_map_names_every_module_and_nothing_else():
    module_column = [row.split("|")[2] for row in _map().splitlines() if row.startswith("| ")]
    mapped = {name for cell in module_column for name in re.findall(r"`([a-z_/]+\.py)`", cell)}
    real = {str(p.relative_to(PACKAGE)) for p in _modules() if p.name != "__init__.py"}
    assert real - mapped == set(), f"modules the map does not name: {sorted(real - mapped)}"
    assert mapped - real == set(), f"the map names what is not there: {sorted(mapped - real)}"


def test_the_top_readme_names_every_room():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    missing = [room for room in ORDER if f"autograder/{room}/" not in readme]
    assert not missing, f"README.md's layout table lacks {missing}"


# A string holding a def or a class, or this many statements, is code (a probe's one-line
# ``python -c`` check is not).
STRING_CODE_LIMIT = 8


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_holds_kernel_code_in_a_string(path):
    """Code the kernel runs lives in a module file (judge/in_kernel.py), linted and tested like
    the rest; a string that parses as code (a def, a class, many statements) is that code
    hidden from every tool. Docstrings and one-line calls are not."""
    assert _code_strings(path.read_text(encoding="utf-8")) == []


def _code_strings(source: str) -> list[str]:
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            try:
                body = ast.parse(node.value).body
            except (SyntaxError, ValueError):
                continue
            if len(body) >= STRING_CODE_LIMIT or any(
                    isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for b in body):
                found.append(node.value[:80])
    return found


def test_the_string_check_sees_the_old_bootstrap():
    """What the check exists for: the 414-line bootstrap string integrity.py once held."""
    old = 'BOOTSTRAP = """\nimport torch\nimport builtins\ndef _guard(x):\n    return x\n"""\n'
    assert _code_strings(old), "the check must catch kernel code kept in a string"
