"""CEL validation rules (``x-kubernetes-validations``) of custom resources, as kube-apiserver evaluates them.

Evaluated with ``cel-expr-python`` (the CEL project's own Python binding of
cel-cpp) plus its strings, bindings, math, optional and encoders extensions,
and the Kubernetes libraries implemented here: lists (``isSorted``, ``sum``,
``min``, ``max``), regex (``find``, ``findAll``), URLs (``url``, ``isURL``
and the getters), quantities (``quantity``, ``isQuantity``, comparisons,
``add``/``sub``, ``asInteger``, ``asApproximateFloat``, ``sign``,
``isInteger``), IPs and CIDRs (``ip``, ``isIP``, ``cidr``, ``isCIDR``,
``containsIP``, ``containsCIDR``, ``family``, ``prefixLength``, ``masked``,
the ``is*`` predicates) and ``sets.contains/equivalent/intersects``.

The rules of a node run on every write with ``self`` bound to the node's
value (the resource root also shows ``apiVersion``, ``kind`` and
``metadata.name``/``generateName``), fields named as Kubernetes escapes
them (``foo-bar`` is ``self.foo__dash__bar``), ``number`` fields as doubles.
Transition rules (using ``oldSelf``) run on updates where an old value
correlates (object fields, map keys, items of ``x-kubernetes-list-type:
map`` lists by their keys), unless ``optionalOldSelf``. A failed rule's
cause names ``fieldPath`` when given, its ``reason`` picks the cause type,
``messageExpression`` (else ``message``, else ``failed rule: RULE``) its
text. An error of an unchanged value is only a warning (ratcheting).

What cannot be evaluated here (a Kubernetes library we lack: ``semver``,
``format``, ``indexOf``/``lastIndexOf`` on lists, two-variable
comprehensions, ``authorizer`` ...; or any rule the library cannot compile
other than by a syntax error) is **skipped with a warning logged once per
rule** (logger ``pyinformers.testing.apiserver``); a syntax error refuses
the CRD with the real server's 422. Without ``cel-expr-python`` installed
(the ``cel`` extra) every rule is skipped that way. Unlike the real server there is no cost
budget and no static type check against the schema.

Compiled programs are cached by rule text; evaluation is thread-safe.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import re
import threading
import urllib.parse
from fractions import Fraction
from typing import Any

from pyinformers.testing.apiserver._structural import (
    ROOT_FIELD,
    ratchets,
    schema_mentions,
    schema_nodes,
)

__all__ = ["cel_causes", "match_condition", "rule_causes", "unsupported_rules", "CelRuleResult"]

log = logging.getLogger("pyinformers.testing.apiserver")

Cause = tuple[str, str, str]
RULES = "x-kubernetes-validations"
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*\Z")

# -- quantities ----------------------------------------------------------------------------------

_QUANTITY = re.compile(
    r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?\Z"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QKEY = "__quantity__"


def parse_quantity(text: str) -> Fraction:
    """A Kubernetes quantity (``1Gi``, ``500m``, ``1e3``) as an exact number; ValueError if it is none."""
    return _parse_quantity(text)[0]


def _parse_quantity(text: str) -> tuple[Fraction, int]:
    """``(value, scale)``: the decimal exponent of its last digit as Kubernetes keeps it (``1500m``: -3)."""
    m = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    digits, suffix = m.group(1), m.group(2) or ""
    number = Fraction(digits)
    decimals = -len(digits.split(".", 1)[1]) if "." in digits else 0
    if suffix in _BINARY:
        value = number * _BINARY[suffix]
        return value, 0 if value.denominator == 1 else -9
    if suffix in _DECIMAL:
        exponent = {
            "n": -9,
            "u": -6,
            "m": -3,
            "": 0,
            "k": 3,
            "M": 6,
            "G": 9,
            "T": 12,
            "P": 15,
            "E": 18,
        }[suffix]
    else:
        exponent = int(suffix[1:])
    return number * Fraction(10) ** exponent, exponent + decimals


def _q(value: Fraction, scale: int) -> dict:
    return {_QKEY: f"{value.numerator}/{value.denominator}", "__scale__": scale}


def _qv(q: Any) -> Fraction:
    if isinstance(q, int):
        return Fraction(q)
    return Fraction(str(dict(q)[_QKEY]))


def _qs(q: Any) -> int:
    return 0 if isinstance(q, int) else int(dict(q)["__scale__"])


def _q_add(a: Any, b: Any, sign: int) -> dict:
    """A sum keeps the finer of the two scales, as Kubernetes' int64Amount does."""
    return _q(_qv(a) + sign * _qv(b), min(_qs(a), _qs(b)))


