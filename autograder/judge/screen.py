"""Static screen of a learner's answer code: what it may not use, decided before anything runs.

Contract: :func:`screen` takes the source of one answer cell and returns the reasons it is
rejected (an empty list: accepted). A rejected answer is never executed: the grader runs a
stub in its place, so it scores 0 on its own exercise and cannot touch any other.

Why a screen: the hidden tests run in the same Python process as the answers (they call the
learner's functions), so code that reaches the interpreter's machinery (IPython's hooks and
input transformers, trace functions, frames, ``gc``, ``ctypes``, patching library functions,
pickles that run code) could make a failing test look passed. Answers in this course need
none of that, so the screen allows a small set of modules and refuses the escape hatches.
It is the first line of defence; the integrity checks in the kernel (:mod:`autograder.judge.integrity`)
catch what changes state anyway, and the sandbox bounds what any code can reach.

Rules (each reason names the line):

* imports only from :data:`ALLOWED_MODULES` (and their public submodules), never ``*``;
* no IPython magics or shell escapes (``%``, ``!``: they run through ``get_ipython()``), nor
  anything else IPython rewrites before running (an indented cell, prompts, ``/f x``): the
  screen reads what the kernel compiles, through :mod:`autograder.judge.learner_source`, which also
  refuses what is too large or too deep for the grader to read (never a grader failure);
* no names that reach the interpreter (:data:`FORBIDDEN_NAMES`, IPython's history
  variables, any ``__dunder__`` name); ``open`` only to read; ``torch.load`` / ``np.load``
  only without pickles (``weights_only``, ``allow_pickle``);
* no ``__dunder__`` attribute except :data:`ALLOWED_DUNDERS`, no ``_private`` attribute
  except :data:`ALLOWED_PRIVATE`, none of :data:`FORBIDDEN_ATTRIBUTES`;
* no assigning or deleting attributes of a module (``torch.equal = ...``, ``tc.check.x = ...``);
* no binding a forbidden name (``def eval``, ``import math as __builtins__``; tests never see
  a learner's rebinding of a built-in or of ``tc``/``torch``: they run with names bound
  privately, :mod:`autograder.judge.integrity`), no special methods other than
  :data:`ALLOWED_DUNDERS` (a class whose ``__eq__`` says yes to everything is not an answer),
  ``getattr``/``hasattr``/``type`` only called directly (never aliased or passed:
  ``peek = getattr``), ``type`` with one argument.

Course authors whose exercise needs something refused here extend the allow-lists below
(the pipeline test grades every solution, so a too-strict screen fails CI, not a learner).
"""

from __future__ import annotations

import ast
import re

from . import learner_source

ALLOWED_MODULES = frozenset({
    "torch", "numpy", "math", "cmath", "statistics", "time", "itertools", "functools",
    "collections", "typing", "dataclasses", "random", "operator", "string", "re", "copy",
    "enum", "abc", "fractions", "decimal", "heapq", "bisect", "matplotlib", "tensorcourse",
    "warnings", "textwrap", "numbers", "triton",
})
# Submodules answers may use, beyond the modules above themselves: an allow-list (a submodule
# not named here, such as numpy.testing or torch.utils.benchmark, is refused, at import and at
# run time). Intermediate packages (torch.utils) are listed so their listed children are reachable.
ALLOWED_SUBMODULES = frozenset({
    "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.nn.parameter",
    "torch.linalg", "torch.fft", "torch.func", "torch.special", "torch.random", "torch.types",
    "torch.autograd", "torch.autograd.graph", "torch.autograd.functional", "torch.autograd.forward_ad",
    "torch.optim", "torch.optim.lr_scheduler", "torch.utils", "torch.utils.data",
    "torch.utils.checkpoint", "torch.utils.hooks", "torch.cuda", "torch.amp", "torch.cpu",
    "torch.backends", "torch.backends.cudnn", "torch.backends.cuda", "torch.backends.mps",
    "torch.compiler", "torch.export", "torch.fx", "torch.testing", "torch.distributions",
    "torch.profiler", "torch.masked", "torch.sparse", "torch.nested", "torch.mps",
    "numpy.random", "numpy.linalg", "numpy.fft", "numpy.typing",
    "tensorcourse.check", "tensorcourse.device", "tensorcourse.timing",
    "matplotlib.pyplot", "matplotlib.colors", "matplotlib.cm", "matplotlib.patches",
    "triton.language", "collections.abc",
})
# Public submodules that still hand out code execution or global hooks.
FORBIDDEN_MODULES = frozenset({
    "torch.library", "torch.utils.cpp_extension", "torch.hub", "torch.package",
    "torch.multiprocessing", "torch.distributed", "torch.overrides", "numpy.ctypeslib",
    "numpy.f2py", "numpy.distutils", "tensorcourse.distributed",
})
FORBIDDEN_NAMES = frozenset({
    "get_ipython", "exec", "eval", "compile", "globals", "locals", "vars", "dir", "setattr",
    "delattr", "breakpoint", "help", "memoryview", "display",
    "In", "Out", "_ih", "_oh", "_dh", "_i", "_ii", "_iii", "__", "___",
})
_HISTORY_NAME = re.compile(r"^_(i?\d+)$")
# Forbidden names that stay forbidden as attributes (tensorcourse.viz.widgets.get_ipython);
# not `eval`, `compile` or `vars`, which torch (Module.eval, torch.compile) and re define
# harmlessly: the run-time guard refuses the built-ins themselves, by identity, however reached.
_FORBIDDEN_AS_ATTRIBUTES = frozenset({"get_ipython", "globals", "locals", "breakpoint", "display"})
_PRIVATE_FIELD = re.compile(r"\{[^{}]*[.\[]\s*_")
# Built-ins that read an attribute by a name computed at run time: allowed only as a direct
# call with a constant, screened name (`getattr(x, "shape")`), never passed around.
_DYNAMIC = frozenset({"getattr", "hasattr", "type"})

