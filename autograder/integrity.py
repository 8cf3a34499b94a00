"""Tamper-evident tests: what the kernel must show for a test to count as passed.

Contract: :func:`instrument` takes the rebuilt notebook and returns the notebook to execute
and a :class:`Plan` of fresh random tokens (``secrets``, one set per run). :func:`verdicts`
reads the executed notebook and returns, per test grade id, whether it passed and why not.

The executed notebook gets, from the grader (never from the learner):

1. a bootstrap cell, first: imports the libraries the tests use and defines a guard under a
   random name, holding a snapshot of what tests rely on: the functions of ``builtins``,
   ``torch`` (and ``torch.Tensor``), ``torch.nn.functional``, ``numpy``, ``math``,
   ``tensorcourse.check``...; IPython's input transformers, AST transformers, custom exception
   handlers and the shell's methods; ``sys`` hooks (trace, profile, except, display, import
   machinery); torch's function and dispatch mode stacks, grad mode and default dtype;
2. at the end of every test cell, a line printing ``TIO-PASS <token>``: positive evidence that
   the test's code ran to its end. An error, however silenced, skips it; a test cell a hook
   skipped or rewrote never prints a token it was never shown before it ran;
3. after every test cell, an integrity cell calling the guard with another token: it prints
   ``TIO-OK <token>`` when nothing in the snapshot changed, ``TIO-TAMPER <token> <what>`` if
   something did.

A test counts as passed only when its cell has no error, printed its pass token, and the
integrity cell after it printed its OK token, all in a kernel that stayed alive. A tampered
state scores 0 for that test and every later one (the change can reach them all) and is
reported. Scores are computed here, outside the sandbox, from the executed notebook.

Limits (see autograder/README.md, "Threat model"): the tokens reach the kernel in the source
of the cells that print them, so code that controls IPython's input pipeline *and* hides
itself from the guard could forge them; the static screen (:mod:`autograder.screen`) keeps
answers from reaching IPython, frames or native code in the first place.
"""

from __future__ import annotations

import ast
import re
import secrets
from dataclasses import dataclass, field

import nbformat
from nbformat.notebooknode import NotebookNode

from . import learner_source
from .answers import is_answer, is_test, meta
from .execute import KERNEL_DIED
from .rewrite import policy

ROLE = "tio_role"  # cell metadata key for the cells the grader adds