def _q_int(q: Any) -> int:
    """As Kubernetes' AsInt64: an integer kept at a scale >= 0 that fits in 64 bits (``2000m`` is none)."""
    value = _qv(q)
    if value.denominator != 1 or _qs(q) < 0 or not -(2**63) <= value.numerator < 2**63:
        raise ValueError("cannot convert value to integer")
    return value.numerator


# -- URLs and IPs --------------------------------------------------------------------------------


def _url(text: str) -> dict:
    parsed = urllib.parse.urlsplit(text)
    if not parsed.scheme or not (parsed.netloc or parsed.path.startswith("/")):
        raise ValueError(f"URL is invalid: {text}")
    return {"__url__": text}


def _is_url(text: str) -> bool:
    try:
        _url(text)
        return True
    except ValueError:
        return False


def _split(u: Any) -> urllib.parse.SplitResult:
    return urllib.parse.urlsplit(str(dict(u)["__url__"]))


def _query(u: Any) -> dict:
    result: dict[str, list[str]] = {}
    for key, value in urllib.parse.parse_qsl(_split(u).query, keep_blank_values=True):
        result.setdefault(key, []).append(value)
    return result


def _ip(text: str) -> dict:
    if "%" in text:
        raise ValueError(f"IP address with zone value is not allowed: {text}")
    return {"__ip__": str(ipaddress.ip_address(text))}


def _cidr(text: str) -> dict:
    network = ipaddress.ip_interface(text)
    return {"__cidr__": str(network)}


def _ipv(a: Any) -> Any:
    return ipaddress.ip_address(str(dict(a)["__ip__"]))


def _cidrv(a: Any) -> Any:
    return ipaddress.ip_interface(str(dict(a)["__cidr__"]))