ALLOWED_DUNDERS = frozenset({
    "__init__", "__name__", "__call__", "__len__", "__getitem__", "__torch_function__",
    "__torch_dispatch__", "__new__", "__repr__", "__str__", "__doc__",
    # protocols an honest answer implements (context managers, iterators, containers);
    # comparisons and conversions (__eq__, __bool__, __float__...) stay refused: a result
    # that answers them itself could pass a plain `assert result == expected`.
    "__enter__", "__exit__", "__iter__", "__next__", "__contains__", "__setitem__",
    "__post_init__", "__missing__", "__reversed__",
})
ALLOWED_PRIVATE = frozenset({
    "_base", "_version", "_is_view", "_make_subclass", "_asdict", "_fields", "_replace",
    "_make", "_values", "_indices", "_nnz",
})
FORBIDDEN_ATTRIBUTES = frozenset({
    # attribute access by a computed name, passed around as a function; code run from strings
    "attrgetter", "methodcaller", "runstring", "update_wrapper", "singledispatch",
    "singledispatchmethod", "ABCMeta", "EnumMeta", "EnumType",
    # pickles and native code run arbitrary code (torch.load and np.load: see _Screen.visit_Call)
    "loads", "load_library", "fromfile", "tofile", "from_file",
    # frames, code objects and generator internals reach the interpreter
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "gi_frame",
    "gi_code", "cr_frame", "ag_frame", "tb_frame", "tb_next", "co_code",
    # global modes that intercept every torch call (the checkers' too)
    "TorchFunctionMode", "TorchDispatchMode", "BaseTorchFunctionMode",
    "set_default_device", "register_package",
})


def _module_allowed(name: str) -> str | None:
    """None when ``import name`` is allowed, else the reason."""
    parts = name.split(".")
    if parts[0] not in ALLOWED_MODULES:
        return f"imports `{name}` (answers may import only {', '.join(sorted(ALLOWED_MODULES))})"
    if any(p.startswith("_") for p in parts):
        return f"imports the private module `{name}`"
    for i in range(1, len(parts) + 1):
        if ".".join(parts[:i]) in FORBIDDEN_MODULES:
            return f"imports `{name}`, which can run code outside the answer or hook every torch call"
    if len(parts) > 1 and name not in ALLOWED_SUBMODULES:
        return f"imports `{name}` (answers may import only listed submodules: autograder/judge/screen.py)"
    return None


def _attribute_problem(attr: str) -> str | None:
    if attr in _FORBIDDEN_AS_ATTRIBUTES:
        return f"uses `.{attr}` (reaches the notebook's or interpreter's internals)"
    if attr in FORBIDDEN_ATTRIBUTES:
        return f"uses `.{attr}` (can run code the grader cannot see, or reach the interpreter)"
    if attr.startswith("__") and attr.endswith("__"):
        return None if attr in ALLOWED_DUNDERS else f"uses the special attribute `.{attr}`"
    if attr.startswith("_") and attr not in ALLOWED_PRIVATE:
        return f"uses the private attribute `.{attr}`"
    return None


