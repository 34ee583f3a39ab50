"""Label and field selectors, read the way the API server reads them.

A :class:`LabelSelector` comes from the string form sent as ``labelSelector``
(``app=web,tier!=db,env in (prod,staging),!canary``) or from the object form
found in specs (``{"matchLabels": {...}, "matchExpressions": [...]}``). It is
parsed and validated once; :meth:`LabelSelector.matches` is then a tight loop
over precomputed requirements (equality requirements are checked with one
C-level ``dict_items`` subset test), because listers and predicates call it
for every object on hot paths.

``str(selector)`` is canonical: requirements sorted by key (as apimachinery
sorts them), set values sorted, ``==`` written as ``=``, duplicates removed.
Two selectors that print the same match the same labels, and parsing the
printed form gives back an equal selector.

A :class:`FieldSelector` holds ``path=value`` / ``path==value`` /
``path!=value`` terms. The API server supports only a few fields per resource
(``metadata.name`` and ``metadata.namespace`` everywhere); for local matching
any dotted path into the object works. A missing field reads as ``""``, as
the API server's field sets do (so ``spec.nodeName=`` matches unscheduled
Pods).

Selectors are immutable values: safe to share between threads.
Invalid input raises :class:`ValueError` naming the position and the reason.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SelectorOperator",
    "Requirement",
    "LabelSelector",
    "FieldOperator",
    "FieldRequirement",
    "FieldSelector",
    "as_label_selector",
    "as_field_selector",
    "validate_label_key",
    "validate_label_value",
]

# --------------------------------------------------------------------------- validation

_NAME_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS_SUBDOMAIN_RE = re.compile(
    r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z"
)
_NAME_MAX = 63
_PREFIX_MAX = 253


_INT_RE = re.compile(r"[+-]?[0-9]+\Z")


def _as_int(text: str) -> int | None:
    """``text`` as a base-10 integer the way Go's ParseInt reads it (no spaces, no '_'), or None."""
    return int(text) if _INT_RE.match(text) else None


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (Kubernetes' qualified-name rules), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if "/" in prefix:
            return f"label key {key!r} has more than one '/'"
        if not prefix:
            return f"label key {key!r} has an empty prefix before '/'"
        if len(prefix) > _PREFIX_MAX:
            return f"label key prefix {prefix!r} is longer than {_PREFIX_MAX} characters"
        if not _DNS_SUBDOMAIN_RE.match(prefix):
            return (
                f"label key prefix {prefix!r} is not a DNS subdomain (lower-case alphanumerics, "
                "'-' and '.', starting and ending with an alphanumeric)"
            )
    if not name:
        return f"label key {key!r} has an empty name"
    if len(name) > _NAME_MAX:
        return f"label key name {name!r} is longer than {_NAME_MAX} characters"
    if not _NAME_RE.match(name):
        return (
            f"label key name {name!r} must consist of alphanumerics, '-', '_' or '.', "
            "and start and end with an alphanumeric"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None (the empty value is valid)."""
    if not value:
        return None
    if len(value) > _NAME_MAX:
        return f"label value {value!r} is longer than {_NAME_MAX} characters"
    if not _NAME_RE.match(value):
        return (
            f"label value {value!r} must consist of alphanumerics, '-', '_' or '.', "
            "and start and end with an alphanumeric"
        )
    return None


def validate_label_key(key: str) -> str:
    """Return ``key`` if it is a valid label key; raise ValueError saying why not."""
    if not isinstance(key, str):
        raise ValueError(f"label key must be a string, got {type(key).__name__}")
    err = label_key_error(key)
    if err:
        raise ValueError(err)
    return key


def validate_label_value(value: str) -> str:
    """Return ``value`` if it is a valid label value; raise ValueError saying why not."""
    if not isinstance(value, str):
        raise ValueError(f"label value must be a string, got {type(value).__name__}")
    err = label_value_error(value)
    if err:
        raise ValueError(err)
    return value


# --------------------------------------------------------------------------- label requirements


class SelectorOperator(enum.Enum):
    """A label requirement's operator; the value is its spelling in the object form."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    EQUALS = "="
    NOT_EQUALS = "!="
    GREATER_THAN = "Gt"
    LESS_THAN = "Lt"


# Order used to sort requirements on the same key, for a canonical string.
_OP_ORDER = {op: i for i, op in enumerate(SelectorOperator)}
_SET_OPS = (SelectorOperator.IN, SelectorOperator.NOT_IN)
_NO_VALUE_OPS = (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST)


@dataclass(frozen=True)
class Requirement:
    """One ``key <operator> values`` term of a label selector.

    Invariants (checked by :meth:`create`): ``key`` is a valid label key;
    ``values`` is sorted and duplicate-free; EQUALS / NOT_EQUALS /
    GREATER_THAN / LESS_THAN hold exactly one value (an integer string for
    the last two); IN / NOT_IN hold at least one; EXISTS / DOES_NOT_EXIST none.
    """

    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()

    @classmethod
    def create(
        cls, key: str, operator: SelectorOperator, values: Iterable[str] = ()
    ) -> Requirement:
        """Validate and normalise a requirement; ValueError says what is wrong."""
        validate_label_key(key)
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(
                f"the values of {key!r} must be a list of strings, got {type(values).__name__}"
            )
        values = tuple(values)
        for v in values:
            if not isinstance(v, str):
                raise ValueError(f"the values of {key!r} must be strings, got {type(v).__name__}")
        vals = tuple(sorted(set(values)))
        if operator in _NO_VALUE_OPS:
            if vals:
                raise ValueError(f"operator {operator.value} on {key!r} takes no values")
        elif operator in _SET_OPS:
            if not vals:
                raise ValueError(f"operator {operator.value} on {key!r} needs at least one value")
        else:
            if len(vals) != 1:
                raise ValueError(f"operator {operator.value} on {key!r} takes exactly one value")
            if operator in (SelectorOperator.GREATER_THAN, SelectorOperator.LESS_THAN):
                if _as_int(vals[0]) is None:
                    raise ValueError(
                        f"operator {operator.value} on {key!r} needs an integer value, got {vals[0]!r}"
                    )
                return cls(key, operator, vals)
        for v in vals:
            validate_label_value(v)
        return cls(key, operator, vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfies this requirement alone."""
        op = self.operator
        present = self.key in labels
        if op is SelectorOperator.EXISTS:
            return present
        if op is SelectorOperator.DOES_NOT_EXIST:
            return not present
        if op in (SelectorOperator.EQUALS, SelectorOperator.IN):
            return present and labels[self.key] in self.values
        if op in (SelectorOperator.NOT_EQUALS, SelectorOperator.NOT_IN):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        have = _as_int(labels[self.key])
        if have is None:
            return False
        want = int(self.values[0])
        return have > want if op is SelectorOperator.GREATER_THAN else have < want

    def sort_key(self) -> tuple:
        return (self.key, _OP_ORDER[self.operator], self.values)

    def __str__(self) -> str:
        op, key = self.operator, self.key
        if op is SelectorOperator.EXISTS:
            return key
        if op is SelectorOperator.DOES_NOT_EXIST:
            return "!" + key
        if op is SelectorOperator.EQUALS:
            return f"{key}={self.values[0]}"
        if op is SelectorOperator.NOT_EQUALS:
            return f"{key}!={self.values[0]}"
        if op is SelectorOperator.GREATER_THAN:
            return f"{key}>{self.values[0]}"
        if op is SelectorOperator.LESS_THAN:
            return f"{key}<{self.values[0]}"
        word = "in" if op is SelectorOperator.IN else "notin"
        return f"{key} {word} ({','.join(self.values)})"


# --------------------------------------------------------------------------- the string form: lexer


class _Tok(enum.Enum):
    IDENT = "identifier"
    NOT = "'!'"
    EQ = "'='"
    DEQ = "'=='"
    NEQ = "'!='"
    GT = "'>'"
    LT = "'<'"
    IN = "'in'"
    NOTIN = "'notin'"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    END = "end of input"


_SPECIAL = frozenset("!=(),<>")
_SINGLE = {"(": _Tok.LPAREN, ")": _Tok.RPAREN, ",": _Tok.COMMA, ">": _Tok.GT, "<": _Tok.LT}
_KEYWORDS = {"in": _Tok.IN, "notin": _Tok.NOTIN}
_WORDS = frozenset({_Tok.IDENT, _Tok.IN, _Tok.NOTIN})  # tokens usable as a key or a value


def _lex(text: str) -> list[tuple[_Tok, str, int]]:
    """Tokens as (kind, text, position); always ends with END."""
    out: list[tuple[_Tok, str, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "!":
            if i + 1 < n and text[i + 1] == "=":
                out.append((_Tok.NEQ, "!=", i))
                i += 2
            else:
                out.append((_Tok.NOT, "!", i))
                i += 1
        elif c == "=":
            if i + 1 < n and text[i + 1] == "=":
                out.append((_Tok.DEQ, "==", i))
                i += 2
            else:
                out.append((_Tok.EQ, "=", i))
                i += 1
        elif c in _SINGLE:
            out.append((_SINGLE[c], c, i))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            word = text[start:i]
            out.append((_KEYWORDS.get(word, _Tok.IDENT), word, start))
    out.append((_Tok.END, "", n))
    return out


class _Parser:
    """Recursive-descent parser for the label selector string form."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _lex(text)
        self.i = 0

    def error(self, pos: int, reason: str) -> ValueError:
        return ValueError(f"invalid label selector {self.text!r}: at position {pos}: {reason}")

    def peek(self) -> tuple[_Tok, str, int]:
        return self.toks[self.i]

    def take(self) -> tuple[_Tok, str, int]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        if self.peek()[0] is _Tok.END:
            return reqs
        while True:
            reqs.append(self.requirement())
            kind, word, pos = self.take()
            if kind is _Tok.END:
                return reqs
            if kind is not _Tok.COMMA:
                raise self.error(pos, f"expected ',' or end of input, found {word!r}")
            nkind, nword, npos = self.peek()
            if nkind not in _WORDS and nkind is not _Tok.NOT:
                raise self.error(
                    npos,
                    f"expected a requirement after ',', found {nkind.value if not nword else repr(nword)}",
                )

    def key(self) -> tuple[str, int]:
        kind, word, pos = self.take()
        # "in" and "notin" are keywords only where an operator is expected ("in in (notin)" is valid).
        if kind not in _WORDS:
            found = repr(word) if word else kind.value
            raise self.error(pos, f"expected a label key, found {found}")
        err = label_key_error(word)
        if err:
            raise self.error(pos, err)
        return word, pos

    def value(self) -> str:
        kind, word, pos = self.peek()
        if kind in (_Tok.END, _Tok.COMMA, _Tok.RPAREN):
            return ""  # "a=" selects the empty value
        self.take()
        if kind not in _WORDS:
            raise self.error(pos, f"expected a label value, found {word!r}")
        err = label_value_error(word)
        if err:
            raise self.error(pos, err)
        return word

    def requirement(self) -> Requirement:
        kind, _, _ = self.peek()
        if kind is _Tok.NOT:
            self.take()
            key, _ = self.key()
            return Requirement(key, SelectorOperator.DOES_NOT_EXIST)
        key, _ = self.key()
        kind, word, pos = self.peek()
        if kind in (_Tok.END, _Tok.COMMA):
            return Requirement(key, SelectorOperator.EXISTS)
        self.take()
        if kind in (_Tok.EQ, _Tok.DEQ, _Tok.NEQ):
            op = SelectorOperator.NOT_EQUALS if kind is _Tok.NEQ else SelectorOperator.EQUALS
            return Requirement(key, op, (self.value(),))
        if kind in (_Tok.GT, _Tok.LT):
            vkind, vword, vpos = self.take()
            if vkind is not _Tok.IDENT or _as_int(vword) is None:
                raise self.error(
                    vpos, f"expected an integer after {word!r}, found {vword or vkind.value!r}"
                )
            op = SelectorOperator.GREATER_THAN if kind is _Tok.GT else SelectorOperator.LESS_THAN
            return Requirement(key, op, (vword,))
        if kind in (_Tok.IN, _Tok.NOTIN):
            lkind, lword, lpos = self.take()
            if lkind is not _Tok.LPAREN:
                raise self.error(
                    lpos, f"expected '(' after {word!r}, found {lword or lkind.value!r}"
                )
            values = self.values(lpos)
            op = SelectorOperator.IN if kind is _Tok.IN else SelectorOperator.NOT_IN
            return Requirement(key, op, tuple(sorted(set(values))))
        found = repr(word) if word else kind.value
        raise self.error(
            pos,
            f"expected one of '=', '==', '!=', 'in', 'notin', '>', '<', ',' after key {key!r}, found {found}",
        )

    def values(self, open_pos: int) -> list[str]:
        # "()" is the set holding the empty value, as apimachinery reads it.
        values = [self.value()]
        while True:
            kind, word, pos = self.take()
            if kind is _Tok.RPAREN:
                return values
            if kind is _Tok.COMMA:
                values.append(self.value())
                continue
            if kind is _Tok.END:
                raise self.error(open_pos, "unclosed '('")
            raise self.error(pos, f"expected ',' or ')' in a set of values, found {word!r}")


# --------------------------------------------------------------------------- LabelSelector

_EXISTS, _NOT_EXISTS, _IN, _NOT_IN, _GT, _LT = range(6)


class LabelSelector:
    """A parsed, validated, immutable label selector. An empty selector matches everything.

    Build with :meth:`parse`, :meth:`from_dict`, :meth:`everything` or
    :func:`as_label_selector`. Equal selectors (same canonical string) compare
    equal and hash alike.
    """

    __slots__ = ("_reqs", "_eq_items", "_rest", "_never", "_str")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        reqs = tuple(sorted(set(requirements), key=Requirement.sort_key))
        self._reqs = reqs
        self._str = ",".join(str(r) for r in reqs)
        eq: dict[str, str] = {}
        never = False
        rest: list[tuple[int, str, Any]] = []
        for r in reqs:
            op = r.operator
            if op is SelectorOperator.EQUALS:
                if r.key in eq and eq[r.key] != r.values[0]:
                    never = True  # a=x,a=y can never hold
                eq[r.key] = r.values[0]
            elif op is SelectorOperator.EXISTS:
                rest.append((_EXISTS, r.key, None))
            elif op is SelectorOperator.DOES_NOT_EXIST:
                rest.append((_NOT_EXISTS, r.key, None))
            elif op is SelectorOperator.IN:
                rest.append((_IN, r.key, frozenset(r.values)))
            elif op in (SelectorOperator.NOT_IN, SelectorOperator.NOT_EQUALS):
                rest.append((_NOT_IN, r.key, frozenset(r.values)))
            elif op is SelectorOperator.GREATER_THAN:
                rest.append((_GT, r.key, int(r.values[0])))
            else:
                rest.append((_LT, r.key, int(r.values[0])))
        self._eq_items = eq.items() if eq else None
        self._rest = tuple(rest)
        self._never = never

    # -- construction

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the string form; raise ValueError with the position and reason on bad input."""
        if not isinstance(text, str):
            raise ValueError(f"label selector must be a string, got {type(text).__name__}")
        return cls(_Parser(text).parse())

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any]) -> LabelSelector:
        """Build from the object form: ``{"matchLabels": {...}, "matchExpressions": [...]}``.

        ``matchExpressions`` entries have ``key``, ``operator`` (``In``,
        ``NotIn``, ``Exists``, ``DoesNotExist``) and ``values``. An empty
        mapping selects everything. ValueError names the offending field.
        """
        if not isinstance(selector, Mapping):
            raise ValueError(
                f"label selector object must be a mapping, got {type(selector).__name__}"
            )
        unknown = set(selector) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise ValueError(
                f"label selector object has unknown field(s) {sorted(unknown)}; expected matchLabels, matchExpressions"
            )
        reqs: list[Requirement] = []
        match_labels = selector.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise ValueError(
                f"matchLabels must be a mapping of label to value, got {type(match_labels).__name__}"
            )
        expressions = selector.get("matchExpressions") or ()
        if not isinstance(expressions, (list, tuple)):
            raise ValueError(f"matchExpressions must be a list, got {type(expressions).__name__}")
        for k, v in match_labels.items():
            try:
                reqs.append(Requirement.create(k, SelectorOperator.EQUALS, (v,)))
            except ValueError as e:
                raise ValueError(f"matchLabels[{k!r}]: {e}") from None
        allowed = {
            "In": SelectorOperator.IN,
            "NotIn": SelectorOperator.NOT_IN,
            "Exists": SelectorOperator.EXISTS,
            "DoesNotExist": SelectorOperator.DOES_NOT_EXIST,
        }
        for i, expr in enumerate(expressions):
            where = f"matchExpressions[{i}]"
            if not isinstance(expr, Mapping):
                raise ValueError(f"{where}: must be a mapping, got {type(expr).__name__}")
            operator = expr.get("operator")
            op = allowed.get(operator) if isinstance(operator, str) else None
            if op is None:
                raise ValueError(
                    f"{where}.operator: {expr.get('operator')!r} is not one of {sorted(allowed)}"
                )
            values = expr.get("values") or ()
            if isinstance(values, str):
                raise ValueError(f"{where}.values: must be a list of strings, got a string")
            try:
                reqs.append(Requirement.create(str(expr.get("key") or ""), op, values))
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        return cls(reqs)

    @classmethod
    def everything(cls) -> LabelSelector:
        """The empty selector: matches every label set."""
        return _EVERYTHING

    # -- queries

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, in canonical order."""
        return self._reqs

    @property
    def empty(self) -> bool:
        """True when the selector has no requirements (matches everything)."""
        return not self._reqs

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a label set (``metadata.labels``; None means no labels) satisfies every requirement."""
        if labels is None:
            labels = _NO_LABELS
        if self._never:
            return False
        if self._eq_items is not None and not (self._eq_items <= labels.items()):
            return False
        for code, key, arg in self._rest:
            if code is _IN:
                v = labels.get(key)
                if v is None or v not in arg:
                    return False
            elif code is _NOT_IN:
                v = labels.get(key)
                if v is not None and v in arg:
                    return False
            elif code is _EXISTS:
                if key not in labels:
                    return False
            elif code is _NOT_EXISTS:
                if key in labels:
                    return False
            else:
                v = labels.get(key)
                if v is None:
                    return False
                n = _as_int(v)
                if n is None:
                    return False
                if (n <= arg) if code is _GT else (n >= arg):
                    return False
        return True

    def to_dict(self) -> dict[str, Any]:
        """The object form, when expressible (no ``!=``, ``>``, ``<``); ValueError otherwise."""
        match_labels: dict[str, str] = {}
        exprs: list[dict[str, Any]] = []
        for r in self._reqs:
            if r.operator is SelectorOperator.EQUALS and r.key not in match_labels:
                match_labels[r.key] = r.values[0]
            elif r.operator is SelectorOperator.EQUALS:
                exprs.append({"key": r.key, "operator": "In", "values": list(r.values)})
            elif r.operator in _SET_OPS or r.operator in _NO_VALUE_OPS:
                e: dict[str, Any] = {"key": r.key, "operator": r.operator.value}
                if r.values:
                    e["values"] = list(r.values)
                exprs.append(e)
            elif r.operator is SelectorOperator.NOT_EQUALS:
                exprs.append({"key": r.key, "operator": "NotIn", "values": list(r.values)})
            else:
                raise ValueError(f"requirement {r} has no object form")
        out: dict[str, Any] = {}
        if match_labels:
            out["matchLabels"] = match_labels
        if exprs:
            out["matchExpressions"] = exprs
        return out

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"LabelSelector({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._reqs == other._reqs

    def __hash__(self) -> int:
        return hash(self._reqs)

    def __bool__(self) -> bool:
        # A selector object is always "there"; use .empty to ask whether it selects everything.
        return True


_NO_LABELS: Mapping[str, str] = {}
_EVERYTHING = LabelSelector()


def as_label_selector(selector: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """Coerce the accepted selector spellings: None (everything), a string, the object form, a selector."""
    if selector is None:
        return _EVERYTHING
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return LabelSelector.parse(selector)
    if isinstance(selector, Mapping):
        return LabelSelector.from_dict(selector)
    raise TypeError(f"cannot use a {type(selector).__name__} as a label selector")


# --------------------------------------------------------------------------- field selectors


class FieldOperator(enum.Enum):
    EQUALS = "="
    NOT_EQUALS = "!="


@dataclass(frozen=True)
class FieldRequirement:
    """One ``path=value`` or ``path!=value`` term; ``path`` is a dotted field path."""

    field: str
    operator: FieldOperator
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator.value}{_escape_field_value(self.value)}"


_ESCAPABLE = frozenset("\\,=!")


def _escape_field_value(value: str) -> str:
    if not any(c in _ESCAPABLE for c in value):
        return value
    return "".join("\\" + c if c in _ESCAPABLE else c for c in value)


def _field_string(value: Any) -> str | None:
    """How a field's value reads in a selector; None for values no term can equal (objects, lists)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return None


_MISSING = object()


class FieldSelector:
    """A parsed, immutable field selector. An empty selector matches everything."""

    __slots__ = ("_reqs", "_compiled", "_str")

    def __init__(self, requirements: Iterable[FieldRequirement] = ()) -> None:
        reqs = tuple(sorted(set(requirements), key=lambda r: (r.field, r.operator.value, r.value)))
        self._reqs = reqs
        self._compiled = tuple(
            (tuple(r.field.split(".")), r.operator is FieldOperator.EQUALS, r.value) for r in reqs
        )
        self._str = ",".join(str(r) for r in reqs)

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse ``path=value,path!=value,...``; backslash escapes ``\\ , = !`` in values."""
        if not isinstance(text, str):
            raise ValueError(f"field selector must be a string, got {type(text).__name__}")

        def error(pos: int, reason: str) -> ValueError:
            return ValueError(f"invalid field selector {text!r}: at position {pos}: {reason}")

        reqs: list[FieldRequirement] = []
        if not text.strip():
            return cls()
        i, n = 0, len(text)
        while i < n:
            start = i
            # the field: up to the first operator (fields themselves are never escaped)
            while i < n and text[i] not in "=!,":
                i += 1
            field = text[start:i].strip()
            if not field and (i >= n or text[i] == ","):
                i += 1  # an empty term ("a=b,,c=d", "a=b,"): skipped, as the API server does
                continue
            if i >= n or text[i] == ",":
                raise error(
                    start, f"term {text[start:i]!r} has no operator; expected '=', '==' or '!='"
                )
            if not field:
                raise error(start, "empty field name before the operator")
            if any(not part for part in field.split(".")):
                raise error(start, f"field path {field!r} has an empty segment")
            if text.startswith("!=", i):
                op, i = FieldOperator.NOT_EQUALS, i + 2
            elif text.startswith("==", i):
                op, i = FieldOperator.EQUALS, i + 2
            elif text[i] == "=":
                op, i = FieldOperator.EQUALS, i + 1
            else:
                raise error(i, "expected '=', '==' or '!='")
            value_chars: list[str] = []
            while i < n and text[i] != ",":
                c = text[i]
                if c == "\\":
                    if i + 1 >= n or text[i + 1] not in _ESCAPABLE:
                        raise error(i, "invalid escape; only \\\\, \\, \\= and \\! are allowed")
                    value_chars.append(text[i + 1])
                    i += 2
                    continue
                if c in "=!":
                    raise error(i, f"unescaped {c!r} in a value")
                value_chars.append(c)
                i += 1
            reqs.append(FieldRequirement(field, op, "".join(value_chars).strip()))
            i += 1  # the comma
        return cls(reqs)

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> FieldSelector:
        """Equality terms from ``{"metadata.name": "x", ...}`` (ValueError for anything but a mapping)."""
        if not isinstance(fields, Mapping):
            raise ValueError(
                f"a field selector mapping must be a mapping, got {type(fields).__name__}"
            )
        return cls(
            FieldRequirement(str(k), FieldOperator.EQUALS, _field_string(v) or "")
            for k, v in fields.items()
        )

    @classmethod
    def everything(cls) -> FieldSelector:
        return _FIELDS_EVERYTHING

    @property
    def requirements(self) -> tuple[FieldRequirement, ...]:
        return self._reqs

    @property
    def empty(self) -> bool:
        return not self._reqs

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` satisfies every term (a missing field reads as ``""``)."""
        for path, equals, want in self._compiled:
            cur: Any = obj
            for part in path:
                if isinstance(cur, Mapping):
                    cur = cur.get(part)
                else:
                    cur = None
                    break
            have = _field_string(cur)
            if (have == want) is not equals:
                return False
        return True

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"FieldSelector({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self._reqs == other._reqs

    def __hash__(self) -> int:
        return hash(self._reqs)


_FIELDS_EVERYTHING = FieldSelector()


def as_field_selector(selector: str | Mapping[str, Any] | FieldSelector | None) -> FieldSelector:
    """Coerce None (everything), a string, a ``{path: value}`` mapping or a selector."""
    if selector is None:
        return _FIELDS_EVERYTHING
    if isinstance(selector, FieldSelector):
        return selector
    if isinstance(selector, str):
        return FieldSelector.parse(selector)
    if isinstance(selector, Mapping):
        return FieldSelector.from_dict(selector)
    raise TypeError(f"cannot use a {type(selector).__name__} as a field selector")
