"""Answers run with every attribute access checked at run time, not only where it is written.

Why: the static screen (:mod:`autograder.screen`) sees ``torch.load`` but not ``m.load`` after
``m = [np.ma][0]``, and a public attribute of an allowed library can be a module that is not
allowed (``torch.os``, ``torch.builtins``). So, after screening, the grader rewrites each
answer cell (:func:`rewrite`) so that

* every attribute read ``a.b`` and every ``getattr(a, "b")`` goes through
  ``__tio_getattr__(a, "b")``, and
* every plain attribute assignment ``a.b = v`` through ``__tio_setattr__(a, "b", v)``.

Both are defined by the grader's bootstrap cell (:mod:`autograder.integrity`) from
:func:`policy`, under ``__dunder__`` names an answer can neither write nor read (the screen
refuses such names). The rule is an allow-list: on a module, a name is read only if the module
is one answers may import, the name is public, and, for the standard-library modules listed
in :data:`MODULE_NAMES`, one of the names listed there; whatever is read must not be a module
answers may not import. On any object: no private or special name except the screen's allowed
ones. Assigning to a module or to a class defined outside the learner's cells is refused.
A refusal raises ``PermissionError`` (the answer fails, so does its test) and prints a
``TIO-REFUSED`` line that the grader reports under Tampering.

``rewrite`` keeps source that does not parse unchanged: it fails on its own when run.
"""

from __future__ import annotations

import ast

GET, SET = "__tio_getattr__", "__tio_setattr__"

# Standard-library modules answers may import, with the names they may use from them (the
# others there hand out dynamic attribute access, code evaluation or pickles). Modules not
# listed here but allowed by the screen (torch, numpy, math, itertools...) allow any public name
# except the screen's forbidden attributes.
MODULE_NAMES: dict[str, frozenset[str]] = {
    "functools": frozenset({"reduce", "partial", "partialmethod", "lru_cache", "cache", "wraps",
                            "update_wrapper", "total_ordering", "cached_property", "cmp_to_key",
                            "singledispatch", "singledispatchmethod", "WRAPPER_ASSIGNMENTS",
                            "WRAPPER_UPDATES"}),
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
        FORBIDDEN_ATTRIBUTES,
        FORBIDDEN_MODULES,
    )

    return {"allowed_modules": sorted(ALLOWED_MODULES), "forbidden_modules": sorted(FORBIDDEN_MODULES),
            "allowed_special": sorted(ALLOWED_DUNDERS | ALLOWED_PRIVATE),
            "refused_names": sorted(FORBIDDEN_ATTRIBUTES | REFUSED_NAMES),
            "module_names": {k: sorted(v) for k, v in MODULE_NAMES.items()},
            # torch.load and np.load read no pickle by default (the screen checks their
            # arguments); every other `load` of these libraries unpickles (np.ma.load).
            "load_from": ["torch", "numpy"]}


class _Guarded(ast.NodeTransformer):
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

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            target = node.targets[0]
            call = ast.Call(ast.Name(SET, ast.Load()),
                            [target.value, ast.Constant(target.attr), node.value], [])
            return ast.copy_location(ast.Expr(call), node)
        return node


def rewrite(source: str) -> str:
    """``source`` with attribute access routed through the guard (see module docstring)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    tree = ast.fix_missing_locations(_Guarded().visit(tree))
    return ast.unparse(tree) + "\n"