_BOOTSTRAP = r'''
def _tio_make_guard():
    import builtins, sys, threading
    import math, operator, statistics, time
    import numpy, torch, torch.nn.functional, tensorcourse, tensorcourse.check
    import tensorcourse.misconceptions
    import tensorcourse.fakework  # the timing tests' recording workloads (01, 02)
    # (torch._dynamo is not imported here: it costs as much as torch; when a notebook imports it,
    # it re-wraps torch.manual_seed, which `unchanged` below accepts)
    from IPython import get_ipython
    shell = get_ipython()
    # A one-line cell also goes through IPython's prefilter: with automagic on, `who('{expr}')`
    # becomes a line magic whose {expr} IPython evaluates in the namespace, unscreened and
    # unguarded (red team, issue #29: 14/14 without solving); autocall and macros likewise run
    # what the grader never read. Answers are plain Python: the prefilter's checkers are all off
    # (%magics, !commands and ? still work: the input transformers handle those).
    shell.automagic = False
    shell.autocall = 0
    for _checker in shell.prefilter_manager.checkers:
        _checker.enabled = False
    write = builtins.print
    # The tests' own copy of the checkers, loaded here from the same file and never put where
    # learner code can name it: a checker a learner holds (functools.partial(tc.check.same_value,
    # name=...)) and calls from their answer is then not the course's code, and what it raises
    # is not quoted as the course's message. Tests see it as `tc.check` (resolve below).
    import importlib.util, types
    _spec = importlib.util.spec_from_file_location("tensorcourse._tio_check", tensorcourse.check.__file__)
    private_check = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(private_check)
    private_tc = types.ModuleType("tensorcourse", tensorcourse.__doc__)
    vars(private_tc).update(vars(tensorcourse))
    private_tc.check = private_check
    spaces = {"builtins": builtins, "torch": torch, "torch.Tensor": torch.Tensor,
              "torch.nn.Parameter": torch.nn.Parameter, "torch.nn.functional": torch.nn.functional,
              "torch.autograd": torch.autograd, "torch.linalg": torch.linalg, "numpy": numpy,
              "numpy.ndarray": numpy.ndarray, "math": math, "operator": operator,
              "statistics": statistics, "time": time, "tensorcourse": tensorcourse,
              "tensorcourse.check": tensorcourse.check,
              "tensorcourse.check.misconception": tensorcourse.check.misconception,
              "tensorcourse.misconceptions": tensorcourse.misconceptions,
              "tensorcourse.fakework": tensorcourse.fakework,
              **{f"tensorcourse.fakework.{c.__name__}": c for c in (
                  tensorcourse.fakework._Recorded, tensorcourse.fakework.ScriptedWork,
                  tensorcourse.fakework.FakeAsyncDevice)},
              "the tests' tensorcourse": private_tc, "the tests' check": private_check,
              "the tests' check.misconception": private_check.misconception}
    spaces.update({f"shell {c.__name__}": c for c in type(shell).__mro__[:-1]})
    swapped = {"input", "raw_input", "getpass"}  # ipykernel replaces these on every request

    def callables(space):
        return {k: v for k, v in list(vars(space).items())
                if not k.startswith("_") or k.startswith("__") and k.endswith("__")
                if callable(v) and not (space is builtins and (k.startswith("_") or k in swapped))}
    baseline = {label: callables(space) for label, space in spaces.items()}
    # A class also changes by *gaining* a name: Tensor.cpu lives on a base class, so a new
    # torch.Tensor.cpu would shadow it unseen by the baseline above. (Pickling a tensor adds
    # __slotnames__, a cache.)
    classes = {label: set(vars(space)) for label, space in spaces.items()
               if isinstance(space, type) and not label.startswith("shell ")}
    # The checkers' module, whole: private names (_allclose, _recorder) and any name added to it
    # (a new `isinstance` there would shadow the built-in inside the checkers).
    checks = dict(vars(tensorcourse.check))
    classes["tensorcourse.check"] = set(checks)
    private_checks = dict(vars(private_check))
    classes["the tests' check"] = set(private_checks)
    # The block form's class, whole too: its private helper decides whose message is quoted.
    named_block = private_check.misconception
    block = dict(vars(named_block))

    def code_of(f):
        return (getattr(f, "__code__", None), getattr(f, "__defaults__", None),
                getattr(f, "__kwdefaults__", None))
    # A function keeps its identity when its code is swapped (update_wrapper with __code__).
    codes = {(label, k): code_of(v) for label, space in baseline.items() for k, v in space.items()
             if type(v) is type(code_of)}
    block_codes = {k: code_of(v) for k, v in block.items() if type(v) is type(code_of)}
    modules = {name: sys.modules.get(name) for name in ("builtins", "torch", "numpy", "math",
               "tensorcourse", "tensorcourse.check", "torch.nn.functional")}
    shell_methods = {k for label in spaces if label.startswith("shell ") for k in baseline[label]}

    def hooks():
        return {"input_transformers_cleanup": tuple(shell.input_transformers_cleanup),
                "input_transformers_post": tuple(shell.input_transformers_post),
                "ast_transformers": tuple(shell.ast_transformers),
                "custom_exceptions": tuple(shell.custom_exceptions),
                "sys.settrace": sys.gettrace(), "sys.setprofile": sys.getprofile(),
                "threading trace": getattr(threading, "_trace_hook", None),
                "threading profile": getattr(threading, "_profile_hook", None),
                "sys.displayhook": sys.displayhook,
                "sys.meta_path": tuple(sys.meta_path), "sys.path_hooks": tuple(sys.path_hooks),
                "torch function modes": torch._C._len_torch_function_stack(),
                "torch dispatch modes": torch._C._len_torch_dispatch_stack(),
                "grad mode": torch.is_grad_enabled(),
                "tensorcourse.check._recorder": getattr(tensorcourse.check, "_recorder", None),
                "the tests' check._recorder": getattr(private_check, "_recorder", None),
                "answer guard": (shell.user_ns.get("__tio_getattr__"),
                                 shell.user_ns.get("__tio_setattr__"), shell.user_ns.get("__tio_type__")),
                "post_run_cell": tuple(shell.events.callbacks.get("post_run_cell", ())),
                # flat: `same` compares a tuple's items by identity (True/False, small ints)
                "prefilter": (shell.automagic, shell.autocall, *shell.prefilter_manager.checkers,
                              *(c.enabled for c in shell.prefilter_manager.checkers)),
                "default dtype": torch.get_default_dtype()}
    hook_baseline = hooks()

    def same(a, b):
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(x is y for x, y in zip(a, b))
        return a is b or (type(a) is type(b) and type(a) in (int, bool) and a == b)

    torch_dir = torch.__file__.rsplit("/", 1)[0] + "/"
    library_dirs = tuple({p.rsplit("/", 1)[0] + "/" for p in (torch.__file__, numpy.__file__)}
                         | {sys.prefix + "/", sys.base_prefix + "/"})

    def unchanged(old, new):
        # torch wraps some of its own functions lazily (importing torch._dynamo wraps
        # torch.manual_seed): accept a wrapper defined inside torch whose __wrapped__ chain
        # reaches the original. Code written in a notebook never has a file inside torch.
        seen = 0
        while new is not old and seen < 8:
            code = getattr(new, "__code__", None)
            if code is None or not code.co_filename.startswith(torch_dir):
                return False
            new, seen = getattr(new, "__wrapped__", None), seen + 1
        return new is old

    # -- the test runner: hidden tests run here, with names bound privately ---------------
    import importlib, json, linecache
    builtin_names = set(vars(builtins))
    compile_, exec_, json_dumps = builtins.compile, builtins.exec, json.dumps
    import_module, base_exception = importlib.import_module, BaseException


    codes_of = private_check._codes_of  # by id, never equality (see there)
    check_codes = codes_of([v.__code__ for space in (private_check, private_check.misconception,
                                                     private_check.parts, private_check._Part)
                            for v in vars(space).values() if type(v) is type(codes_of)])
    named_in = tensorcourse.misconceptions.named_in
    misconception_line = tensorcourse.misconceptions.line
    library_name = private_check._library_name
    raised_by, plain_text = private_check._raised_by, private_check._plain_text

    def resolve(path):
        module, _, attr = path.partition(":")
        if module == "tensorcourse" and attr in ("", "check") or module == "tensorcourse.check":
            value = private_check if module == "tensorcourse.check" or attr == "check" else private_tc
            return getattr(value, attr) if module == "tensorcourse.check" and attr else value
        value = import_module(module)
        if not attr:
            return value
        try:
            return getattr(value, attr)
        except AttributeError:
            return import_module(f"{module}.{attr}")  # `from torch.utils import data`

    # -- values for the grader to decide outside (autograder.values) -----------------------
    current = {"token": None, "codes": frozenset()}
    getframe, tensor_types = sys._getframe, (torch.Tensor, torch.nn.Parameter)
    scalar_types, cap = (bool, int, str, type(None)), 4096

    def qualname(t):
        return f"{t.__module__}.{t.__qualname__}"

    def encode(x, depth=0):
        t = type(x)
        name = qualname(t)
        if depth > 6:
            return {"t": name, "u": "nested too deep"}
        if t in scalar_types:
            if t is str and len(x) > 10000:
                return {"t": name, "u": "too long"}
            return {"t": name, "v": x}
        if t is float:
            return {"t": name, "v": repr(x)}
        if t in tensor_types:
            head = {"t": name, "dtype": str(x.dtype), "shape": list(x.shape), "device": str(x.device)}
            if x.layout != torch.strided or x.numel() > cap or x.device.type == "meta":
                return {**head, "u": "too large or not strided"}
            d = x.detach().cpu()
            if d.is_complex():
                d = torch.view_as_real(d)
            return {**head, "v": d.reshape(-1).tolist()}
        if t in (list, tuple, dict) and len(x) > cap:
            return {"t": name, "u": "too long"}
        if t in (list, tuple):
            return {"t": name, "items": [encode(i, depth + 1) for i in x]}
        if t is dict:
            return {"t": name, "items": [[encode(k, depth + 1), encode(v, depth + 1)]
                                         for k, v in x.items()]}
        if t in (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format):
            return {"t": name, "v": str(x)}
        if isinstance(x, BaseException):
            return {"t": "exception", "mro": [qualname(c) for c in t.__mro__],
                    "message": str(x)[:2000]}
        if isinstance(x, type):
            return {"t": "class", "v": qualname(x)}
        return {"t": name, "u": "a type the grader does not decode"}

    def record(kind, actual, expected, options):
        token = current["token"]
        # Only checks the test itself calls (by code identity): not the learner's own calls,
        # not same_value's recursion into same_tensor.
        if token is None or id(getframe(3).f_code) not in current["codes"]:
            return
        line = json_dumps({"kind": kind, "actual": encode(actual), "expected": encode(expected),
                           "options": options})
        write(f"\nTIO-VALUE {token} {line}", flush=True)
    private_check._recorder = record  # the learner's own calls to tc.check record nothing

    # -- what the release's own cells bound, as they bound it -----------------------------
    # Tests may use names the release defines (data, helper classes). A learner's cell can
    # rebind them; tests see the value the release's cell left, taken right after it ran.
    import hashlib
    release_names, kept = __RELEASE_NAMES__, {}
    sha256 = hashlib.sha256

    def keep_release_names(result):
        names = release_names.get(sha256(result.info.raw_cell.encode()).hexdigest(), ())
        for name in names:
            if name in shell.user_ns:
                kept[name] = shell.user_ns[name]
    shell.events.register("post_run_cell", keep_release_names)

    def run_test(token, source, aliases):
        filename = f"<test {token[:8]}>"
        # Registered like IPython registers a cell: inspect (TorchScript, explain) finds the source.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = compile_(source, filename, "exec")
        ours = {**codes_of([code]), **check_codes}
        ns = dict(shell.user_ns)
        for name in builtin_names & set(ns):
            if name not in aliases and not name.startswith("__"):
                del ns[name]  # a learner's `isinstance = ...` does not reach the test
        ns.update(kept)  # release-defined names, as the release left them
        # ... and in the notebook's own globals too: release functions the test calls look
        # their helpers up there (09's HostReads reads `is_device_data`), and an answer cell
        # that rebound one made the release's code count what it chose (red team of #29).
        shell.user_ns.update(kept)
        for name, path in aliases.items():
            ns[name] = resolve(path)  # `tc`, `torch`... as the release imported them
        ns["__builtins__"] = builtins
        before = dict(ns)
        current["token"], current["codes"] = token, codes_of([code])
        try:
            exec_(code, ns)
        except base_exception as err:
            frames, lines, tb = [], [], err.__traceback__
            while tb is not None:
                frames.append(tb.tb_frame.f_code)
                lines.append(tb.tb_lineno)
                tb = tb.tb_next
            inner = frames[1:]  # frames[0] is this runner
            # Ours: every frame is the test's or the checkers' code, and the innermost stopped at
            # a `raise` or an `assert` (tensorcourse.check._raised_by: the checkers' own rule).
            kind = "ours" if inner and raised_by(err.__traceback__.tb_next, ours) else (
                "learner" if any(id(c) not in ours and not c.co_filename.startswith(library_dirs)
                                 for c in inner) else "library")
            # Quoted only when its text is a plain string the course's code gave it: never a
            # learner object's __str__, run here.
            plain = plain_text(err)
            text = plain.strip() if kind == "ours" and plain is not None else ""
            first = text.splitlines()[0][:300] if text else ""
            named = named_in(text)[:80] if text else ""
            try:  # the whole last line must be the catalog's own line for that id
                if named and text.splitlines()[-1] != misconception_line(named):
                    named = ""
            except KeyError:
                named = ""
            # and checked again against the
            # grader's own catalog outside (autograder.unit.named_misconception)
            # Its type's name only if it really is Python's, torch's or NumPy's (by identity in
            # that module: a learner's class can claim __module__ = "builtins" and any name).
            ename = (library_name(type(err)) or "an exception of a class defined in your code")[:80]
            # Where the learner's own code was when it raised: function names and line numbers
            # only; the grader quotes the lines from the learner's answer it holds (causes.py).
            # (A check's `your code raised X` chains the learner's error: its frames count.)
            where = [[c.co_name[:80], n] for c, n in zip(frames[1:], lines[1:])
                     if id(c) not in ours and not c.co_filename.startswith(library_dirs)]
            cause = err.__cause__
            tb = cause.__traceback__ if not where and isinstance(cause, base_exception) else None
            while tb is not None:
                c = tb.tb_frame.f_code
                if id(c) not in ours and not c.co_filename.startswith(library_dirs):
                    where.append([c.co_name[:80], tb.tb_lineno])
                tb = tb.tb_next
            where = where[-5:]
            write(f"\nTIO-FAIL {token} " + json_dumps({"kind": kind, "ename": ename,
                                                       "first": first, "misconception": named,
                                                       "where": where}),
                  flush=True)
            raise
        finally:
            current["token"] = None
            for name, value in ns.items():  # what the test defined, later cells may use
                if name not in aliases and name != "__builtins__" and before.get(name) is not value:
                    shell.user_ns[name] = value
        write(f"\nTIO-PASS {token}", flush=True)

    # -- the run-time attribute guard of answers (autograder.rewrite) ----------------------
    policy = __POLICY__
    module_type = type(builtins)
    allowed_modules, forbidden_modules = set(policy["allowed_modules"]), set(policy["forbidden_modules"])
    allowed_special, refused_names = set(policy["allowed_special"]), set(policy["refused_names"])
    module_names = {k: set(v) for k, v in policy["module_names"].items()}
    load_from = set(policy["load_from"])
    real_getattr, real_setattr = builtins.getattr, builtins.setattr
    permission_error = PermissionError

    allowed_submodules = set(policy["allowed_submodules"])

    # The built-ins that run or reach code, and the shell: refused by identity when a module
    # hands them out under any name (a module that did `from builtins import exec`).
    forbidden_objects = tuple(getattr(builtins, n) for n in (
        "exec", "eval", "compile", "globals", "locals", "vars", "breakpoint", "__import__",
        "getattr", "setattr", "delattr", "open")) + (get_ipython,)

    def module_allowed(name):
        parts = name.split(".")
        return (parts[0] in allowed_modules and not any(p.startswith("_") for p in parts)
                and not any(".".join(parts[:i]) in forbidden_modules for i in range(1, len(parts) + 1))
                and (len(parts) == 1 or name in allowed_submodules))

    def refuse(what):
        write(f"\nTIO-REFUSED {what}", flush=True)
        raise permission_error(f"the grader does not let answers use {what}")

    def answer_getattr(obj, name, *default):
        if type(name) is not str:
            raise TypeError("getattr(): attribute name must be a string")
        if name.startswith("_") and name not in allowed_special:
            refuse(f"the private or special attribute .{name}")
        if name in refused_names:
            refuse(f".{name}")
        if not isinstance(obj, module_type):
            # Only a module's attributes are checked further: that keeps the guard transparent
            # to torch.compile (Dynamo inlines it without a graph break on tensors and methods).
            if name in ("format", "format_map") and (type(obj) is str or obj is str):
                return answer_format(obj, name)  # its fields read attributes by name, in C
            return real_getattr(obj, name, *default)
        where = real_getattr(obj, "__name__", "?")
        if not module_allowed(where):
            refuse(f"the module {where}")
        if where in module_names and name not in module_names[where]:
            refuse(f"{where}.{name}")
        if name == "load" and where.split(".")[0] in load_from and where not in load_from:
            refuse(f"{where}.load (it reads pickles)")
        if where == "functools" and name == "wraps":
            return answer_wraps  # the default attributes only: never `assigned=("__code__",)`
        value = real_getattr(obj, name, *default)
        if any(value is f for f in forbidden_objects):
            refuse(f"{where}.{name} (the interpreter's {real_getattr(value, '__name__', '?')})")
        if isinstance(value, module_type) and not module_allowed(real_getattr(value, "__name__", "?")):
            refuse(f"the module {real_getattr(value, '__name__', '?')} (through .{name})")
        return value

    def answer_setattr(obj, name, value):
        if name.startswith("_") and name not in allowed_special:
            refuse(f"assigning the private or special attribute .{name}")
        if isinstance(obj, module_type):
            refuse(f"assigning {real_getattr(obj, '__name__', '?')}.{name} (a library the tests use)")
        if isinstance(obj, type) and (real_getattr(obj, "__module__", "") != "__main__"
                                      or any(obj is v for v in kept.values())):
            refuse(f"assigning {obj.__name__}.{name} (a class the tests use)")
        if type(obj) is function_type and any(obj is v for v in kept.values()):
            # a function the release defined: tests name it in messages and call it
            refuse(f"assigning .{name} of a function the release defined (the tests use it)")
        real_setattr(obj, name, value)

    real_type = type
    function_type = type(answer_setattr)
    import functools as _functools

    def answer_wraps(wrapped, *more, **options):
        if more or options:
            refuse("functools.wraps with chosen attributes (it can copy a function's __code__)")
        return _functools.wraps(wrapped)

    def answer_type(*args):
        if len(args) != 1:
            refuse("type() with more than one argument (a class built from a dictionary)")
        kind = real_type(args[0])
        if issubclass(kind, real_type):
            refuse("type() of a class (its metaclass builds classes with any special methods)")
        return kind

    def answer_format(owner, name):
        """str.format and format_map, bound (`s.format`) or not (`str.format(s, ...)`),
        refusing fields that reach private or special names."""
        method = real_getattr(owner, name)

        def refuse_fields(text):
            if type(text) is not str:
                return  # str.format(non-str) raises TypeError by itself
            for _literal, field, spec, _conv in formatter.parse(text):
                for part in (field or "", spec or ""):
                    if "." in part or "[" in part:
                        if any(p.strip().startswith("_") for p in part.replace("[", ".").split(".")[1:]):
                            refuse("a format field reaching a private or special name")

        if owner is str:
            def unbound(text, *args, **kwargs):
                refuse_fields(text)
                return method(text, *args, **kwargs)
            return unbound

        def check(*args, **kwargs):
            refuse_fields(owner)
            return method(*args, **kwargs)
        return check
    import string as _string
    formatter = _string.Formatter()

    shell.user_ns["__tio_getattr__"], shell.user_ns["__tio_setattr__"] = answer_getattr, answer_setattr
    shell.user_ns["__tio_type__"] = answer_type
    hook_baseline = hooks()  # now with the answer guard in place

    def guard(token):
        changed = []
        for label, space in spaces.items():
            now = vars(space)
            changed += [f"{label}.{k}" for k, v in baseline[label].items()
                        if not unchanged(v, now.get(k, None))]
        changed += [f"{label}.{k} (added)" for label, names in classes.items()
                    for k in vars(spaces[label]) if k not in names and k != "__slotnames__"]
        changed += [f"tensorcourse.check.{k}" for k, v in checks.items()
                    if vars(tensorcourse.check).get(k, None) is not v and k != "_recorder"]
        changed += [f"the tests' check.{k}" for k, v in private_checks.items()
                    if vars(private_check).get(k, None) is not v and k != "_recorder"]
        changed += [f"{label}.{k} (code)" for (label, k), was in codes.items()
                    if code_of(baseline[label][k]) != was]
        changed += [f"tensorcourse.check.misconception.{k}" for k, v in block.items()
                    if vars(named_block).get(k, None) is not v]
        changed += [f"tensorcourse.check.misconception.{k} (code)" for k, was in block_codes.items()
                    if code_of(block[k]) != was]
        changed += [f"sys.modules[{n!r}]" for n, m in modules.items() if sys.modules.get(n) is not m]
        changed += [f"shell.{k}" for k in vars(shell) if k in shell_methods]
        now_hooks = hooks()
        changed += [k for k, v in hook_baseline.items() if not same(v, now_hooks[k])]
        if changed:
            write(f"\nTIO-TAMPER {token} {','.join(changed[:8])}", flush=True)
        else:
            write(f"\nTIO-OK {token}", flush=True)
    return guard, run_test
'''


