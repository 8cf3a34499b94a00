"""Answers run with every attribute access checked at run time, not only where it is written.

Why: the static screen (:mod:`autograder.judge.screen`) sees ``torch.load`` but not ``m.load`` after
``m = [np.ma][0]``, and a public attribute of an allowed library can be a module that is not
allowed (``torch.os``, ``torch.builtins``). So, after screening, the grader rewrites each
answer cell (:func:`rewrite`) so that

* every attribute read ``a.b`` and every ``getattr(a, "b")`` goes through
  ``__tio_getattr__(a, "b")``, and
* every plain attribute assignment ``a.b = v`` through ``__tio_setattr__(a, "b", v)``.

Both are defined by the grader's bootstrap cell (:mod:`autograder.judge.integrity`) from
:func:`policy`, under ``__dunder__`` names an answer can neither write nor read (the screen
refuses such names). The rule is an allow-list: on a module, a name is read only if the module
is one answers may import, the name is public, and, for the standard-library modules listed
in :data:`MODULE_NAMES`, one of the names listed there; whatever is read must not be a module
answers may not import. On any object: no private or special name except the screen's allowed
ones. Assigning to a module or to a class defined outside the learner's cells is refused.
A refusal raises ``PermissionError`` (the answer fails, so does its test) and prints a
``TIO-REFUSED`` line that the grader reports under Tampering.

``rewrite`` keeps a syntax error unchanged (it fails on its own when run) and replaces source the
grader cannot read (too large, too deep: :mod:`autograder.judge.learner_source`) with a stub.
"""

from __future__ import annotations

import ast

from . import learner_source

GET, SET, TYPE = "__tio_getattr__", "__tio_setattr__", "__tio_type__"

# Standard-library modules answers may import, with the names they may use from them (the
# others there hand out dynamic attribute access, code evaluation or pickles). Modules not
# listed here but allowed by the screen (torch, numpy, math, itertools...) allow any public name
# except the screen's forbidden attributes.
MODULE_NAMES: dict[str, frozenset[str]] = {
    # No update_wrapper (it copies any attribute by name: a checker's __code__; `wraps` is
    # handed out taking the wrapped function only), no singledispatch (register() evaluates
    # string annotations).
    "functools": frozenset({"reduce", "partial", "partialmethod", "lru_cache", "cache", "wraps",
                            "total_ordering", "cached_property", "cmp_to_key"}),
    "abc": frozenset({"ABC", "abstractmethod"}),
    "operator": frozenset({"abs", "add", "and_", "concat", "contains", "countOf", "eq", "floordiv",
                           "ge", "getitem", "gt", "index", "indexOf", "inv", "invert",
                           "is_", "is_not", "itemgetter", "le", "length_hint", "lshift", "lt",
                           "matmul", "mod", "mul", "ne", "neg", "not_", "or_", "pos", "pow",
                           "rshift", "sub", "truediv", "truth", "xor", "iadd", "imul", "isub"}),
    "string": frozenset({"ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits",
                         "hexdigits", "octdigits", "punctuation", "printable", "whitespace",
                         "capwords"}),
    "typing": frozenset({"Any", "Callable", "Dict", "List", "Tuple", "Set", "FrozenSet",
                         "Optional", "Union", "Iterable", "Iterator", "Sequence", "Mapping",
                         "MutableMapping", "NamedTuple", "TypedDict", "Literal", "Protocol",
                         "TypeVar", "Generic", "cast", "overload", "Final", "ClassVar", "Type",
                         "Generator", "Hashable", "Sized", "Collection", "SupportsFloat",
                         "SupportsInt", "NoReturn", "Annotated", "TYPE_CHECKING", "Self",
                         "Never", "Deque", "DefaultDict", "Counter", "OrderedDict"}),
    "dataclasses": frozenset({"dataclass", "field", "fields", "asdict", "astuple", "replace",
                              "is_dataclass", "FrozenInstanceError", "InitVar", "MISSING",
                              "KW_ONLY"}),
}
# Public names of allowed modules that are nonetheless a way out (code, pickles, modules).
REFUSED_NAMES = frozenset({"read_array", "get_type_hints", "Formatter", "Template",
                           "make_dataclass", "attrgetter", "methodcaller"})