def _succeeds(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
        return True
    except ValueError:
        return False


def _contains_ip(c: Any, other: Any) -> bool:
    address = ipaddress.ip_address(other) if isinstance(other, str) else _ipv(other)
    return address in _cidrv(c).network


def _contains_cidr(c: Any, other: Any) -> bool:
    inner = ipaddress.ip_interface(other) if isinstance(other, str) else _cidrv(other)
    outer = _cidrv(c).network
    return inner.version == outer.version and inner.network.subnet_of(outer)


def _sorted(items: Any) -> bool:
    values = list(items)
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


def _find(text: str, pattern: str) -> str:
    m = re.search(pattern, text)
    return m.group(0) if m else ""


# -- the environment -----------------------------------------------------------------------------


class _Env:
    """The CEL environment (built once, on first use: importing the library costs ~0.1 s)."""

    _lock = threading.Lock()
    _env: Any = None
    _admission: Any = None

    @classmethod
    def get(cls) -> Any:
        with cls._lock:
            if cls._env is None:
                cls._env = cls._build()
            return cls._env

    @classmethod
    def admission(cls) -> Any:
        """The environment of admission webhooks' ``matchConditions`` (``object``, ``oldObject``, ``request``)."""
        with cls._lock:
            if cls._admission is None:
                cls._admission = cls._build(("object", "oldObject", "request"))
            return cls._admission

    @staticmethod
    def _build(admission: tuple[str, ...] = ()) -> Any:
        from cel_expr_python import cel  # type: ignore[import-untyped]
        from cel_expr_python.ext import (  # type: ignore[import-untyped]
            ext_bindings,
            ext_encoders,
            ext_math,
            ext_optional,
            ext_strings,
        )

        T = cel.Type
        L, S, B, N, D, DY = T.List(T.DYN), T.STRING, T.BOOL, T.INT, T.DOUBLE, T.DYN
        M = T.Map(T.STRING, T.DYN)

        def fn(name: str, *overloads: tuple) -> Any:
            return cel.FunctionDecl(
                name,
                [
                    cel.Overload(f"{name}_{i}", ret, params, is_member=member, impl=impl)
                    for i, (ret, params, member, impl) in enumerate(overloads)
                ],
            )

        def q_cmp(a: Any, b: Any) -> int:
            x, y = _qv(a), _qv(b)
            return (x > y) - (x < y)

        functions = [
            # lists
            fn("isSorted", (B, [L], True, _sorted)),
            fn("sum", (DY, [L], True, lambda items: sum(list(items)))),
            fn("min", (DY, [L], True, lambda items: min(list(items)))),
            fn("max", (DY, [L], True, lambda items: max(list(items)))),
            # regex
            fn("find", (S, [S, S], True, _find)),
            fn("findAll", (L, [S, S], True, _find_all), (L, [S, S, N], True, _find_all)),
            # URLs
            fn("url", (M, [S], False, _url)),
            fn("isURL", (B, [S], False, _is_url)),
            fn("getScheme", (S, [M], True, lambda u: _split(u).scheme)),
            fn("getHost", (S, [M], True, lambda u: _split(u).netloc.rsplit("@", 1)[-1])),
            fn("getHostname", (S, [M], True, lambda u: _split(u).hostname or "")),
            fn("getPort", (S, [M], True, lambda u: str(_split(u).port or ""))),
            fn("getEscapedPath", (S, [M], True, lambda u: _split(u).path)),
            fn("getQuery", (T.Map(T.STRING, L), [M], True, _query)),
            # quantities
            fn("quantity", (M, [S], False, lambda s: _q(*_parse_quantity(s)))),
            fn("isQuantity", (B, [S], False, lambda s: _succeeds(parse_quantity, s))),
            fn("compareTo", (N, [M, M], True, q_cmp)),
            fn("isGreaterThan", (B, [M, M], True, lambda a, b: q_cmp(a, b) > 0)),
            fn("isLessThan", (B, [M, M], True, lambda a, b: q_cmp(a, b) < 0)),
            fn(
                "add",
                (M, [M, M], True, lambda a, b: _q_add(a, b, 1)),
                (M, [M, N], True, lambda a, b: _q_add(a, b, 1)),
            ),
            fn(
                "sub",
                (M, [M, M], True, lambda a, b: _q_add(a, b, -1)),
                (M, [M, N], True, lambda a, b: _q_add(a, b, -1)),
            ),
            fn("asInteger", (N, [M], True, _q_int)),
            fn("isInteger", (B, [M], True, lambda q: _succeeds(_q_int, q))),
            fn("asApproximateFloat", (D, [M], True, lambda q: float(_qv(q)))),
            fn("sign", (N, [M], True, lambda q: (_qv(q) > 0) - (_qv(q) < 0))),
            # IPs and CIDRs
            fn("ip", (M, [S], False, _ip)),
            fn("isIP", (B, [S], False, lambda s: _succeeds(_ip, s))),
            fn("cidr", (M, [S], False, _cidr)),
            fn("isCIDR", (B, [S], False, lambda s: _succeeds(_cidr, s))),
            fn(
                "family",
                (N, [M], True, lambda a: (_ipv(a) if "__ip__" in dict(a) else _cidrv(a)).version),
            ),
            fn("isLoopback", (B, [M], True, lambda a: _ipv(a).is_loopback)),
            fn("isUnspecified", (B, [M], True, lambda a: _ipv(a).is_unspecified)),
            fn(
                "isLinkLocalMulticast",
                (B, [M], True, lambda a: _ipv(a).is_multicast and _ipv(a).is_link_local),
            ),
            fn(
                "isLinkLocalUnicast",
                (B, [M], True, lambda a: _ipv(a).is_link_local and not _ipv(a).is_multicast),
            ),
            fn(
                "isGlobalUnicast",
                (
                    B,
                    [M],
                    True,
                    lambda a: (
                        not (
                            _ipv(a).is_multicast
                            or _ipv(a).is_loopback
                            or _ipv(a).is_link_local
                            or _ipv(a).is_unspecified
                        )
                    ),
                ),
            ),
            fn("containsIP", (B, [M, S], True, _contains_ip), (B, [M, M], True, _contains_ip)),
            fn(
                "containsCIDR", (B, [M, S], True, _contains_cidr), (B, [M, M], True, _contains_cidr)
            ),
            fn("prefixLength", (N, [M], True, lambda c: _cidrv(c).network.prefixlen)),
            fn("masked", (M, [M], True, lambda c: {"__cidr__": str(_cidrv(c).network)})),
            # sets
            fn(
                "sets.contains", (B, [L, L], False, lambda a, b: all(x in list(a) for x in list(b)))
            ),
            fn(
                "sets.equivalent",
                (
                    B,
                    [L, L],
                    False,
                    lambda a, b: (
                        all(x in list(a) for x in list(b)) and all(x in list(b) for x in list(a))
                    ),
                ),
            ),
            fn(
                "sets.intersects",
                (B, [L, L], False, lambda a, b: any(x in list(a) for x in list(b))),
            ),
        ]
        variables = (
            {name: T.DYN for name in admission}
            if admission
            else {"self": T.DYN, "oldSelf": T.DYN, _OLD_LIST: T.List(T.DYN)}
        )
        return cel.NewEnv(
            variables=variables,
            extensions=[
                ext_strings.ExtStrings(),
                ext_bindings.ExtBindings(),
                ext_math.ExtMath(),
                ext_optional.ExtOptional(),
                ext_encoders.ExtEncoders(),
            ],
            functions=functions,
        )


class _Compiled:
    """A rule's program, or why there is none: ``syntax_error`` (the CRD is refused) or ``unsupported`` (skipped)."""

    __slots__ = ("text", "program", "syntax_error", "unsupported", "uses_old_self")

    def __init__(
        self, text: str, program: Any, syntax_error: str, unsupported: str, uses_old_self: bool
    ) -> None:
        self.text = text
        self.program = program
        self.syntax_error = syntax_error
        self.unsupported = unsupported
        self.uses_old_self = uses_old_self


_OLD_SELF = re.compile(r"\boldSelf\b")
_NO_BIND = re.compile(r"(?<![\w.])(cel)\.bind\s*\(")


MISSING_LIBRARY = "the CEL library is not installed (pip install 'pyinformers[cel]', which brings cel-expr-python)"


@functools.lru_cache(maxsize=4096)
def _compile(text: str) -> _Compiled:
    uses_old_self = bool(_OLD_SELF.search(text))
    try:
        env = _Env.get()
    except ImportError:
        return _Compiled(text, None, "", MISSING_LIBRARY, uses_old_self)
    try:
        return _Compiled(text, env.compile(text), "", "", uses_old_self)
    except Exception as exc:  # the binding raises RuntimeError with cel-cpp's status text
        detail = _status_text(str(exc))
        if "Syntax error" in detail:
            return _Compiled(text, None, detail, "", uses_old_self)
        return _Compiled(
            text, None, "", detail.splitlines()[0] if detail else type(exc).__name__, uses_old_self
        )


def _status_text(text: str) -> str:
    """cel-cpp's status as cel-go words it: no ``INVALID_ARGUMENT:`` prefix, no ``[CODE]`` suffix."""
    text = re.sub(r"^[A-Z_]+: ", "", text.strip())
    return re.sub(r"\s*\[[A-Z_]+\]$", "", text)


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(rule: str, why: str) -> None:
    with _warned_lock:
        if rule in _warned:
            return
        _warned.add(rule)
    log.warning(
        "the embedded API server cannot evaluate the CEL rule %r (%s): writes are not checked against it, "
        "a real server's answer may differ",
        rule,
        why,
    )


# -- values as CEL sees them -----------------------------------------------------------------------


def escape(name: str) -> str | None:
    """A property name as CEL rules reference it (``foo-bar`` -> ``foo__dash__bar``); None if it cannot be."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    escaped = (
        name.replace("__", "__underscores__")
        .replace(".", "__dot__")
        .replace("-", "__dash__")
        .replace("/", "__slash__")
    )
    return escaped if _IDENT.match(escaped) else None


def _props(schema: dict | None) -> dict:
    props = schema.get("properties") if schema else None
    return props if isinstance(props, dict) else {}


def to_cel(value: Any, schema: dict | None, *, resource_root: bool = False) -> Any:
    """``value`` typed as the schema types it for CEL (number fields as doubles, escaped property names)."""
    if schema is None or value is None:
        return value
    if isinstance(value, dict):
        props = _props(schema)
        additional = schema.get("additionalProperties")
        embedded = resource_root or schema.get("x-kubernetes-embedded-resource") is True
        out: dict[str, Any] = {}
        for key, item in value.items():
            if embedded and key in ("apiVersion", "kind"):
                out[key] = item
            elif embedded and key == "metadata" and isinstance(item, dict):
                out[key] = {k: item[k] for k in ("name", "generateName") if k in item}
            elif key in props:
                name = escape(key)
                if name is not None:
                    out[name] = to_cel(item, props[key] if isinstance(props[key], dict) else None)
            elif isinstance(additional, dict):
                out[key] = to_cel(item, additional)
            else:
                out[key] = item
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [to_cel(item, items if isinstance(items, dict) else None) for item in value]
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


# -- evaluation ------------------------------------------------------------------------------------


class CelRuleResult:
    """What the rules of one write found: ``causes`` (a 422) and ``warnings`` (ratcheted errors)."""

    __slots__ = ("causes", "warnings")

    def __init__(self) -> None:
        self.causes: list[Cause] = []
        self.warnings: list[str] = []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _cel_error(text: str) -> str:
    """A cel-cpp runtime error in cel-go's words, where they differ."""
    text = _status_text(text)
    m = re.match(r'Key not found in map : "?(.*?)"?$', text)
    if m:
        return f"no such key: {m.group(1)}"
    if text == "divide by zero":
        return "division by zero"
    if text.startswith("No matching overloads found"):
        return f"no such overload: {text}"
    return text


def _field_path(path: str, rule_path: str) -> str:
    """``fieldPath`` (``.spec.x``, ``['a.b']``) appended to ``path`` as a field.Path prints it."""
    out = path
    for m in re.finditer(r"\.([^.\[]+)|\['((?:[^'\\]|\\.)*)'\]", rule_path):
        key = m.group(1) if m.group(1) is not None else m.group(2)
        out = _join(out, key) if m.group(1) is not None else f"{out}[{key}]"
    return out


def _format_cause(reason: str, path: str, type_name: str, detail: str) -> Cause:
    """A failed rule's cause as kube-apiserver 1.36 words it (the value, a type name, is not quoted)."""
    path = path or ROOT_FIELD
    if reason == "FieldValueForbidden":
        return ("FieldValueForbidden", path, f"Forbidden: {detail}")
    if reason == "FieldValueRequired":
        return ("FieldValueRequired", path, f"Required value: {detail}")
    if reason == "FieldValueDuplicate":
        return ("FieldValueDuplicate", path, f'Duplicate value: "{type_name}"')
    return ("FieldValueInvalid", path, f"Invalid value: {detail}")


def _rule_string(rule: dict) -> str:
    message = rule.get("message")
    return (
        message.strip()
        if isinstance(message, str) and message.strip()
        else str(rule.get("rule", "")).strip()
    )


def _evaluate(program: Any, activation: Any) -> tuple[Any, str]:
    """``(result, error text)`` of one program."""
    try:
        value = program.eval(activation)
    except Exception as exc:
        return None, _cel_error(str(exc))
    if value.type().name() == "ERROR":
        return None, _cel_error(str(value.plain_value()))
    return value.plain_value(), ""


class _Node:
    """The CEL values of one schema node on one write, converted once and shared by its rules."""

    def __init__(
        self, schema: dict, value: Any, old: Any, has_old: bool, resource_root: bool
    ) -> None:
        self.schema, self.value, self.old, self.has_old, self.resource_root = (
            schema,
            value,
            old,
            has_old,
            resource_root,
        )
        self._activation: Any = None
        self._optional: Any = None

    def _old_cel(self) -> Any:
        return (
            to_cel(self.old, self.schema, resource_root=self.resource_root)
            if self.has_old
            else None
        )

    def activation(self) -> Any:
        """``self`` and (on an update with a correlated old value) ``oldSelf``."""
        if self._activation is None:
            data = {"self": to_cel(self.value, self.schema, resource_root=self.resource_root)}
            if self.has_old:
                data["oldSelf"] = self._old_cel()
            self._activation = _Env.get().Activation(data)
        return self._activation

    def optional_activation(self) -> Any:
        """For ``optionalOldSelf`` rules: the old value as a list of at most one (see :func:`_optional_program`)."""
        if self._optional is None:
            data = {
                "self": to_cel(self.value, self.schema, resource_root=self.resource_root),
                _OLD_LIST: [self._old_cel()] if self.has_old else [],
            }
            self._optional = _Env.get().Activation(data)
        return self._optional


def _check_node(
    schema: dict,
    value: Any,
    old: Any,
    has_old: bool,
    path: str,
    result: CelRuleResult,
    resource_root: bool,
) -> None:
    rules = schema.get(RULES)
    if not isinstance(rules, list) or not rules:
        return
    type_name = str(schema.get("type") or "")
    node = _Node(schema, value, old, has_old, resource_root)
    for rule in rules:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        compiled = _compile(rule["rule"])
        if compiled.program is None:
            if compiled.unsupported:
                _warn_once(rule["rule"], compiled.unsupported)
            continue
        optional_old = rule.get("optionalOldSelf") is True and compiled.uses_old_self
        if compiled.uses_old_self and not has_old and not optional_old:
            continue  # a transition rule runs only where an old value correlates
        if optional_old:
            program = _optional_program(compiled.text)
            if program is None:
                _warn_once(rule["rule"], "optionalOldSelf could not be compiled here")
                continue
            outcome, error = _evaluate(program, node.optional_activation())
        else:
            outcome, error = _evaluate(compiled.program, node.activation())
        if error:
            detail = f"{error} evaluating rule: {_rule_string(rule)}"
            result.causes.append(_format_cause("FieldValueInvalid", path, type_name, detail))
            continue
        if outcome is True:
            continue
        detail = _message(rule, node)
        where = path
        if isinstance(rule.get("fieldPath"), str) and rule["fieldPath"]:
            where = _field_path(path, rule["fieldPath"])
        reason = rule.get("reason") if rule.get("reason") in _REASONS else "FieldValueInvalid"
        cause = _format_cause(str(reason), where, type_name, detail)
        if not compiled.uses_old_self and has_old and ratchets(schema, value, old):
            result.warnings.append(f"{cause[1]}: {cause[2]}")  # ratcheted: an unchanged value
        else:
            result.causes.append(cause)


_OLD_LIST = "oldSelfValues__"


@functools.lru_cache(maxsize=1024)
def _optional_program(text: str) -> Any:
    """``text`` with ``oldSelf`` bound to an optional: ``optional.of(old)`` on update, ``optional.none()`` on create."""
    wrapped = f"cel.bind(oldSelf, size({_OLD_LIST}) > 0 ? optional.of({_OLD_LIST}[0]) : optional.none(), {text})"
    try:
        return _Env.get().compile(wrapped)
    except Exception:
        return None


def _message(rule: dict, node: _Node) -> str:
    """A failed rule's text: its messageExpression's value, else its message, else ``failed rule: RULE``."""
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression.strip():
        compiled = _compile(expression)
        if compiled.program is not None and (node.has_old or not compiled.uses_old_self):
            text, error = _evaluate(compiled.program, node.activation())
            if not error and isinstance(text, str) and text.strip() and "\n" not in text.strip():
                return text.strip()
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return f"failed rule: {_rule_string(rule)}"


def _walk(
    schema: dict,
    value: Any,
    old: Any,
    has_old: bool,
    path: str,
    result: CelRuleResult,
    resource_root: bool = False,
) -> None:
    if value is None:
        return
    _check_node(schema, value, old, has_old, path, result, resource_root)
    for branch in schema.get("allOf") or ():
        if isinstance(branch, dict) and RULES in branch:
            _check_node(
                dict(branch, type=schema.get("type")),
                value,
                old,
                has_old,
                path,
                result,
                resource_root,
            )
    if isinstance(value, dict):
        props = _props(schema)
        additional = schema.get("additionalProperties")
        correlate = (
            has_old and isinstance(old, dict) and schema.get("x-kubernetes-map-type") != "atomic"
        )
        for key, item in value.items():
            sub = props.get(key)
            if not isinstance(sub, dict):
                sub = additional if isinstance(additional, dict) else None
            if sub is None or not _has_rules(sub):
                continue
            child = _join(path, key) if key in props else f"{path}[{key}]"
            if resource_root and key == "metadata":
                continue
            _walk(
                sub,
                item,
                old.get(key) if correlate else None,
                bool(correlate and key in old),
                child,
                result,
                sub.get("x-kubernetes-embedded-resource") is True,
            )
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict) or not _has_rules(items):
            return
        keys = schema.get("x-kubernetes-list-map-keys")
        olds: dict[Any, Any] = {}
        if (
            has_old
            and isinstance(old, list)
            and schema.get("x-kubernetes-list-type") == "map"
            and isinstance(keys, list)
        ):
            for entry in old:
                if isinstance(entry, dict):
                    olds[_key_of(entry, keys)] = entry
        for i, item in enumerate(value):
            identity = (
                _key_of(item, keys)
                if olds and isinstance(item, dict) and isinstance(keys, list)
                else None
            )
            has_item_old = identity is not None and identity in olds
            _walk(
                items,
                item,
                olds.get(identity) if has_item_old else None,
                has_item_old,
                f"{path}[{i}]",
                result,
                items.get("x-kubernetes-embedded-resource") is True,
            )


