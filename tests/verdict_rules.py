"""Two rules every graded test cell keeps, read from its source (tests/test_release.py).

1. **A verdict decided outside the kernel.** The cell calls ``tc.check.same_value``,
   ``same_tensor`` or ``raises`` at least once, as its own code (not through a helper of another
   cell): those calls are what the grader records and decides again against the reference run
   (autograder/judge/values.py). :func:`check_calls` finds them.

2. **Expected values the learner never touched.** :func:`touched_expectations` flags a check
   whose expected value is computed from an object that the learner's code received before that
   value was computed. A learner's function that receives the objects a test later derives its
   expected value from can rewrite them so that any answer "matches" (issue #29: 06 Ex4 once
   rewrote each target into the model's own output, then returned zeros).

What rule 2 reads, statically, in each scope of the cell (the cell and each function it
defines), in evaluation order:

* *learner calls*: a call of a name the exercise's answer cell binds, of an object such a call
  returned, of a function the cell defines that makes a learner call (with its parameters mapped
  to the call's arguments), or a lambda whose body makes one;
* *handed*: every name read in a learner call's arguments, with every name it may share objects
  with (it was assigned from an expression reading the other, either way round), except through
  ``.clone()``, ``copy.deepcopy(...)``, ``.item()`` and ``.tolist()``, which make new objects;
* *tainted*: a name assigned from an expression that reads a handed or tainted name;
* not shared: values no one can change (numbers, strings, tuples of them, what ``len`` or
  ``.item()`` return), the learner's own functions and classes (``Fn.apply(x)``'s result
  "holds" ``Fn``, which nothing expected is made from), a name's old object once it is bound
  again, and, for a call of a helper the cell defines, anything its ``return`` does not hold;
  ``zip(a, b)`` and ``enumerate(literal)`` bind each loop name to its own elements;
* a check's *expected value*: the second argument (or ``expected=``) of ``same_value`` and
  ``same_tensor``; through a helper the cell defines, the arguments bound to the parameters the
  helper compares against. Reading a handed or tainted name there is a violation, as is one
  object passed to a helper both as what it hands the learner and as what it compares against.
  Loop bodies are read twice, so an object handed in one iteration counts in the next.

What it does not see (so it is a rule to write tests by, not a proof): objects reached from
names the learner's *answer cell* could have changed before the test ran (release data a test
reads: re-define it in the test, as CONTRIBUTING.md says); sharing through containers the test
mutates (``xs.append(a)`` does not make ``xs`` share ``a``); attributes and ``global`` state; a
helper defined in another cell. The values that matter for the score are decided outside the
kernel against the *reference* run's expected values anyway (rule 1); rule 2 keeps the
in-kernel verdict and the learner's feedback honest too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

CHECKERS = ("same_value", "same_tensor", "raises")
FRESH_METHODS = {"clone", "item", "tolist", "deepcopy"}  # `copy.deepcopy(x)` is an Attribute call too


def is_check(node: ast.AST, kinds: tuple[str, ...] = CHECKERS) -> bool:
    """``tc.check.<kind>(...)`` (any name before ``.check``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in kinds and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "check")


def check_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if is_check(n)]


