"""Why kube-apiserver rejects a label or field selector, in its words.

:func:`label_selector_error` and :func:`field_selector_error` return the
message a real API server puts in its 400 for a selector it cannot parse, or
None when it accepts the selector. They follow the grammar of the Go parsers
in apimachinery (``labels.Parse``, ``fields.ParseSelector``) closely enough to
stop at the same place and say the same thing, which a general-purpose parser
(:mod:`pyinformers.api._selectors`) does not: the server parses with that one
once these say the selector is well formed.

The label grammar: a lexer turns the text into identifiers, the keywords
``in`` and ``notin`` and the symbols ``( ) , ! = == != < >``; a requirement
is ``[!]KEY`` or ``KEY OP VALUE`` or ``KEY in|notin (VALUES)``; requirements
are separated by commas. The field grammar: comma-separated terms, examined
in sorted order, each ``FIELD OP VALUE`` with OP the first of ``!=``, ``==``,
``=`` found scanning from the left; values may escape ``\\``, ``,`` and ``=``
with a backslash and must escape them.

Pure functions; thread-safe.
"""

from __future__ import annotations

from pyinformers.testing.apiserver._status import go_quote
from pyinformers.testing.apiserver._validation import label_key_errors, label_value_errors

__all__ = ["label_selector_error", "field_selector_error", "field_terms"]

# -- labels -------------------------------------------------------------------------------------

_SYMBOLS = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {
    ")": ")",
    ",": ",",
    "!": "!",
    "==": "==",
    "=": "=",
    ">": ">",
    "in": "in",
    "<": "<",
    "!=": "!=",
    "notin": "notin",
    "(": "(",
}
_BINARY = "in, notin, =, ==, !=, gt, lt"
_ID = "id"
_END = "end"


class _Fail(Exception):
    """A parse error; its text is the server's message."""


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, literal) tokens ending with the end marker; kind is a symbol, a keyword, ``id`` or ``end``."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n or text[i] == "\0":  # the Go lexer reads a NUL byte as the end
            tokens.append((_END, ""))
            return tokens
        if text[i] in _SYMBOLS:
            j = i + 1
            if j < n and text[i : j + 1] in ("==", "!="):
                j += 1
            tokens.append((text[i:j], text[i:j]))
            i = j
            continue
        j = i
        while j < n and text[j] not in _SYMBOLS and text[j] not in _WHITESPACE and text[j] != "\0":
            j += 1
        word = text[i:j]
        tokens.append((_TOKENS.get(word, _ID), word))
        i = j


