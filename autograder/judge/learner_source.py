"""The one way the grader's own process parses a learner's source: bounded, and never raising.

Why: an answer cell is text chosen by the learner, parsed here, in the grader's process, before
anything runs (the screen, the run-time guard's rewrite). Python's parser and every recursive
walk over its tree fail on inputs well under the answer size cap: a sum of 60,000 ones raises
``RecursionError``, ``not not ... 1`` 10,000 deep ``MemoryError``, a lone surrogate
``UnicodeEncodeError``. Raised in the grader, any of these made the notebook "not graded" (a
grader failure, regraded forever): a learner could dodge their own 0 at will. Here every such
input is a :class:`Rejected` answer instead: it is not run (a stub is), its exercise scores 0
and the reason is reported. Nothing else in the grader calls ``ast.parse`` on learner text.

Contract: :func:`parse` returns one of

* :class:`Parsed`: the tree of what the kernel will compile (``python``), within the bounds
  below, so recursive visitors (the screen, the rewrite, ``ast.unparse``) stay far from the
  interpreter's recursion limit;
* :class:`NotPython`: a syntax error, in plain Python *and* after IPython's own transformation
  (what the kernel does to a cell): run as written, it fails in the kernel like any syntax
  error, running nothing;
* :class:`Rejected`: anything this process will not or cannot process (too large, too deep,
  too many nodes, NUL characters, text that is not valid Unicode, any exception while
  parsing), with the reason in words.

The bounds, checked before the tree is walked by anything recursive: :data:`MAX_CHARS` before
parsing (it bounds the parser's time too: CPython's parser is linear here, and its own stack
checks turn deeper nesting into the exceptions caught below), then :data:`MAX_DEPTH` and
:data:`MAX_NODES` over the tree, walked iteratively. The course's deepest answer is 16 levels
and its largest 283 nodes.

What the kernel compiles is what is parsed here: IPython runs a cell through its input
transformer (magics, ``!`` shell escapes, ``?`` help, ``/f x`` and ``,f x`` call escapes,
``>>>`` and ``...:`` prompts, a uniformly indented cell) and compiles with top-level ``await``
allowed. Before, the grader parsed the source as written: an indented cell or ``/exec "..."``
was a syntax error here, so neither the screen nor the run-time guard saw it, and the kernel
ran it. Source that IPython changes is returned as :class:`Parsed` with ``ipython=True`` and
the transformed text, so callers screen and rewrite what will run (the screen refuses such
answers: answers are graded as plain Python). No course answer or release cell is changed by
IPython's transformation (all 1,102 code cells checked).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

MAX_CHARS = 256 * 1024  # one answer cell (autograder.judge.answers refuses larger ones earlier)
MAX_DEPTH = 100         # AST levels: the recursive visitors use about 3 frames per level
MAX_NODES = 50_000      # every node costs each visitor some microseconds and ~100 bytes

# Top-level `await` is allowed in the kernel (IPython's autoawait), so it is here.
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass(frozen=True)
class Parsed:
    """``tree`` is what the kernel compiles; ``python`` its text (``ipython``: after IPython's
    transformation, which changed the source)."""

    tree: ast.Module
    python: str
    ipython: bool = False


@dataclass(frozen=True)
class NotPython:
    """A syntax error in the kernel too: ``reason`` is Python's message, ``line`` its line
    number in the cell (0: unknown) and ``text`` that line, as the learner wrote it."""

    reason: str
    line: int = 0
    text: str = ""


@dataclass(frozen=True)
class Rejected:
    """Source this process will not process; ``reason`` says why, in words for a person."""

    reason: str


def _first_line(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text[:120]}" if text else type(err).__name__


def _bounded(tree: ast.AST) -> str:
    """"" when ``tree`` is within :data:`MAX_DEPTH` and :data:`MAX_NODES`, else why not.
    Iterative: a tree too deep for a recursive walk is measured without one."""
    todo: list[tuple[ast.AST, int]] = [(tree, 1)]
    nodes = 0
    while todo:
        node, depth = todo.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep"
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES:,} syntax nodes"
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return ""


def _compile(text: str) -> ast.Module | SyntaxError | Rejected:
    try:
        tree = compile(text, "<answer>", "exec", _FLAGS, dont_inherit=True)
    except SyntaxError as err:
        return err
    except RecursionError:
        return Rejected("too deeply nested or too long an expression for the grader to read")
    except MemoryError:
        return Rejected("too deeply nested for the grader to read")
    except Exception as err:  # noqa: BLE001 - learner text: whatever fails, the answer is refused
        return Rejected(f"the grader could not read it ({_first_line(err)})")
    return tree if isinstance(tree, ast.Module) else Rejected("not a module")


# Lines IPython's transformer may rewrite: an escape (`%`, `!`, `?`, `/`, `,`, `;`) first, a
# `?` last, or `= %` / `= !` (a magic or shell output assigned). It applies one rewrite at a
# time and tokenizes the whole cell again after each, up to 500 times: 500 `%time 1` lines in
# front of a long list took 84 s of the grader's time (red team of #29). More candidate lines
# than MAX_IPYTHON_LINES, or candidates x characters over MAX_IPYTHON_WORK, and the cell is
# refused before IPython reads it: about a second of tokenizing at most (the course's answers
# are plain Python, under 10 KB; a comment ending in `?` counts, hence the room).
MAX_IPYTHON_LINES = 8
MAX_IPYTHON_WORK = 512 * 1024
_IPYTHON_LINE = re.compile(r"^\s*[%!?/,;]|\?\s*$|=\s*[%!]")


def _ipython(source: str) -> str | Rejected:
    """What IPython's input transformer makes of ``source`` (what the kernel compiles)."""
    # Lines as IPython splits them (str.splitlines: \r, \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and
    # \u2029 break lines too; counting only \n let 500 magics through: red team of #29).
    candidates = sum(1 for line in source.splitlines() if _IPYTHON_LINE.search(line))
    if candidates > MAX_IPYTHON_LINES or candidates * len(source) > MAX_IPYTHON_WORK:
        return Rejected(f"{candidates} lines of IPython syntax (magics, shell escapes, help), more "
                        f"than the grader reads (answers are plain Python)")
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception as err:  # noqa: BLE001 - the kernel would fail on it as well
        return Rejected(f"IPython could not read it ({_first_line(err)})")


