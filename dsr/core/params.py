"""Parameters declared once, as data: name, default, type, range or choices, help, grid.

Every configurable stage (ranker, reranker, fusion, collection builder, trainer)
declares its parameters as a tuple of :class:`Param`, the way ir_measures
declares a measure's ``ParamInfo``. One resolver (:func:`resolve`) fills in
defaults and checks every value, so a wrong name or value is one kind of error
everywhere (exit 2, naming the parameter and what it accepts); the command line
lists a stage's parameters from the same declaration (``dsr run --ranker bm25
--help``), and the split protocol tunes over the ``grid`` beside them.

``--param NAME=VALUE`` strings are typed by :func:`parse_assignments` (numbers,
booleans and ``none``); :meth:`Param.check` then accepts an int where a float
is declared and nothing looser.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from dsr.core.errors import InputError

#: value kinds a parameter can declare ("any": not checked here; the stage checks it)
KINDS = ("int", "float", "bool", "str", "any")


@dataclass(frozen=True)
class Param:
    """One parameter: its default, kind, allowed values, help and the values tuned on val."""

    name: str
    default: Any
    kind: str = "str"
    help: str = ""
    #: inclusive bounds for numbers (None: unbounded on that side)
    low: float | None = None
    high: float | None = None
    #: exclusive lower bound (``low`` is inclusive); e.g. a decay in (0, 1]
    above: float | None = None
    #: exclusive upper bound (``high`` is inclusive); e.g. a fraction in [0, 1)
    below: float | None = None
    #: the values allowed for a str parameter (None: any string); a registry's names
    #: (:class:`dsr.core.registry.Names`) are read when checked, so other packages' parts count
    choices: Sequence[Any] | None = None
    #: None is allowed (meaning: the stage's own default behaviour)
    optional: bool = False
    #: values the split protocol tries on val ([] = not tuned)
    grid: tuple[Any, ...] = field(default=())
    #: the value's name in a command line's --help (``N``, ``MODEL``); "" : derived from the kind
    metavar: str = ""
    #: the command line's flags when they are not ``--`` and the name (a kept flag name:
    #: ``("--permutations",)`` for ``n_resamples``; trec_eval's ``("-M", "--max-docs")``)
    flags: tuple[str, ...] = ()
    #: a tuple of values of the kind (one or more on the command line), each checked
    many: bool = False
    #: a ``many`` parameter's command line takes one value per flag (``--subset a --subset b``)
    repeated: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, not {self.kind!r}")

    def check(self, value: Any, what: str = "") -> Any:
        """``value`` if it is allowed (a whole float narrowed to int for an int parameter; an
        int stays an int for a float one, so tags read ``k=60``), else InputError. A ``many``
        parameter takes a list or tuple (a string is one value) and gives a tuple."""
        if self.many and value is not None:
            one = replace(self, many=False, optional=False, default=0)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, (list, tuple)):
                raise self._error(value, what)
            try:
                return tuple(one.check(v, what) for v in value)
            except InputError:
                raise self._error(value, what) from None
        if self.kind == "any":
            return value
        if value is None:
            if self.optional or self.default is None:
                return None
            raise self._error(value, what)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise self._error(value, what)
            return value
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._error(value, what)
            if self.kind == "int" and not isinstance(value, int):
                if not float(value).is_integer():
                    raise self._error(value, what)
                value = int(value)
            if not math.isfinite(value) or not self._in_range(value):
                raise self._error(value, what)
            return value
        if not isinstance(value, str) or (self.choices is not None and value not in self.choices):
            raise self._error(value, what)
        return value

    def _in_range(self, value: float) -> bool:
        return (
            (self.low is None or value >= self.low)
            and (self.high is None or value <= self.high)
            and (self.above is None or value > self.above)
            and (self.below is None or value < self.below)
        )

    def accepts(self) -> str:
        """What the parameter accepts, in words (for errors and --help)."""
        if self.many:
            one = replace(self, many=False, optional=False, default=0)
            text = "one or more values, each " + one.accepts()
            return text + (" (or none)" if self.optional or self.default is None else "")
        if self.kind == "any":
            return "any value"
        if self.kind == "bool":
            text = "true or false"
        elif self.kind in ("int", "float"):
            noun = "a whole number" if self.kind == "int" else "a number"
            marks = ((">", self.above), (">=", self.low), ("<=", self.high), ("<", self.below))
            bounds = [f"{op} {value:g}" for op, value in marks if value is not None]
            text = f"{noun} {' and '.join(bounds)}".strip()
        elif self.choices is not None:
            text = "one of " + ", ".join(map(str, self.choices))
        else:
            text = "text"
        return text + (" or none" if self.optional or self.default is None else "")

    def _error(self, value: Any, what: str) -> InputError:
        where = f" of {what}" if what else ""
        return InputError(f"parameter {self.name}{where} must be {self.accepts()}, got {value!r}", field=self.name)

    def describe(self) -> str:
        """One --help line: ``name (default ...): help; accepts ...; tuned over ...``."""
        line = f"{self.name} (default {self.default!r}): {self.help}" if self.help else f"{self.name} (default {self.default!r})"
        line += f"; {self.accepts()}"
        if self.grid:
            line += f"; tuned over {', '.join(map(str, self.grid))}"
        return line


Declaration = Sequence[Param]


def inferred(given_defaults: Mapping[str, Any]) -> tuple[Param, ...]:
    """Params for a plain ``{name: default}`` table, each of the kind of its default
    (bool, int, float or str; anything else is not checked)."""
    kinds = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"))
    return tuple(
        Param(name, value, next((k for t, k in kinds if isinstance(value, t)), "any")) for name, value in given_defaults.items()
    )


def by_name(declared: Declaration) -> dict[str, Param]:
    return {p.name: p for p in declared}


def defaults(declared: Declaration) -> dict[str, Any]:
    """name -> default, in declaration order."""
    return {p.name: p.default for p in declared}


def grid(declared: Declaration) -> dict[str, list[Any]]:
    """name -> values tuned on val, for the parameters that declare a grid."""
    return {p.name: list(p.grid) for p in declared if p.grid}


def resolve(given: Mapping[str, Any], declared: Declaration, what: str) -> dict[str, Any]:
    """The declared defaults overridden by ``given``, every value checked.

    An unknown name or a value the declaration does not allow is an InputError
    naming the parameter, ``what`` (e.g. ``ranker 'bm25'``) and what it accepts.
    """
    table = by_name(declared)
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise InputError(
            f"unknown parameter(s) {', '.join(unknown)} for {what}; known: {', '.join(table) or 'none'}", field="params"
        )
    out = defaults(declared)
    for name, value in given.items():
        out[name] = table[name].check(value, what)
    return out


#: the Python type of each kind
TYPES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str, "any": Any}

#: the key of a settings record's field metadata that holds its Param
PARAM = "param"


def setting(default: Any, help: str = "", **spec: Any) -> Any:
    """A field of a :class:`Settings` record: its default, help and checks (``low``, ``choices``,
    ``grid``, ``flags``..., as :class:`Param` takes them). The kind is read from the field's
    annotation (``int``, ``float | None``, ``tuple[str, ...]``), so the type checker, the
    checks and the command line's flag read one declaration::

        @dataclass(frozen=True, kw_only=True)
        class SplitSettings(Settings):
            n_splits: int = setting(50, "splits to generate", low=1, metavar="N")
    """
    return field(default=default, metadata={PARAM: {"help": help, **spec}})


class Settings:
    """Base of the settings records: a frozen, keyword-only dataclass whose fields are
    :func:`setting`\\ s, each checked when the record is made (:meth:`Param.check`: an
    InputError naming the field and what it accepts). A command's flags come from its
    record's :meth:`params` (``dsr.cli.common.add_param_flags``) and its handler receives the
    record; the function takes it whole, so Python and the command line refuse a value with
    one message. Records of several parts are one record inheriting each part."""

    #: what the settings are of, for messages (``of ranker 'bm25'``); "": nothing added
    WHAT: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for p in params_of(type(self)):
            object.__setattr__(self, p.name, p.check(getattr(self, p.name), self.WHAT))

    @classmethod
    def params(cls) -> tuple[Param, ...]:
        """The record's fields as :class:`Param`\\ s, in order (flags, help, grids)."""
        return params_of(cls)

    @classmethod
    def of(cls: type[R], settings: R | None = None, given: Mapping[str, Any] | None = None) -> R:
        """``settings`` (default: the defaults) with the ``given`` fields replaced: what a
        keyword convenience builds (``dsr.evaluate(c, runs, alpha=0.01)``). A name that is no
        field is an InputError naming it and the known ones."""
        given = dict(given or {})
        names = {p.name for p in params_of(cls)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise InputError(
                f"unknown setting(s) {', '.join(unknown)} of {cls.__name__}; known: {', '.join(sorted(names))}",
                field=unknown[0],
            )
        if settings is None:
            return cls(**given)
        if not isinstance(settings, cls):
            raise InputError(f"settings must be a {cls.__name__}, got {type(settings).__name__}", field="settings")
        return typing.cast(R, replace(typing.cast(Any, settings), **given)) if given else settings

    @classmethod
    def from_values(cls: type[R], values: Any) -> R:
        """The record of an object holding its fields as attributes (an argparse Namespace whose
        flags :func:`~dsr.cli.common.add_param_flags` made): each field it lacks keeps its default."""
        return cls(**{p.name: getattr(values, p.name) for p in params_of(cls) if hasattr(values, p.name)})

    def values(self) -> dict[str, Any]:
        """``{field: value}``, in order."""
        return {p.name: getattr(self, p.name) for p in params_of(type(self))}


R = TypeVar("R", bound=Settings)


#: record -> its Params, made once (a record's fields do not change)
_DECLARED: dict[type, tuple[Param, ...]] = {}


def params_of(record: type) -> tuple[Param, ...]:
    """The fields of a settings record (a dataclass of :func:`setting` fields) as Params, their
    kind read from the annotations."""
    if record not in _DECLARED:
        _DECLARED[record] = _declared(record)
    return _DECLARED[record]


def _declared(record: type) -> tuple[Param, ...]:
    hints = typing.get_type_hints(record)
    out = []
    for f in fields(record):
        if PARAM not in f.metadata:
            continue
        kind, optional, many = _kind(hints[f.name])
        out.append(Param(f.name, f.default, kind, optional=optional, many=many, **f.metadata[PARAM]))
    return tuple(out)


def _kind(annotation: Any) -> tuple[str, bool, bool]:
    """(kind, None allowed, a tuple of values) of a field's annotation."""
    args = typing.get_args(annotation)
    optional = type(None) in args and typing.get_origin(annotation) in (types.UnionType, typing.Union)
    if optional:
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else Any
    many = typing.get_origin(annotation) is tuple
    if many:
        annotation = typing.get_args(annotation)[0]
    names = {t: k for k, t in TYPES.items() if t is not Any}
    return names.get(annotation, "any"), optional, many


def help_text(declared: Declaration) -> str:
    """The parameters' --help block, one per line."""
    return "\n".join("  " + p.describe() for p in declared) or "  (no parameters)"


def typed(value: str) -> Any:
    """A ``--param`` value as the user meant it: true/false, none, an int, a float, else the text."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_assignments(items: Iterable[str] | None, field: str = "params") -> dict[str, Any]:
    """``["k1=1.2", "query=last"]`` -> ``{"k1": 1.2, "query": "last"}`` (values typed)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected NAME=VALUE, got {item!r}", field=field)
        params[key.strip()] = typed(value.strip())
    return params
