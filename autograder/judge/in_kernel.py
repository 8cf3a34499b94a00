"""What runs inside the learner's kernel, before any learner code: the guard and the test runner.

This file is never imported by the grader, and the sandbox cannot import it (``autograder/``
is hidden from the kernel): :mod:`autograder.judge.integrity` reads its text and sends it as the
first cell, then calls ``_tio_make_guard(policy, release_names, variants)`` with this run's values as
data (a JSON text decoded in the kernel), binds what it returns under random names and
deletes the function. So it imports nothing from ``autograder`` and defines nothing at its top
level but that one function: everything else is local to it, out of the notebook's globals.

``policy``: the run-time attribute guard's rules (:func:`autograder.judge.rewrite.policy`).
``release_names``: ``{sha256 of a release cell: the names it binds}``
(:func:`autograder.judge.integrity.release_names`).
``variants``: this submission's variants, ``{exercise: [number, params]}`` (empty: the published
ones), put where ``tensorcourse.variants.mine`` reads them (:mod:`autograder.judge.variants`).

It returns ``(guard, run_test)``: ``guard(token)`` prints ``TIO-OK token`` when nothing the
tests rely on changed since the bootstrap, else ``TIO-TAMPER token what``; ``run_test(token,
source, aliases, keep)`` runs a hidden test with the names it relies on bound privately and
prints ``TIO-PASS``/``TIO-FAIL`` and the ``TIO-VALUE`` records the grader decides outside
(:mod:`autograder.judge.values`). tests/test_in_kernel.py imports this file and runs both in an
IPython shell of its own.
"""

def _tio_make_guard(policy, release_names, variants=None):
    import builtins
    import math
    import operator
    import statistics
    import sys
    import threading
    import time

    import numpy
    import torch
    import torch.nn.functional

    # (torch._dynamo is not imported here: it costs as much as torch; when a notebook imports it,
    # it re-wraps torch.manual_seed, which `unchanged` below accepts)
    from IPython import get_ipython

    import tensorcourse
    import tensorcourse.check
    import tensorcourse.fakework  # the timing tests' recording workloads (01, 02)
    import tensorcourse.misconceptions
    import tensorcourse.variants
    if variants:
        # This submission's variants, for the notebook to show and its tests to run on; the
        # grader decides their answers again outside (autograder.judge.variants).
        import json as _json
        import os as _os
        _os.environ[tensorcourse.variants.GRADER_ENV] = _json.dumps(variants)
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
    import importlib.util
    import types
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
    import importlib
    import json
    import linecache
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

    # -- values for the grader to decide outside (autograder.judge.values) -----------------------
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
    kept = {}
    sha256 = hashlib.sha256

    def keep_release_names(result):
        names = release_names.get(sha256(result.info.raw_cell.encode()).hexdigest(), ())
        for name in names:
            if name in shell.user_ns:
                kept[name] = shell.user_ns[name]
    shell.events.register("post_run_cell", keep_release_names)

    def run_test(token, source, aliases, keep=None):
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
            # grader's own catalog outside (autograder.pipeline.unit.named_misconception)
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
            # What the test defined and a later course cell reads (``keep``; None: anything)
            # goes back to the notebook; the rest, its hidden inputs included, never reaches a
            # later answer (autograder.judge.integrity.later_reads).
            for name, value in ns.items():
                if name not in aliases and name != "__builtins__" and before.get(name) is not value \
                        and (keep is None or name in keep):
                    shell.user_ns[name] = value
        write(f"\nTIO-PASS {token}", flush=True)

    # -- the run-time attribute guard of answers (autograder.judge.rewrite) ----------------------
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