def _key_of(item: dict, keys: list) -> str:
    return json.dumps([item.get(k) for k in keys], sort_keys=True)


def _has_rules(schema: dict) -> bool:
    """Whether ``schema`` or anything below it has rules (memoised per schema object)."""
    return schema_mentions(schema, f'"{RULES}"')


def cel_causes(
    schema: dict | None, obj: dict, old: dict | None = None, *, status_only: bool = False
) -> CelRuleResult:
    """Evaluate every ``x-kubernetes-validations`` rule of ``schema`` on ``obj`` (``old``: the stored object on update)."""
    result = CelRuleResult()
    if not isinstance(schema, dict) or not _has_rules(schema):
        return result
    if status_only:
        status_schema = _props(schema).get("status")
        if isinstance(status_schema, dict) and "status" in obj:
            has_old = isinstance(old, dict) and "status" in old
            _walk(
                status_schema,
                obj["status"],
                old.get("status") if has_old and old else None,
                has_old,
                "status",
                result,
            )
        return result
    _walk(schema, obj, old, old is not None, "", result, resource_root=True)
    result.causes.sort(key=lambda cause: cause[1])
    return result


# -- the CRD's side ----------------------------------------------------------------------------------


def _rule_dump(rule: dict) -> str:
    """A rule as the real server quotes it in its messages: Go's JSON of apiextensions.ValidationRule."""

    def text(key: str) -> str:
        value = rule.get(key)
        return value if isinstance(value, str) else ""

    dump = {
        "Rule": text("rule"),
        "Message": text("message"),
        "MessageExpression": text("messageExpression"),
        "Reason": rule.get("reason") if isinstance(rule.get("reason"), str) else None,
        "FieldPath": text("fieldPath"),
        "OptionalOldSelf": rule.get("optionalOldSelf")
        if isinstance(rule.get("optionalOldSelf"), bool)
        else None,
    }
    encoded = json.dumps(dump, separators=(",", ":"), ensure_ascii=False)
    return encoded.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_FIELD_ACCESS = re.compile(r"(?<![\w.])(has\(\s*)?(?:self|oldSelf)\.([A-Za-z_]\w*)\b(?!\s*\()")