def bound_names(source: str) -> set[str]:
    """The names an answer cell binds at its top level: what a test can call of the learner's."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def _reads(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _fresh(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in FRESH_METHODS)


VIEW_FUNCTIONS = {"reshape", "view", "narrow", "select", "squeeze", "unsqueeze", "flatten", "transpose",
                  "permute", "t", "as_strided", "split", "chunk", "unbind", "view_as_real",
                  "view_as_complex", "movedim", "diagonal", "broadcast_to", "from_numpy", "as_tensor",
                  "asarray", "frombuffer", "detach"}
IMMUTABLE_CALLS = {"len", "int", "float", "bool", "str", "complex", "repr", "isinstance", "type",
                   "id", "hash", "callable"}


def _shares(node: ast.AST | None, modules: frozenset[str] = frozenset()) -> set[str]:
    """Names whose objects the value of ``node`` may hold. What it reads, except: inside calls
    that copy (``.clone()``, ``copy.deepcopy``, ``.item()``, ``.tolist()``); modules' functions
    other than views (``torch.randn(n, generator=g)`` holds nothing of ``g``); a method's
    arguments (``x.add(y)`` may hold ``x``, not ``y``); arithmetic and comparisons (new objects for
    tensors and numbers; ``list + list`` sharing elements is not seen); modules themselves."""
    if node is None or _fresh(node) or isinstance(node, (ast.BinOp, ast.Compare, ast.UnaryOp,
                                                          ast.JoinedStr, ast.Constant)):
        return set()
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in modules else set()
    if isinstance(node, ast.Lambda):
        return _reads(node) - modules
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):  # what it yields, not
        return _shares(node.elt, modules) & _iterated(node)                # what it iterates
    if isinstance(node, ast.DictComp):
        return (_shares(node.key, modules) | _shares(node.value, modules)) & _iterated(node)
    if isinstance(node, ast.Call):
        func = node.func
        args = set().union(set(), *(_shares(a, modules) for a in node.args),
                           *(_shares(k.value, modules) for k in node.keywords))
        if isinstance(func, ast.Name):
            return set() if func.id in IMMUTABLE_CALLS else args  # not the function itself
        if isinstance(func, ast.Attribute):
            base = _reads(func.value)
            if base and base <= modules:   # torch.randn(...), F.mse_loss(...), np.asarray(...)
                return args if func.attr in VIEW_FUNCTIONS else set()
            return _shares(func.value, modules)
        return args | _shares(func, modules)
    out: set[str] = set()
    for child in ast.iter_child_nodes(node):
        out |= _shares(child, modules)
    return out


def _iterated(node: ast.AST) -> set[str]:
    """Names a comprehension's elements may hold: what its iterables hold (its loop variables
    stand for their elements) and anything else it reads."""
    loop_vars = set().union(*(_targets(g.target) for g in node.generators))
    return (_reads(node) - loop_vars) | {n for g in node.generators for n in _reads(g.iter)}


def _immutable(node: ast.AST | None) -> bool:
    """A value no one can change in place: a constant, a comparison, a number a call made."""
    if isinstance(node, (ast.Constant, ast.Compare, ast.JoinedStr)):
        return True
    if isinstance(node, ast.Tuple):
        return all(_immutable(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _immutable(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in IMMUTABLE_CALLS
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "item"


def _elements(node: ast.AST, literals: dict[str, ast.AST]) -> list[ast.AST] | None:
    """The element expressions iterating ``node`` yields, when it is a literal the cell wrote
    (``cases.items()`` of a dict display, a list of tuples), else ``None``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "enumerate"
            and len(node.args) == 1 and not node.keywords):
        inner = _elements(node.args[0], literals)
        return None if inner is None else [ast.Tuple(elts=[ast.Constant(value=i), e], ctx=ast.Load())
                                           for i, e in enumerate(inner)]
    method = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        method, node = node.func.attr, node.func.value
    if isinstance(node, ast.Name):
        node = literals.get(node.id)
    if isinstance(node, ast.Dict) and None not in node.keys:
        if method == "items":
            return [ast.Tuple(elts=[k, v], ctx=ast.Load()) for k, v in zip(node.keys, node.values)]
        return list(node.values) if method == "values" else list(node.keys)
    if isinstance(node, (ast.List, ast.Tuple)) and method is None:
        return list(node.elts)
    return None


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


@dataclass
class Helper:
    """What a function the cell defines does with its parameters."""
    params: list[str]
    handed: set[str] = field(default_factory=set)     # parameters it passes to the learner
    expected: set[str] = field(default_factory=set)   # parameters it compares against
    calls_learner: bool = False
    returns: set[str] = field(default_factory=set)    # names its return value may share