def _code_lines(text: str) -> list[str]:
    """``text``'s lines without blank lines at either end (IPython drops leading ones)."""
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def parse(source: object) -> Parsed | NotPython | Rejected:
    """``source`` (one answer cell) parsed as the kernel will compile it; never raises."""
    try:
        return _parse(source)
    except (RecursionError, MemoryError):
        return Rejected("too large or too deeply nested for the grader to read")
    except Exception as err:  # noqa: BLE001 - a bug here must refuse the answer, never stop grading
        return Rejected(f"the grader could not read it ({_first_line(err)})")


def _parse(source: object) -> Parsed | NotPython | Rejected:
    if not isinstance(source, str):
        return Rejected(f"not text ({type(source).__name__})")
    if len(source) > MAX_CHARS:
        return Rejected(f"{len(source) // 1024} KiB, over the {MAX_CHARS // 1024} KiB limit "
                        "for one answer cell")
    if "\x00" in source:
        return Rejected("contains a NUL character")
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        return Rejected("is not valid Unicode text (a lone surrogate)")
    transformed = _ipython(source)
    if isinstance(transformed, Rejected):
        return transformed
    # IPython may change even valid Python ("d = {\n    ...: 1}" loses its `...: ` as a
    # prompt): when it changes anything but blank lines at the ends, what runs is its text.
    ipython = _code_lines(transformed) != _code_lines(source)
    python = transformed if ipython else source
    found = _compile(python)
    if isinstance(found, SyntaxError):
        line = found.lineno if isinstance(found.lineno, int) and found.lineno > 0 else 0
        lines = python.splitlines()
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return NotPython(_first_line(found), line, text[:1000])
    if isinstance(found, Rejected):
        return found
    why = _bounded(found)
    if why:
        return Rejected(f"{why}, more than the grader reads in one answer")
    return Parsed(found, python, ipython)


def tree_or_none(source: object) -> ast.Module | None:
    """The tree of ``source`` when it parses as plain Python within the bounds, else None
    (for callers that only collect names from it)."""
    found = parse(source)
    return found.tree if isinstance(found, Parsed) and not found.ipython else None