def _name_problem(name: str) -> str | None:
    if name in FORBIDDEN_NAMES or _HISTORY_NAME.match(name):
        return f"uses `{name}` (reaches the notebook's or interpreter's internals)"
    if name.startswith("__") and name.endswith("__"):
        return f"uses the special name `{name}`"
    return None


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Screen(ast.NodeVisitor):
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.protected: frozenset[str] = frozenset()   # the release's own names (screen())
        self._checked: set[int] = set()  # calls to open/load whose arguments were checked
        # Names bound to modules in this answer, plus the ones every notebook imports.
        self.modules: set[str] = {"torch", "np", "numpy", "tc", "tensorcourse", "math", "nn", "F",
                                  "plt", "statistics", "time", "builtins", "sys", "os"}

    def flag(self, node: ast.AST, reason: str) -> None:
        self.problems.append(f"line {getattr(node, 'lineno', '?')}: {reason}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bound(node, alias.asname)
            reason = _module_allowed(alias.name)
            if reason:
                self.flag(node, reason)
            self.modules.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        reason = "uses a relative import" if node.level else _module_allowed(module)
        if reason:
            self.flag(node, reason)
        for alias in node.names:
            self._bound(node, alias.asname or alias.name)
            if alias.name == "*":
                self.flag(node, f"uses `from {module} import *`")
                continue
            full = f"{module}.{alias.name}"
            if alias.name == "load" and module.split(".")[0] in ("torch", "numpy"):
                self.flag(node, f"imports `{full}` by name (call {module}.load with its safe "
                                "arguments instead)")
            elif _attribute_problem(alias.name):
                self.flag(node, str(_attribute_problem(alias.name)))
            elif any(full == m or full.startswith(m + ".") for m in FORBIDDEN_MODULES):
                self.flag(node, f"imports `{full}`, which can run code outside the answer or "
                                "hook every torch call")
            self.modules.add(alias.asname or alias.name)

    def _bound(self, node: ast.AST, name: str | None) -> None:
        """A name this answer binds (def, class, import as, argument, except as)."""
        if name is None:
            return
        reason = _name_problem(name)
        if name.startswith("__") and name.endswith("__") and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in ALLOWED_DUNDERS:
            reason = None  # a method such as __init__ or __torch_function__
        elif name.startswith("__") and name.endswith("__") and isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            reason = (f"defines the special method `{name}` (a result that answers comparisons "
                      "or conversions itself is not graded)")
        if reason:
            self.flag(node, reason)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._bound(node, node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bound(node, node.name)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._bound(node, node.arg)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._bound(node, node.name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "open" and id(node) not in self._checked:
            self.flag(node, "uses `open` other than in a call")
        if node.id in _DYNAMIC and id(node) not in self._checked:
            # `peek = getattr` or `reduce(getattr, ...)` would reach any attribute unseen.
            self.flag(node, f"uses `{node.id}` other than in a direct call")

        reason = _name_problem(node.id)
        if reason:
            self.flag(node, reason)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        reason = _attribute_problem(node.attr)
        if node.attr == "load" and id(node) not in self._checked \
                and _root_name(node.value) in ("torch", "np", "numpy"):
            reason = "uses torch.load/np.load other than in a call"
        if reason:
            self.flag(node, reason)
        if isinstance(node.ctx, (ast.Store, ast.Del)) and _root_name(node.value) in self.modules:
            self.flag(node, f"changes `{ast.unparse(node)}`, part of a library the tests rely on")
        self.generic_visit(node)

    def _keyword(self, node: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in node.keywords if k.arg == name), None)

    def _check_open(self, node: ast.Call) -> None:
        """``open`` may read; writing could reach ``/proc/self/mem`` (the process's own memory)."""
        mode = node.args[1] if len(node.args) > 1 else self._keyword(node, "mode")
        if mode is None:
            return
        if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                and not set(mode.value) & set("wax+")):
            self.flag(node, "opens a file for writing (save with torch.save or np.save instead)")

    def _check_load(self, node: ast.Call, root: str) -> None:
        """``torch.load``/``np.load`` may read tensors and arrays, never pickles (they run code)."""
        if root in ("np", "numpy"):
            allow = self._keyword(node, "allow_pickle")
            if allow is not None and not (isinstance(allow, ast.Constant) and allow.value is False):
                self.flag(node, "loads a pickle (allow_pickle), which can run any code")
            return
        weights = self._keyword(node, "weights_only")
        if isinstance(weights, ast.Constant) and weights.value is True:
            return
        if weights is None and _torch_loads_weights_only():
            return
        self.flag(node, "calls torch.load without weights_only=True (a pickle can run any code)")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            self._checked.add(id(func))
            self._check_open(node)
        if isinstance(func, ast.Attribute) and func.attr == "load" \
                and _root_name(func.value) in ("torch", "np", "numpy"):
            self._checked.add(id(func))
            self._check_load(node, str(_root_name(func.value)))
        if isinstance(func, ast.Name) and func.id in _DYNAMIC:
            self._checked.add(id(func))
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) != 1:
            self.flag(node, "calls type() to build a class (write a class statement instead)")
        if any(k.arg in ("assigned", "updated") for k in node.keywords) or (
                isinstance(func, ast.Attribute) and func.attr == "wraps" and len(node.args) > 1):
            self.flag(node, "copies chosen attributes between functions (use functools.wraps(f))")
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.flag(node, "calls getattr with a computed name")
            else:
                reason = _attribute_problem(name.value)
                if reason:
                    self.flag(node, reason)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        # `checks = tc.check` makes `checks` a module too: `checks.same_value = ...` is a patch.
        value = node.value
        if isinstance(value, (ast.Name, ast.Attribute)) and _root_name(value) in self.modules:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.modules.add(target.id)
        self.generic_visit(node)

    def _attribute_targets(self, node: ast.AST, target: ast.AST, what: str) -> None:
        if any(isinstance(t, ast.Attribute) for t in ast.walk(target)):
            self.flag(node, f"{what} an attribute (assign it with `obj.name = value` instead)")

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._attribute_targets(node, node.target, "loops into")
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._attribute_targets(node, item.optional_vars, "binds `with ... as`")
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._attribute_targets(node.iter, node.target, "loops into")
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._attribute_targets(node, target, "deletes")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # str.format reads attributes and keys by name in C: `"{0.__globals__}".format(f)`.
        if isinstance(node.value, str) and _PRIVATE_FIELD.search(node.value):
            self.flag(node, "a format field reaches a private or special name")

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            reason = _name_problem(name)
            if reason:
                self.flag(node, reason)
            elif name in self.protected:
                # the test restores the release's names before it runs; a function running
                # during the test could rebind one again through `global`
                self.flag(node, f"rebinds `{name}`, which the release defines for its own "
                                "code (give your variable another name)")