@dataclass
class _State:
    learner: set[str]                                  # learner names and what they returned
    helpers: dict[str, Helper]
    modules: frozenset[str]
    deep: bool = True
    shares: dict[str, set[str]] = field(default_factory=dict)
    literals: dict[str, ast.AST] = field(default_factory=dict)
    immutable: set[str] = field(default_factory=set)
    handed: set[str] = field(default_factory=set)
    tainted: set[str] = field(default_factory=set)
    expected_reads: set[str] = field(default_factory=set)  # for a helper's summary
    called: bool = False
    answer: set[str] = field(default_factory=set)      # the names the answer cell binds
    returns: set[str] = field(default_factory=set)     # what a helper's return value may share

    def copy(self) -> _State:
        return _State(set(self.learner), dict(self.helpers), self.modules, self.deep,
                      {k: set(v) for k, v in self.shares.items()}, dict(self.literals),
                      set(self.immutable), set(self.handed), set(self.tainted),
                      answer=set(self.answer))


def _callee(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


class _Scope:
    def __init__(self, state: _State, where: str, found: list[str]):
        self.s, self.where, self.found = state, where, found

    def shares(self, node: ast.AST | None) -> set[str]:
        """As :func:`_shares`; a call of a helper the cell defines shares what the helper's
        return value may share (``_reference(model, x)`` that deep-copies the model and returns
        new tensors shares nothing of its arguments)."""
        if (self.s.deep and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self.s.helpers):
            helper = self.s.helpers[node.func.id]
            bound = _bind(helper.params, node)
            return set().union(helper.returns - set(helper.params),
                               *(self.shares(bound[p]) for p in helper.returns if p in bound))
        return _shares(node, self.s.modules)

    # -- sharing ------------------------------------------------------------------------
    def _closure(self, names: set[str]) -> set[str]:
        """``names`` and every name that may share objects with them, either way round. Not
        through a value no one can change (``n = 2.0`` given to both the learner and the
        reference links nothing) nor through the learner's own functions and classes (what
        ``Fn.apply(x)`` returns "shares" ``Fn``, which no expected value is made from)."""
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen or name in self.s.modules:
                continue
            seen.add(name)
            if name in self.s.immutable or name in self.s.answer:
                continue
            todo += list(self.s.shares.get(name, ()))
            todo += [k for k, v in self.s.shares.items() if name in v]
        return seen

    def hand(self, names: set[str]) -> None:
        self.s.handed |= ((self._closure(names) if self.s.deep else names) - self.s.immutable
                          - self.s.answer)
        self.s.called = True

    def bad(self, names: set[str]) -> set[str]:
        return names & (self.s.handed | self.s.tainted)

    def flag(self, node: ast.AST, why: str) -> None:
        text = f"{self.where} line {getattr(node, 'lineno', '?')}: {why}"
        if text not in self.found:
            self.found.append(text)

    # -- expressions, in evaluation order ------------------------------------------------
    def learner_call(self, call: ast.Call) -> bool:
        name = _callee(call)
        return bool(_reads(call.func) & self.s.learner) or self.s.deep and (
            name in self.s.helpers and self.s.helpers[name].calls_learner)

    def expr(self, node: ast.AST | None) -> None:
        if node is None:
            return
        if isinstance(node, ast.Lambda):
            if any(isinstance(n, ast.Call) and self.learner_call(n) for n in ast.walk(node.body)):
                # called later, by whoever it is given to: it hands what it reads now
                self.hand(self.shares(node.body) - {a.arg for a in node.args.args})
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for gen in node.generators:
                self.expr(gen.iter)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts + [c for g in node.generators for c in g.ifs]:
                self.expr(part)
            return
        if not isinstance(node, ast.Call):
            for child in ast.iter_child_nodes(node):
                self.expr(child)
            return
        self.expr(node.func)
        if is_check(node, ("same_value", "same_tensor")):
            expected = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "expected"), None)
            for arg in node.args:
                if arg is not expected:
                    self.expr(arg)
            if expected is not None:
                self.expected(expected, node)
            for k in node.keywords:
                if k.value is not expected:
                    self.expr(k.value)
            return
        for arg in node.args:
            self.expr(arg)
        for k in node.keywords:
            self.expr(k.value)
        name = _callee(node)
        if self.s.deep and name in self.s.helpers:
            helper = self.s.helpers[name]
            bound = _bind(helper.params, node)
            compared = set().union(set(), *(self.shares(bound[p]) for p in helper.expected if p in bound))
            given = set().union(set(), *(self.shares(bound[p]) for p in helper.handed if p in bound))
            for p in helper.expected:
                if p in bound:
                    self.expected(bound[p], node, evaluated=True)
            both = (self._closure(compared) & self._closure(given)) - self.s.immutable
            if both:
                self.flag(node, f"{name}() gets {sorted(both)} both to hand to the learner and "
                                "to compare against")
            if helper.calls_learner:
                self.hand(given)
        elif self.learner_call(node):
            given = [*node.args, *(k.value for k in node.keywords)]
            if self.s.deep:
                self.hand(set().union(set(), *(self.shares(a) for a in given)))
            else:  # the names given as they are: `f(x, *xs, key=y)`
                self.hand({(a.value if isinstance(a, ast.Starred) else a).id for a in given
                           if isinstance(a.value if isinstance(a, ast.Starred) else a, ast.Name)}
                          - self.s.modules)

    def expected(self, node: ast.AST, where: ast.AST, evaluated: bool = False) -> None:
        reads = _reads(node) - self.s.modules
        self.s.expected_reads |= self._closure(reads)
        if not evaluated:
            if any(isinstance(n, ast.Call) and self.learner_call(n) for n in ast.walk(node)):
                self.flag(where, "the expected value calls the learner's code")
            self.expr(node)
        hit = self.bad(reads)
        if hit:
            self.flag(where, f"the expected value reads {sorted(hit)}, which the learner's code "
                             "had received before (compute it first, or give the learner a copy)")

    # -- statements ----------------------------------------------------------------------
    def body(self, statements: list[ast.stmt]) -> None:
        for stmt in statements:
            self.stmt(stmt)

    def bind(self, target: ast.AST, value: ast.AST | None, *, learner: bool, reads: set[str]) -> None:
        """``target = value``, destructured where both sides are tuples."""
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts) \
                and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts]):
            for t, v in zip(target.elts, value.elts):
                self.bind(t, v, learner=learner, reads=reads)
            return
        shared = self.shares(value)
        # A name bound again (in a loop's next pass) is a new object: its old binding, handed
        # or not, says nothing about the new one, unless the new value reads it (x = x[0]).
        for t in _targets(target) - shared:
            self.s.shares.pop(t, None)
            self.s.handed.discard(t)
        for t in _targets(target):
            self.s.shares[t] = set(shared)
            self.s.literals.pop(t, None)
            if isinstance(target, ast.Name) and isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
                self.s.literals[t] = value
            for flagset, on in ((self.s.tainted, bool(self.bad(reads))),
                                (self.s.learner, learner),
                                (self.s.immutable, isinstance(target, ast.Name) and _immutable(value)),
                                (self.s.handed, bool(self.s.handed & self._closure(shared)))):
                if on:
                    flagset.add(t)
                else:
                    flagset.discard(t)

    def bind_each(self, target: ast.AST, iterable: ast.AST, *, learner: bool) -> None:
        """A loop's (or a comprehension's) target, bound to each element in turn."""
        if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
                and iterable.func.id == "zip" and not iterable.keywords
                and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(iterable.args)
                and not any(isinstance(e, ast.Starred) for e in [*target.elts, *iterable.args])):
            # `for name, got, want in zip(names, results, wanted)`: each name takes its own
            # iterable's elements (not what every other iterable holds).
            for t, arg in zip(target.elts, iterable.args):
                self.bind_each(t, arg, learner=learner)
            return
        reads = _reads(iterable)
        elements = _elements(iterable, self.s.literals)
        if elements is None:
            self.bind(target, iterable, learner=learner, reads=reads)
            return
        names = _targets(target)
        merged: dict[str, set[str]] = {n: set() for n in names}
        always_immutable = set(names)
        for element in elements or [ast.Constant(value=None)]:
            self.bind(target, element, learner=learner, reads=_reads(element))
            for n in names:
                merged[n] |= self.s.shares.get(n, set())
                if n not in self.s.immutable:
                    always_immutable.discard(n)
        for n in names:
            self.s.shares[n] = merged[n]
            if n in always_immutable:
                self.s.immutable.add(n)
            if self.s.handed & self._closure(merged[n]):
                self.s.handed.add(n)

    def _makes_learner_call(self, node: ast.AST | None) -> bool:
        return node is not None and any(
            isinstance(n, ast.Call) and self.learner_call(n) for n in ast.walk(node))

    def stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.s.helpers[stmt.name] = summarize(stmt, self.s.copy(), self.found)
            return
        if isinstance(stmt, ast.ClassDef):
            return  # a spy or a fixture: its methods are called by whoever holds it
        if isinstance(stmt, ast.Return):
            self.expr(stmt.value)
            self.s.returns |= self._closure(self.shares(stmt.value))
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.expr(stmt.value)
            learner = self._makes_learner_call(stmt.value)
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                self.bind(target, stmt.value, learner=learner, reads=_reads(stmt.value))
            return
        if isinstance(stmt, ast.AugAssign):
            self.expr(stmt.value)
            reads = _reads(stmt.value) | _reads(stmt.target) | _targets(stmt.target)
            for t in _targets(stmt.target) | (_reads(stmt.target) - self.s.modules):
                if self.bad(reads):
                    self.s.tainted.add(t)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            for _ in range(2 if self.s.deep else 1):  # pass 2: what one iteration handed the next
                if isinstance(stmt, ast.While):
                    self.expr(stmt.test)
                else:
                    self.expr(stmt.iter)
                    self.bind_each(stmt.target, stmt.iter, learner=self._makes_learner_call(stmt.iter))
                self.body(stmt.body)
            self.body(stmt.orelse)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, item.context_expr,
                              learner=self._makes_learner_call(item.context_expr),
                              reads=_reads(item.context_expr))
            self.body(stmt.body)
            return
        if isinstance(stmt, ast.If):
            self.expr(stmt.test)
            self.body(stmt.body)
            self.body(stmt.orelse)
            return
        if isinstance(stmt, ast.Try):
            self.body(stmt.body)
            for handler in stmt.handlers:
                self.body(handler.body)
            self.body(stmt.orelse)
            self.body(stmt.finalbody)
            return
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expr(child)


