"""Feedback for exercises: compare a learner's answer with the expected one.

Test cells use them under ``assert`` (a test cell never ends in a bare
expression, which nbgrader would read as partial credit)::

    assert tc.check.same_tensor(outer_sum(a, b), a[:, None] + b[None, :], name="outer_sum(a, b)")

Each checker returns ``True`` when the answer is right and otherwise raises
``AssertionError`` with the learner's result shown next to the expected one,
so the message says *what* is wrong (type, shape, dtype, device, values), not
only *that* it is wrong. Types are checked exactly: an object that merely claims
to be equal (a lying ``__eq__``) or a NumPy array where a tensor is asked for
does not pass.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Iterable, Mapping
from types import CodeType, MappingProxyType, TracebackType
from typing import Any, Callable

import torch

from . import misconceptions as _misconceptions

__all__ = ["same_tensor", "same_value", "raises", "reveal", "summarize", "shown", "misconception",
           "parts"]


# Taken when this module is imported, before any learner code runs: a learner who later
# reassigns torch.equal or torch.allclose does not change what these checkers compare with.
_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_allclose, _isclose, _equal = torch.allclose, torch.isclose, torch.equal

# Set by the course's grader only (never by a learner's notebook): called as
# ``_recorder(kind, actual, expected, options)`` on entry to each checker, so that the grader
# can decide the same check again outside the learner's process (autograder/judge/values.py).
_recorder: Callable[[str, Any, Any, dict], None] | None = None


def _record(kind: str, actual: Any, expected: Any, options: dict) -> None:
    if _recorder is not None:
        _recorder(kind, actual, expected, options)


def _scored(options: dict, points: float | None, name: str) -> dict:
    """A check's recorded options, with its points (partial credit: see :class:`parts`) and
    its name to match it by when it has points; unchanged for a check without."""
    if points is None:
        return options
    if type(points) not in (int, float) or not 0 <= points < float("inf"):
        raise ValueError("points must be a number, 0 or more")
    return {**options, "points": float(points), "name": name}


def _library_name(t: type) -> str | None:
    """``t``'s name if it really is a class of Python, torch or NumPy (found under that name in
    that module, by identity), else ``None``. Read without running the learner's code: a class
    they define can claim any ``__module__`` and ``__name__``, and a metaclass any attribute."""
    module = type.__getattribute__(t, "__module__")
    name = type.__getattribute__(t, "__qualname__")
    if type(module) is not str or type(name) is not str:
        return None
    if module.split(".")[0] not in ("builtins", "torch", "numpy") or module not in sys.modules:
        return None
    found: Any = sys.modules[module]
    for part in name.split("."):
        found = getattr(found, part, None)
    return type.__getattribute__(t, "__name__") if found is t else None


def _kind(x: Any) -> str:
    """The name of ``x``'s type for a message's first line: a learner's own class (whose name
    their code can set to any text) is not named there; the lines below show it."""
    return _library_name(type(x)) or "an object of a class defined in your code"


_SHOWN = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size,
          torch.layout, torch.memory_format)


def shown(x: Any, max_chars: int = 200, _depth: int = 0) -> str:
    """``x`` for a test's message, without running any code of the learner's: built-in values,
    torch's dtypes/devices/sizes and tensors as their repr; containers of those, element by
    element; anything else by the name of its type ("an object of a class defined in your
    code"). A test writes ``f"got {tc.check.shown(value)}"``, never ``{value!r}``: a learner's
    ``__repr__`` could compute any text, and the message is shown as the course's."""
    t = type(x)

    def one_of(*types: type) -> bool:  # by identity: `in` would run a metaclass's __eq__
        return any(t is k for k in types)
    try:
        if one_of(*_SHOWN):
            text = repr(x)
        elif one_of(*_TENSOR_TYPES):
            text = summarize(x, max_chars)
        elif one_of(tuple, list) and _depth < 3:
            inner = ", ".join(shown(i, max_chars, _depth + 1) for i in x[:8])
            more = ", ..." if len(x) > 8 else ""
            text = (f"({inner}{more}{',' if len(x) == 1 else ''})" if t is tuple
                    else f"[{inner}{more}]")
        elif t is dict and _depth < 3:
            items = list(x.items())[:8]
            text = "{" + ", ".join(f"{shown(k, max_chars, _depth + 1)}: {shown(v, max_chars, _depth + 1)}"
                                   for k, v in items) + (", ...}" if len(x) > 8 else "}")
        elif isinstance(x, type):  # a class: named only if it is the library's own
            text = _library_name(x) or "a class defined in your code"
        else:  # exceptions too, by type only: their text may come from the learner's code
            text = _kind(x)
    except ValueError:  # an int past the digit limit, say
        text = f"a very large {t.__name__}" if one_of(*_SHOWN) else _kind(x)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def summarize(x: Any, max_chars: int = 300) -> str:
    """A short, one-paragraph rendering of ``x`` for feedback messages."""
    if isinstance(x, torch.Tensor):
        head = f"tensor of shape {tuple(x.shape)}, dtype {x.dtype}, device {x.device}"
        if x.numel() == 0 or x.layout != torch.strided:
            return head
        with torch.no_grad():
            body = repr(x.detach().cpu())
        body = " ".join(body.split())
        if len(body) > max_chars:
            body = body[: max_chars - 5] + " ...)"
        return f"{head}: {body}"
    text = repr(x)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def _fail(name: str, problem: str, actual: Any, expected: Any, named: str | None = None
          ) -> AssertionError:
    text = (f"{name}: {problem}\n  yours:    {shown(actual, 300)}\n"
            f"  expected: {summarize(expected)}")
    return AssertionError(text + (f"\n{_misconceptions.line(named)}" if named else ""))


def _named(misconception: str | None, diagnose: Mapping[str, Any] | None,
           matches: Callable[[Any], bool]) -> str | None:
    """The misconception a failed check names: the first of ``diagnose`` whose predicted
    result the learner's matches, else ``misconception``. Ids are checked up front, so a
    typo in a test fails for the author, not only when a learner is wrong."""
    for mid in ([misconception] if misconception else []) + list(diagnose or {}):
        _misconceptions.get(mid)
    for mid, predicted in (diagnose or {}).items():
        try:
            if matches(predicted):
                return mid
        except Exception:  # a prediction of another type or shape: not this misconception
            continue
    return misconception


def _tensor_problem(actual: Any, expected: torch.Tensor, rtol: float | None, atol: float | None,
                    check_dtype: bool, check_device: bool) -> str | None:
    """What is wrong with ``actual`` as ``expected`` (``None``: nothing). Records nothing."""
    # Exact classes: a subclass (even of Parameter) can override comparisons through
    # __torch_function__ and pass any check; a real Parameter is a plain tensor underneath.
    if not any(type(actual) is t for t in _TENSOR_TYPES):  # `is`: a metaclass may lie in ==
        return f"expected a torch.Tensor, got {_kind(actual)}"
    if actual.shape != expected.shape:
        return f"wrong shape {tuple(actual.shape)} (expected {tuple(expected.shape)})"
    if check_dtype and actual.dtype != expected.dtype:
        return f"wrong dtype {actual.dtype} (expected {expected.dtype})"
    if check_device and actual.device != expected.device:
        return f"wrong device {actual.device} (expected {expected.device})"
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    if a.dtype != e.dtype:
        a, e = a.to(torch.promote_types(a.dtype, e.dtype)), e.to(torch.promote_types(a.dtype, e.dtype))
    if a.is_floating_point() or a.is_complex():
        kwargs = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}
        ok = _allclose(a, e, equal_nan=True, **kwargs)
        close = _isclose(a, e, equal_nan=True, **kwargs)
    else:
        ok = _equal(a, e)
        close = a == e
    if ok:
        return None
    bad = (~close).nonzero()
    where = tuple(bad[0].tolist()) if len(bad) else ()
    return (f"{len(bad)} of {a.numel()} values differ; first at index {where}: "
            f"yours {a[where].item()!r}, expected {e[where].item()!r}") if a.dim() else \
        "the value differs"