class _LabelParser:
    """Go's recursive descent over the tokens; raises :class:`_Fail` with the server's message."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, *, values: bool = True) -> tuple[str, str]:
        return self._as(self.tokens[self.pos], values)

    def take(self, *, values: bool = True) -> tuple[str, str]:
        self.pos += 1
        return self._as(self.tokens[self.pos - 1], values)

    @staticmethod
    def _as(token: tuple[str, str], values: bool) -> tuple[str, str]:
        # where values are expected, the keywords are plain words
        return (_ID, token[1]) if values and token[0] in ("in", "notin") else token

    def parse(self) -> None:
        while True:
            kind, literal = self.peek()
            if kind == _END:
                return
            if kind not in (_ID, "!"):
                raise _Fail(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                self.requirement()
            except _Fail as exc:
                raise _Fail(f"unable to parse requirement: {exc}") from None
            kind, literal = self.take()
            if kind == _END:
                return
            if kind != ",":
                raise _Fail(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self.peek()
            if kind not in (_ID, "!"):
                raise _Fail(f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> None:
        kind, key = self.take()
        unary = kind == "!"
        if unary:
            kind, key = self.take()
        if kind != _ID:
            raise _Fail(f"found '{key}', expected: identifier")
        problems = label_key_errors(key)
        if problems:
            raise _Fail(f"<nil>: Invalid value: {go_quote(key)}: " + "; ".join(problems))
        if unary or self.peek()[0] in (_END, ","):
            return  # exists / does not exist
        op, literal = self.take(values=False)
        if op in ("in", "notin"):
            values = self.set_values()
        elif op in ("=", "==", "!=", ">", "<"):
            values = [self.exact_value()]
        else:
            raise _Fail(f"found '{literal}', expected: {_BINARY}")
        self.check(key, op, sorted(set(values)))

    def set_values(self) -> list[str]:
        kind, literal = self.take()
        if kind != "(":
            raise _Fail(f"found '{literal}' expected: '('")
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return [""]
        if kind not in (_ID, ","):
            raise _Fail(f"found '{literal}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.take()[0] != ")":
            raise _Fail(f"found '{literal}', expected: ')'")
        return values

    def identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            kind, literal = self.take()
            if kind == _ID:
                values.append(literal)
                after, next_literal = self.peek()
                if after == ")":
                    return values
                if after != ",":
                    raise _Fail(f"found '{next_literal}', expected: ',' or ')'")
            elif kind == ",":
                after = self.peek()[0]
                if not values or after in (")", ","):
                    values.append("")  # "(,", ",)" and ",," hold empty values
                if after == ")":
                    return values
            else:
                raise _Fail(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> str:
        if self.peek()[0] in (_END, ","):
            return ""
        kind, literal = self.take()
        if kind != _ID:
            raise _Fail(f"found '{literal}', expected: identifier")
        return literal

    @staticmethod
    def check(key: str, op: str, values: list[str]) -> None:
        """The requirement's value rules (all broken ones, as one aggregate)."""
        problems = []
        if op in (">", "<"):
            for i, value in enumerate(values):
                if not _is_int64(value):
                    problems.append(
                        f"values[{i}]: Invalid value: {go_quote(value)}: for 'Gt', 'Lt' operators, the value must be an integer"
                    )
        for i, value in enumerate(values):
            reasons = label_value_errors(value)
            if reasons:
                problems.append(
                    f"values[{i}][{key}]: Invalid value: {go_quote(value)}: " + "; ".join(reasons)
                )
        if problems:
            raise _Fail(problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")


def _is_int64(value: str) -> bool:
    body = value[1:] if value[:1] in ("+", "-") else value
    return body.isascii() and body.isdigit() and -(2**63) <= int(value) < 2**63


def label_selector_error(text: str) -> str | None:
    """The real server's message for a label selector it cannot parse, or None when it parses."""
    try:
        _LabelParser(text).parse()
    except _Fail as exc:
        return str(exc)
    return None


# -- fields -------------------------------------------------------------------------------------


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == separator:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> tuple[str | None, str | None]:
    """(the value with its escapes resolved, None) or (None, why it is malformed)."""
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                return None, f"invalid field selector: invalid escape sequence: \\{ch}"
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            return None, f"invalid field selector: unescaped character in value: {ord(ch)}"
        else:
            out.append(ch)
    if escaped:
        return None, "invalid field selector: invalid escape sequence: \\"
    return "".join(out), None


def field_terms(text: str) -> tuple[list[tuple[str, str, str]], str | None]:
    """A field selector's ``(field, operator, value)`` terms in sorted order, or ``([], why)`` when the real server refuses it."""
    terms = []
    for term in sorted(_split_unescaped(text, ",")):
        if not term:
            continue
        for i in range(len(term)):
            op = next((o for o in ("!=", "==", "=") if term.startswith(o, i)), None)
            if op is not None:
                break
        else:
            return [], f"invalid selector: '{text}'; can't understand '{term}'"
        value, problem = _unescape(term[i + len(op) :])
        if value is None:
            return [], problem
        terms.append((term[:i], op, value))
    return terms, None


def field_selector_error(text: str) -> str | None:
    """The real server's message for a field selector it cannot parse, or None when it parses."""
    return field_terms(text)[1]