def policy() -> dict[str, object]:
    """The guard's rules as plain data (the bootstrap cell embeds them as a literal)."""
    from .screen import (
        ALLOWED_DUNDERS,
        ALLOWED_MODULES,
        ALLOWED_PRIVATE,
        ALLOWED_SUBMODULES,
        FORBIDDEN_ATTRIBUTES,
        FORBIDDEN_MODULES,
    )

    return {"allowed_modules": sorted(ALLOWED_MODULES), "forbidden_modules": sorted(FORBIDDEN_MODULES),
            "allowed_submodules": sorted(ALLOWED_SUBMODULES),
            "allowed_special": sorted(ALLOWED_DUNDERS | ALLOWED_PRIVATE),
            "refused_names": sorted(FORBIDDEN_ATTRIBUTES | REFUSED_NAMES),
            "module_names": {k: sorted(v) for k, v in MODULE_NAMES.items()},
            # torch.load and np.load read no pickle by default (the screen checks their
            # arguments); every other `load` of these libraries' submodules unpickles
            # (np.ma.load); triton.language.load is a kernel's memory read.
            "load_from": ["torch", "numpy"]}


def _dotted(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _set(target: ast.Attribute, value: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(ast.Name(SET, ast.Load()),
                             [target.value, ast.Constant(target.attr), value], []))


class _Guarded(ast.NodeTransformer):
    def __init__(self) -> None:
        self.temps = 0

    def _temp(self) -> str:
        self.temps += 1
        return f"__tio_t{self.temps}__"

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "type" and isinstance(node.ctx, ast.Load):
            # type(x) through the guard: it refuses handing out a metaclass (type(int) is type).
            return ast.copy_location(ast.Name(TYPE, ast.Load()), node)
        return node

    def _lower(self, target: ast.expr, after: list[ast.stmt]) -> ast.expr:
        """A store target with every attribute in it replaced by a temporary name, set after."""
        if isinstance(target, ast.Attribute):
            temp = self._temp()
            after.append(_set(target, ast.Name(temp, ast.Load())))
            return ast.Name(temp, ast.Store())
        if isinstance(target, (ast.Tuple, ast.List)):
            target.elts = [self._lower(e, after) for e in target.elts]
        elif isinstance(target, ast.Starred):
            target.value = self._lower(target.value, after)
        return target

    def _annotation(self, node: ast.expr | None) -> ast.expr | None:
        # A plain dotted annotation (`BLOCK: tl.constexpr`, `x: torch.Tensor`) stays as written:
        # Triton reads constexpr parameters from the source, and a value stored as an annotation
        # is out of an answer's reach (no __annotations__, no get_type_hints). Anything else in
        # an annotation is guarded like any expression.
        return node if node is None or _dotted(node) else self.visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = self._annotation(node.annotation)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        returns, node.returns = node.returns, None
        self.generic_visit(node)
        node.returns = self._annotation(returns)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Call(ast.Name(GET, ast.Load()),
                                          [node.value, ast.Constant(node.attr)], []), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            node.func = ast.copy_location(ast.Name(GET, ast.Load()), node.func)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            return ast.copy_location(_set(node.targets[0], node.value), node)
        if not any(isinstance(t, ast.Attribute) for target in node.targets for t in ast.walk(target)):
            return node
        # a.b = c.d = v, (a.b, y) = v: evaluate v once, then every store through the guard.
        after: list[ast.stmt] = []
        node.targets = [self._lower(t, after) for t in node.targets]
        return [node, *after]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        annotation, node.annotation = node.annotation, ast.Constant(None)
        self.generic_visit(node)
        node.annotation = self._annotation(annotation)
        if isinstance(node.target, ast.Attribute):
            value = node.value if node.value is not None else ast.Constant(None)
            if node.value is None:
                return ast.copy_location(ast.Pass(), node)  # an annotation only stores nothing
            return ast.copy_location(_set(node.target, value), node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.target, ast.Attribute):
            target = node.target
            current = ast.Call(ast.Name(GET, ast.Load()), [target.value, ast.Constant(target.attr)], [])
            return ast.copy_location(_set(target, ast.BinOp(current, node.op, node.value)), node)
        return node


NOT_RUN = ("raise RuntimeError('This answer was not run by the grader: it could not be read "
           "(see your feedback).')\n")


def rewrite(source: str) -> str:
    """``source`` with attribute access routed through the guard (see module docstring).

    Never raises, and never returns code it did not guard: what the grader cannot read
    (:mod:`autograder.judge.learner_source`) becomes :data:`NOT_RUN`. A syntax error for the kernel
    too is kept as written (it runs nothing there); source that only IPython's transformation
    makes Python is guarded as transformed, which is what the kernel would run.
    """
    found = learner_source.parse(source)
    if isinstance(found, learner_source.NotPython):
        return source
    if isinstance(found, learner_source.Rejected):
        return NOT_RUN
    try:
        tree = ast.fix_missing_locations(_Guarded().visit(found.tree))
        return ast.unparse(tree) + "\n"
    except Exception:  # noqa: BLE001 - within the bounds this is a bug of ours; still never unguarded
        return NOT_RUN