def same_tensor(
    actual: Any,
    expected: torch.Tensor,
    *,
    name: str = "result",
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    check_device: bool = True,
    misconception: str | None = None,
    diagnose: Mapping[str, torch.Tensor] | None = None,
    points: float | None = None,
) -> bool:
    """``actual`` is a ``torch.Tensor`` with ``expected``'s shape, dtype, device and values.

    Floating-point values are compared with ``torch.allclose`` (``rtol``/``atol``
    default to torch's own defaults); other dtypes exactly. NaNs in the same places
    count as equal.

    On failure the message's last line names a misconception (``tensorcourse.misconceptions``)
    when one is given: the first id of ``diagnose`` (id -> the tensor a learner holding that
    belief would return) that ``actual`` matches under the same comparison, else
    ``misconception``.
    """
    if not isinstance(expected, torch.Tensor):
        raise TypeError("same_tensor(actual, expected): `expected` must be a torch.Tensor")
    _record("same_tensor", actual, expected, _scored(
        {"rtol": rtol, "atol": atol, "check_dtype": check_dtype, "check_device": check_device},
        points, name))
    problem = _tensor_problem(actual, expected, rtol, atol, check_dtype, check_device)
    if problem is None:
        return True
    named = _named(misconception, diagnose, lambda p: _tensor_problem(
        actual, p, rtol, atol, check_dtype, check_device) is None)
    raise _fail(name, problem, actual, expected, named)