def _bind(params: list[str], call: ast.Call) -> dict[str, ast.AST]:
    """Which argument expression each parameter of a helper gets (all of them, when a
    ``*args`` or ``**kwargs`` makes it unclear)."""
    bound: dict[str, ast.AST] = {}
    for p, a in zip(params, call.args):
        bound[p] = a
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        bound.update({p: ast.Tuple(elts=list(call.args), ctx=ast.Load()) for p in params})
    for k in call.keywords:
        if k.arg is None:
            bound.update({p: k.value for p in params})
        else:
            bound[k.arg] = k.value
    return bound


def summarize(fn: ast.FunctionDef | ast.AsyncFunctionDef, outer: _State, found: list[str]) -> Helper:
    """Read a function the cell defines (its own checks included) with its parameters fresh,
    in the state its definition sees (a closure sees what was handed before it)."""
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    state = outer
    outer_names = set(state.shares) | state.handed | state.tainted | state.learner
    local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for p in params:
        for names in (state.handed, state.tainted, state.learner, state.immutable):
            names.discard(p)
        state.shares.pop(p, None)
        state.literals.pop(p, None)
    scope = _Scope(state, f"{fn.name}()", found)
    scope.body(fn.body)
    return Helper(params, handed=set(params) & state.handed,
                  expected=set(params) & state.expected_reads, calls_learner=state.called,
                  returns=state.returns & (set(params) | (outer_names - local)))


def module_names(sources: list[str]) -> frozenset[str]:
    """Names that import statements of these cells bind (``torch``, ``F``, ``tc``...): modules
    and library functions, which no learner call makes share anything."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


def touched_expectations(test_source: str, learner_names: set[str],
                         modules: frozenset[str] = frozenset(), *, deep: bool = True) -> list[str]:
    """Where a check of ``test_source`` compares against what the learner's code had received
    (rule 2 above); ``[]`` when nowhere."""
    found: list[str] = []
    scope = _Scope(_State(set(learner_names), {}, modules | {"tc"}, deep,
                          answer=set(learner_names)), "cell", found)
    scope.body(ast.parse(test_source).body)
    return found