@dataclass
class Plan:
    """The tokens of one run: ``pass_tokens`` and ``ok_tokens`` by test grade id."""

    guard_name: str
    runner_name: str = ""
    pass_tokens: dict[str, str] = field(default_factory=dict)
    ok_tokens: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def bound_names(source: str) -> set[str]:
    """Names a cell binds at its top level (also inside top-level if/for/with/try blocks)."""
    tree = learner_source.tree_or_none(source)  # bounded: never raises, None if unreadable
    if tree is None:
        return set()
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
            continue
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
        for part in ("body", "orelse", "finalbody", "handlers"):
            todo += [n for n in getattr(node, part, []) if isinstance(n, ast.stmt)]
    return names


def release_names(nb: NotebookNode, answer_names: set[str]) -> dict[str, list[str]]:
    """``{sha256 of a release code cell: names it binds}``, less the answers' own names."""
    import hashlib

    found: dict[str, list[str]] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or is_answer(cell) or is_test(cell):
            continue
        names = sorted(bound_names(cell.source) - answer_names)
        if names:
            found[hashlib.sha256(cell.source.encode()).hexdigest()] = names
    return found


def trusted_aliases(nb: NotebookNode) -> dict[str, str]:
    """Names the release binds by importing, as ``{name: "module"}`` or ``"module:attr"``.

    Test cells see these names bound to what the release imported, whatever a learner's cell
    rebound them to (``tc = FakeChecks()``): they are resolved afresh when each test runs.
    Answer cells are the learner's and never count.
    """
    found: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or is_answer(cell):
            continue
        tree = learner_source.tree_or_none(cell.source)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        found[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        found[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        found[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return found


def _grader_cell(source: str, role: str, gid: str = "") -> NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata[ROLE] = {"role": role, "grade_id": gid}
    return cell


def instrument(nb: NotebookNode, answer_names: set[str] | None = None) -> tuple[NotebookNode, Plan]:
    """Add the bootstrap, pass lines and integrity cells (see module docstring)."""
    plan = Plan(guard_name=f"_tio_guard_{secrets.token_hex(12)}",
                runner_name=f"_tio_test_{secrets.token_hex(12)}")
    aliases = trusted_aliases(nb)
    bootstrap = (_BOOTSTRAP.replace("__POLICY__", repr(policy()))
                 .replace("__RELEASE_NAMES__", repr(release_names(nb, answer_names or set()))))
    cells = [_grader_cell(f"{bootstrap}\n{plan.guard_name}, {plan.runner_name} = _tio_make_guard()\n"
                          "del _tio_make_guard\n", "bootstrap")]
    for cell in nb.cells:
        if not is_test(cell):
            cells.append(cell)
            continue
        gid = meta(cell)["grade_id"]
        plan.order.append(gid)
        plan.pass_tokens[gid] = secrets.token_hex(16)
        plan.ok_tokens[gid] = secrets.token_hex(16)
        test = nbformat.from_dict(dict(cell))
        test.source = (f"{plan.runner_name}({plan.pass_tokens[gid]!r}, {cell.source!r}, "
                       f"{aliases!r})\n")
        test.metadata[ROLE] = {"role": "test", "grade_id": gid}
        cells.append(test)
        cells.append(_grader_cell(f"{plan.guard_name}('{plan.ok_tokens[gid]}')", "integrity", gid))
    out = nbformat.from_dict(dict(nb))
    out.cells = cells
    return out, plan


@dataclass
class Verdict:
    """One test's result: passed or not, and the reason shown to the instructor."""

    passed: bool
    reason: str = ""          # "", "failed", "timeout", "kernel died", "tampering: ..."
    tampered: str = ""        # what changed, when the integrity check caught something
    failure: dict = field(default_factory=dict)  # the runner's TIO-FAIL report, if any


def _stdout(cell: NotebookNode) -> list[str]:
    # One print can reach the notebook as several stream messages: join them before splitting.
    text = ""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            piece = out.get("text", "")
            # Outputs are the learner's: only text is read (a forged message may carry other types).
            text += "".join(p for p in piece if isinstance(p, str)) if isinstance(piece, list) \
                else piece if isinstance(piece, str) else ""
    return text.splitlines()


def errors(cell: NotebookNode) -> list[NotebookNode]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


_TAMPER = re.compile(r"^TIO-TAMPER (\S+) ?(.*)$")
_FAIL = re.compile(r"^TIO-FAIL (\S+) (\{.*\})$")


def clean_text(text: str) -> str:
    """``text`` as valid UTF-8: JSON from the kernel can carry lone surrogates (``"\\ud800"``),
    which no file or page can hold; they become ``\\ud800`` escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def failure_report(cell: NotebookNode, token: str) -> dict:
    """The test runner's account of why a test failed: where it was raised (``ours``: the test
    or ``tensorcourse.check``, by code identity; ``learner``; ``library``), its type and, for
    ours only, its first line and the misconception its last line names (unchecked here).
    Empty when the runner printed none (it never got that far)."""
    import json

    for line in _stdout(cell):
        m = _FAIL.match(line)
        if m and m.group(1) == token:
            try:  # printed in the learner's process: anything may be there
                data = json.loads(m.group(2))
                report: dict = {k: clean_text(str(data.get(k, "")))[:300]
                                for k in ("kind", "ename", "first", "misconception")}
                where = data.get("where", [])
                report["where"] = [(clean_text(w[0])[:80], w[1]) for w in where[:5]
                                   if type(w) is list and len(w) == 2 and type(w[0]) is str
                                   and type(w[1]) is int] if type(where) is list else []
                return report
            except Exception:  # noqa: BLE001 - unreadable (deep nesting, odd types): no report
                return {}
    return {}


def verdicts(executed: NotebookNode, plan: Plan) -> dict[str, Verdict]:
    """Per test grade id, whether it passed; tampering zeroes that test and every later one."""
    by_role: dict[tuple[str, str], NotebookNode] = {}
    for cell in executed.cells:
        role = cell.get("metadata", {}).get(ROLE)
        if role:
            by_role[(role["role"], role["grade_id"])] = cell
    result: dict[str, Verdict] = {}
    boot = by_role.get(("bootstrap", ""))
    if boot is None or errors(boot) or boot.get("execution_count") is None:
        # Runs before any learner code: its failure is the grader's, never tampering.
        what = errors(boot)[0].get("ename", "error") if boot is not None and errors(boot) else "not run"
        return {gid: Verdict(False, f"grader setup failed ({what})") for gid in plan.order}
    tamper = ""
    for gid in plan.order:
        test, check = by_role.get(("test", gid)), by_role.get(("integrity", gid))
        if test is None or check is None:
            result[gid] = Verdict(False, "not run")
            continue
        errs = errors(test) + errors(check)
        died = any(e.get("ename") == KERNEL_DIED for e in errs)
        if not tamper and not died and (test.get("execution_count") is None
                                        or check.get("execution_count") is None):
            result[gid] = Verdict(False, "not run")  # grading stopped before this cell
            continue
        if not tamper and not died:
            lines = _stdout(check)
            if f"TIO-OK {plan.ok_tokens[gid]}" not in lines:
                found = [m.group(2) for m in map(_TAMPER.match, lines)
                         if m and m.group(1) == plan.ok_tokens[gid]]
                tamper = found[0] if found else "the integrity check did not report"
        if tamper:
            result[gid] = Verdict(False, f"tampering: {tamper}", tamper)
        elif died:
            result[gid] = Verdict(False, "kernel died")
        elif errors(test):
            timeout = any(e.get("ename") == "CellTimeoutError" for e in errors(test))
            result[gid] = Verdict(False, "timeout" if timeout else "failed",
                                  failure=failure_report(test, plan.pass_tokens[gid]))
        elif f"TIO-PASS {plan.pass_tokens[gid]}" not in _stdout(test):
            result[gid] = Verdict(False, "tampering: the test did not run to its end, yet "
                                         "reported no error", "silenced error or skipped test")
            tamper = tamper or "silenced error or skipped test"
        else:
            result[gid] = Verdict(True)
    return result