def same_value(actual: Any, expected: Any, *, name: str = "answer",
               misconception: str | None = None, diagnose: Mapping[str, Any] | None = None,
               points: float | None = None) -> bool:
    """``actual`` has exactly ``expected``'s type and compares equal to it.

    Use for predictions (``torch.dtype``, ``bool``, ``tuple`` of ints, ``str``...).
    ``True`` does not pass for ``1``, and a tuple does not pass for a list.
    Containers are checked element by element, so the message points at the
    first wrong entry. ``misconception``/``diagnose`` as in :func:`same_tensor` (a
    prediction matches when it is the same value by these rules).
    """
    # Recorded once, here (record() in the grader takes the caller two frames up): not for
    # each element, nor for the same_tensor a tensor element is checked with.
    _record("same_value", actual, expected, _scored({}, points, name))
    if misconception is None and not diagnose:
        return _same_value(actual, expected, name)
    try:
        return _same_value(actual, expected, name)
    except AssertionError as err:
        named = _named(misconception, diagnose, lambda p: _equal_value(actual, p))
        raise AssertionError(f"{err}\n{_misconceptions.line(named)}" if named else str(err)) from None


def _same_value(actual: Any, expected: Any, name: str) -> bool:
    if type(actual) is not type(expected):
        raise _fail(name, f"expected a value of type {type(expected).__name__}, "
                    f"got {_kind(actual)}", actual, expected)
    if isinstance(expected, dict):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            raise _fail(name, f"keys differ: missing {shown(missing)}, unexpected {shown(extra)}",
                        actual, expected)
        for key in expected:
            _same_value(actual[key], expected[key], f"{name}[{key!r}]")
        return True
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise _fail(name, f"length {len(actual)} (expected {len(expected)})",
                        actual, expected)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _same_value(a, e, f"{name}[{i}]")
        return True
    if isinstance(expected, torch.Tensor):
        return same_tensor(actual, expected, name=name)
    equal = actual == expected
    if not isinstance(equal, bool) or not equal:
        raise _fail(name, "wrong value", actual, expected)
    return True


def _equal_value(actual: Any, expected: Any) -> bool:
    """Whether :func:`same_value` would pass, without recording or raising."""
    try:
        return _same_value(actual, expected, "")
    except AssertionError:
        return False


def raises(
    exception: type[BaseException],
    fn: Callable[[], Any],
    *,
    name: str = "call",
    match: str | None = None,
    misconception: str | None = None,
    points: float | None = None,
) -> bool:
    """Calling ``fn()`` raises ``exception`` (whose message contains ``match``, if given).
    On failure the message's last line names ``misconception``, if given."""
    named = _named(misconception, None, lambda p: False)
    tail = f"\n{_misconceptions.line(named)}" if named else ""
    try:
        result = fn()
    except BaseException as err:
        _record("raises", err, exception, _scored({"match": match}, points, name))
        if not isinstance(err, exception) and not isinstance(err, Exception):
            raise
        if not isinstance(err, exception):
            raise AssertionError(f"{name}: expected {exception.__name__}, got {_kind(err)}\n"
                                 f"  its message: {_message_of(err)}{tail}") from None
        if match is not None and match not in str(err):
            raise AssertionError(f"{name}: raised {_kind(err)} as expected, but its "
                                 f"message does not mention {match!r}\n"
                                 f"  its message: {_message_of(err)}{tail}"
                                 ) from None
        return True
    _record("raises", result, exception, _scored({"match": match}, points, name))
    raise AssertionError(f"{name}: expected {exception.__name__}, but it returned "
                         f"{shown(result)}{tail}")