def _torch_loads_weights_only() -> bool:
    """torch >= 2.6 defaults ``torch.load`` to ``weights_only=True`` (read without importing torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = (int(x) for x in version("torch").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (2, 6)


MAGIC = ("uses an IPython magic or shell escape (% or !): answers are graded as plain Python")
IPYTHON_SYNTAX = ("is rewritten by IPython before it runs (an indented cell, `>>>` or `...:` "
                  "prompts, `?` help, `/f x` or `,f x` call escapes): answers are graded as "
                  "plain Python")


def screen(source: str, protected: frozenset[str] = frozenset()) -> list[str]:
    """Reasons the answer ``source`` may not run (empty: it may). Never executes anything, and
    never raises: source the grader cannot read is refused (:mod:`autograder.judge.learner_source`).
    ``protected``: names the release's own cells bind, which a ``global`` statement may not name.

    Source that is a syntax error for the kernel too is accepted: it fails on its own when run.
    """
    found = learner_source.parse(source)
    if isinstance(found, learner_source.Rejected):
        return [f"not read by the grader: {found.reason}"]
    if isinstance(found, learner_source.NotPython):
        return []
    try:
        visitor = _Screen()
        visitor.protected = protected
        visitor.visit(found.tree)
        problems = visitor.problems
    except Exception as err:  # noqa: BLE001 - within the bounds this is a bug of ours; still refuse
        return [f"not read by the grader: the screen failed on it ({type(err).__name__})"]
    if found.ipython:
        # Always refused: what runs would be IPython's translation, not the source as written.
        # Its get_ipython() calls (for a magic) are not the learner's: reported only if the
        # learner wrote get_ipython too.
        if "get_ipython" not in source:
            problems = [p for p in problems if "`get_ipython`" not in p]
        problems = [MAGIC if "get_ipython()" in found.python else IPYTHON_SYNTAX, *problems]
    return list(dict.fromkeys(problems))