def _undefined_fields(node: dict, text: str, resource_root: bool) -> str:
    """The real server's type check, for the simplest case: ``self.x`` naming no property of an object node.

    Only where the node's fields are all known (properties, no additionalProperties, no
    preserve-unknown-fields); the error text is cel-go's (``undefined field 'x'``).
    """
    props = _props(node)
    if node.get("type") != "object" or not props or node.get("additionalProperties") is not None:
        return ""
    if node.get("x-kubernetes-preserve-unknown-fields") is True:
        return ""
    known = {escape(key) for key in props}
    if resource_root or node.get("x-kubernetes-embedded-resource") is True:
        known |= {"apiVersion", "kind", "metadata"}
    errors = []
    masked = _STRINGS.sub(lambda m: " " * len(m.group(0)), text)  # no field access inside literals
    for m in _FIELD_ACCESS.finditer(masked):
        name = m.group(2)
        if name in known:
            continue
        at = (
            m.start() + len("has") if m.group(1) else m.start(2) - 1
        )  # has(): its '('; else the '.'
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        source = text[line_start : line_end if line_end >= 0 else len(text)]
        column = at - line_start + 1
        line = text.count("\n", 0, at) + 1
        errors.append(
            f"ERROR: <input>:{line}:{column}: undefined field '{name}'\n | {source}\n | {'.' * (column - 1)}^"
        )
    return "\n".join(errors)