class misconception:  # noqa: N801 - used as `with tc.check.misconception(...)`, like a function
    """Name a misconception for every check of a block that has none of its own::

        with tc.check.misconception("01/modifies-input"):
            assert torch.equal(x_in, before), "center_rows must not modify its input in place"

    An ``AssertionError`` raised in the block by the test itself or by these checkers gets
    the misconception's line appended (unless its message already names one). Any other
    exception (the learner's code raised) becomes an ``AssertionError`` that gives only the
    exception's type, chained to it so the notebook still shows where it was raised: its text
    may come from the learner's code and could quote a hidden test.
    """

    def __init__(self, misconception_id: str, *, name: str = "the check") -> None:
        _misconceptions.get(misconception_id)  # a typo fails for the test's author
        self.id, self.name = misconception_id, name
        self._block_code: Any = None

    def __enter__(self) -> misconception:
        self._block_code = sys._getframe(1).f_code  # the test's own code, by identity
        return self

    def __exit__(self, etype: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if err is None or not isinstance(err, Exception):
            return False  # passed, or KeyboardInterrupt / SystemExit: not ours to rename
        line = _misconceptions.line(self.id)
        if type(err) is AssertionError and self._raised_by_course(err, tb):
            text = err.args[0] if err.args else ""
            if _misconceptions.named_in(text):
                return False
            raise AssertionError(f"{text}\n{line}" if text else f"{self.name} failed\n{line}"
                                 ) from None
        raise AssertionError(f"{self.name}: your code raised {_kind(err)}\n{line}") from err

    def _raised_by_course(self, err: BaseException, tb: TracebackType | None) -> bool:
        """A message the course wrote: no text or a plain string, raised by the test's block
        or this module (:func:`_raised_by`)."""
        if len(err.args) > 1 or (err.args and type(err.args[0]) is not str):
            return False
        return _raised_by(tb, {**_OWN_CODES, id(self._block_code): self._block_code})


class parts:  # noqa: N801 - used as `with tc.check.parts() as p:`, like a function
    """Partial credit, for a test whose checks are separate questions (a predict exercise: one
    check per prediction)::

        with tc.check.parts() as p:
            for expr in EXPRESSIONS:
                with p.part():
                    assert tc.check.same_value(predicted[expr], truth[expr], name=expr, points=0.5)

    A check that fails inside ``with p.part():`` is remembered and the test goes on with the
    next part; leaving the outer block raises if any part failed ("2 of 7 parts wrong; the
    first: ..."), so the test still fails as a whole. The grader then awards the ``points=`` of
    each check that passed, decided outside the learner's process against the solution's run
    (autograder/judge/values.py), never more than the cell's points.

    The contract: parts are for independent questions, each worth the same. A function
    exercise stays all-or-nothing (a function right on 3 of 5 inputs is not 60% right), as does
    any test whose later checks only make sense when earlier ones passed. Inside a part, as in
    :class:`misconception`, only a message the course wrote is kept; an error the learner's code
    raised is shown by its type alone.
    """

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def __enter__(self) -> parts:
        return self

    def part(self) -> _Part:
        return _Part(self)

    def __exit__(self, etype: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if err is not None or not self.failures:
            return False  # passed, or an error outside every part: the test fails as usual
        raise AssertionError(f"{len(self.failures)} of {self.count} parts wrong; the first: "
                             f"{self.failures[0]}")


class _Part:
    def __init__(self, owner: parts) -> None:
        self.owner = owner
        self._block_code: Any = None

    def __enter__(self) -> _Part:
        self._block_code = sys._getframe(1).f_code  # the test's own code, by identity
        self.owner.count += 1
        return self

    def __exit__(self, etype: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if err is None or not isinstance(err, Exception):
            return False
        ours = (type(err) is AssertionError and not (len(err.args) > 1 or (
            err.args and type(err.args[0]) is not str))
            and _raised_by(tb, {**_OWN_CODES, id(self._block_code): self._block_code}))
        text = (err.args[0] if err.args else "a check failed") if ours else \
            f"your code raised {_kind(err)}"
        self.owner.failures.append(text)
        return True  # the next part runs


def _message_of(err: BaseException) -> str:
    """An exception's text as one escaped line when torch or Python made it, else its type:
    never a learner's ``__str__``, never a line break (the last line may name a misconception)."""
    text = _plain_text(err)
    return repr(text)[:300] if text is not None else f"({_kind(err)}; its text is not shown)"


def _is_right(yours: Any, truth: Any) -> bool:
    try:
        return _equal_value(yours, truth)
    except Exception:
        return False


def _unanswered(mine: Any, real: Any) -> bool:
    """Whether ``mine`` still holds a template placeholder: ``None`` where the truth is not
    ``None``, also inside a tuple or list shaped like the truth (``(None, None)`` templates)."""
    if mine is None:
        return real is not None
    if (isinstance(mine, (tuple, list)) and isinstance(real, (tuple, list))
            and len(mine) == len(real)):
        return any(_unanswered(m, r) for m, r in zip(mine, real))
    return False


def reveal(yours: Any, truth: Mapping[Any, Any], *, name: str = "prediction") -> None:
    """Show a self-learner their prediction next to what torch really does.

    For the ungraded "Check yourself" cell after a predict exercise: ``truth`` is
    computed by torch in that cell, with the same keys as ``yours``. Prints one row
    per key (yours, truth, right or wrong) and a last line "N of M right.". It reveals
    nothing while any answer still holds the template's ``None`` (also inside a tuple
    such as ``(None, None)``), so a learner commits to every answer first. Returns
    ``None``, so that a Check-yourself cell ending with the call prints only the table
    (a returned count would be echoed by Jupyter as a stray number). Graded tests are
    unaffected: they compare with torch themselves.
    """
    if not isinstance(truth, Mapping):
        raise TypeError(f"reveal(yours, truth): `truth` must be a dict, got {type(truth).__name__}")
    if not isinstance(yours, Mapping):
        print(f"{name} should be a dict like the template in the exercise, got "
              f"{type(yours).__name__}. Restore the template, fill it in, and run this cell again.")
        return
    missing = [k for k in truth if k not in yours or _unanswered(yours[k], truth[k])]
    if missing:
        print(f"Commit to every answer first: {len(missing)} of {len(truth)} entries of {name} "
              f"are still missing or None ({', '.join(map(repr, missing[:4]))}"
              f"{', ...' if len(missing) > 4 else ''}). Fill them in, run your answer cell, "
              "then run this cell again.")
        return
    rows = [(repr(k), summarize(yours[k], 40), summarize(truth[k], 40), _is_right(yours[k], truth[k]))
            for k in truth]
    widths = [max(len(r[i]) for r in rows + [("key", "yours", "truth", True)]) for i in range(3)]
    print(f"{'key':<{widths[0]}}  {'yours':<{widths[1]}}  {'truth':<{widths[2]}}")
    for key, mine, real, ok in rows:
        print(f"{key:<{widths[0]}}  {mine:<{widths[1]}}  {real:<{widths[2]}}  "
              f"{'right' if ok else 'WRONG'}")
    right = sum(ok for *_, ok in rows)
    print(f"{right} of {len(rows)} right." + ("" if right == len(rows) else
          " Re-read the section for the wrong ones before you look at why."))


def _codes_of(codes: Iterable[Any]) -> dict[int, Any]:
    """These code objects and every one nested in them (functions, lambdas, classes), by id:
    identity, never equality (a learner's compile() of the same source makes equal code
    objects, under any file name). Held in the dict, so the ids stay theirs. The grader's
    test runner uses it too (autograder/judge/integrity.py)."""
    found: dict[int, Any] = {}
    todo = list(codes)
    while todo:
        code = todo.pop()
        if isinstance(code, CodeType) and id(code) not in found:
            found[id(code)] = code
            todo += [c for c in code.co_consts if isinstance(c, CodeType)]
    return found


def _raised_by(tb: TracebackType | None, codes: Mapping[int, Any]) -> bool:
    """Every frame of ``tb`` runs one of ``codes`` (by identity) and the innermost stopped at
    a ``raise`` or an ``assert``, not at a call: an error raised in C by an object the learner
    handed over (a class whose ``__name__`` they set) is theirs. Shared with the grader's
    test runner, which decides by it whose message feedback may quote."""
    last = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if codes.get(id(code)) is not code:
            return False
        last, tb = tb, tb.tb_next
    return last is not None and last.tb_frame.f_code.co_code[last.tb_lasti] == _RAISE


def _plain_text(err: BaseException) -> str | None:
    """The text of an exception of Python's, torch's or NumPy's made with one plain string,
    else ``None`` (a learner's class, or an object whose ``__str__`` would run their code)."""
    args = err.args
    if _library_name(type(err)) and len(args) == 1 and type(args[0]) is str:
        return args[0]
    return None


_RAISE = dis.opmap["RAISE_VARARGS"]

# This module's own code objects, by id (see _codes_of); read-only.
_OWN_CODES = MappingProxyType(_codes_of(
    v.__code__ for v in [*list(globals().values()), *vars(misconception).values(),
                         *vars(parts).values(), *vars(_Part).values()]
    if getattr(v, "__module__", None) == __name__ and hasattr(v, "__code__")))