def rule_causes(schema: dict, path: str) -> list[Cause]:
    """Why the rules in a CRD's schema are refused (syntax errors, unknown reasons); never raises."""
    causes: list[Cause] = []

    for node, npath in schema_nodes(schema, path):
        rules = node.get(RULES)
        if isinstance(rules, list):
            for i, rule in enumerate(rules):
                rpath = f"{npath}.{RULES}[{i}]"
                if not isinstance(rule, dict):
                    continue
                text = rule.get("rule")
                if not isinstance(text, str) or not text.strip():
                    causes.append(("FieldValueRequired", f"{rpath}.rule", "Required value"))
                    continue
                compiled = _compile(text)
                bind = _NO_BIND.search(text)
                if bind is not None:  # kube-apiserver's CRD environment has no bindings extension
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"{rpath}.rule",
                            f"Invalid value: {_rule_dump(rule)}: compilation failed: "
                            f"ERROR: <input>:1:{bind.start(1) + 1}: undeclared reference to 'cel' (in container '')",
                        )
                    )
                elif compiled.syntax_error or _undefined_fields(node, text, npath == path):
                    detail = compiled.syntax_error or _undefined_fields(node, text, npath == path)
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"{rpath}.rule",
                            f"Invalid value: {_rule_dump(rule)}: compilation failed: {detail}",
                        )
                    )
                reason = rule.get("reason")
                if reason is not None and reason not in _REASONS:
                    supported = ", ".join(f'"{r}"' for r in _REASONS)
                    causes.append(
                        (
                            "FieldValueNotSupported",
                            f"{rpath}.reason",
                            f'Unsupported value: "{reason}": supported values: {supported}',
                        )
                    )
                expression = rule.get("messageExpression")
                if (
                    isinstance(expression, str)
                    and expression.strip()
                    and _compile(expression).syntax_error
                ):
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"{rpath}.messageExpression",
                            f"Invalid value: {_rule_dump(rule)}: messageExpression compilation failed: {_compile(expression).syntax_error}",
                        )
                    )
    return causes


def unsupported_rules(schema: Any) -> list[tuple[str, str]]:
    """``(rule, why)`` for every rule of ``schema`` this module cannot evaluate; each is logged once."""
    found: list[tuple[str, str]] = []
    if not isinstance(schema, dict):
        return found
    for node, _ in schema_nodes(schema):
        branches = [b for b in node.get("allOf") or () if isinstance(b, dict)]
        for holder in [node, *branches]:
            for rule in holder.get(RULES) or ():
                if isinstance(rule, dict) and isinstance(rule.get("rule"), str):
                    compiled = _compile(rule["rule"])
                    if compiled.unsupported:
                        found.append((rule["rule"], compiled.unsupported))
                        _warn_once(rule["rule"], compiled.unsupported)
    return found


def match_condition(expression: str, variables: dict[str, Any]) -> tuple[bool | None, str]:
    """An admission webhook's match condition on ``variables``: ``(result, error)``; result None on error.

    ``authorizer`` and ``params`` are not available here (an expression using them is an error).
    """
    try:
        env = _Env.admission()
    except ImportError:
        return None, MISSING_LIBRARY
    try:
        program = env.compile(expression)
    except Exception as exc:
        return None, _status_text(str(exc)).splitlines()[0]
    value, error = _evaluate(program, env.Activation(variables))
    if error:
        return None, error
    if not isinstance(value, bool):
        return None, f"expression {expression!r} did not evaluate to a bool"
    return value, ""
