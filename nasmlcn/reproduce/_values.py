"""Reading our figure out of an engine's JSON: the ``ours`` expression of a recipe.

An expression is a path, or two joined by ``/`` or ``-`` (a ratio or a gap)::

    rows.capsnet.test_accuracy
    scenarios[name=24 lanes].pools.k80.random_s / scenarios[name=24 lanes].pools.k80.greedy_s
    studies."thesis-fig6.2-flops-4x".best
    max(studies.*.best)

A path's parts are separated by dots: a key (quoted when it holds a dot), a list
index (``0``, ``-1``), ``[key=value]`` (the first item of a list whose ``key`` is
``value``, compared as text) or ``*`` (every item: then wrap the path in ``max``,
``min`` or ``mean``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn.errors import ReproduceError

_FUNCTIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "max": max,
    "min": min,
    "mean": statistics.fmean,
}
_OPERATORS = (" / ", " - ")
_CALL = re.compile(r"([a-z]+)\((.*)\)")
_SELECT = re.compile(r"\[([^=\]]+)=([^\]]*)\]")


@dataclass(frozen=True)
class _Term:
    parts: tuple[str, ...]
    function: str | None


def _split_path(text: str) -> tuple[str, ...]:
    parts: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise ReproduceError(f"unclosed quote in path {text!r}")
            parts.append(text[i + 1 : end])
            i = end + 1
        else:
            end = i
            while end < len(text) and text[end] != ".":
                if text[end] == "[":
                    close = text.find("]", end)
                    if close < 0:
                        raise ReproduceError(f"unclosed [ in path {text!r}")
                    end = close
                end += 1
            part = text[i:end]
            if not part:
                raise ReproduceError(f"empty part in path {text!r}")
            parts.append(part)
            i = end
        if i < len(text):
            if text[i] != ".":
                raise ReproduceError(f"expected '.' after a quoted key in path {text!r}")
            i += 1
            if i == len(text):
                raise ReproduceError(f"path {text!r} ends with '.'")
    if not parts:
        raise ReproduceError("empty path")
    return tuple(parts)


def _term(text: str) -> _Term:
    text = text.strip()
    call = _CALL.fullmatch(text)
    if call:
        name, inner = call.groups()
        if name not in _FUNCTIONS:
            raise ReproduceError(
                f"unknown function {name!r} in {text!r} (known: {', '.join(_FUNCTIONS)})"
            )
        return _Term(_split_path(inner.strip()), name)
    parts = _split_path(text)
    if "*" in parts:
        raise ReproduceError(f"path {text!r} has '*': wrap it in max(...), min(...) or mean(...)")
    return _Term(parts, None)


def parse_expression(text: str) -> tuple[_Term, str | None, _Term | None]:
    """The expression's terms and operator.

    Raises:
        ReproduceError: Not a path, a function of a path, or two joined by / or -.
    """
    for op in _OPERATORS:
        if op in text:
            left, right = text.split(op, 1)
            return _term(left), op.strip(), _term(right)
    return _term(text), None, None


def _walk(node: Any, parts: tuple[str, ...], done: str) -> list[Any]:
    if not parts:
        return [node]
    part, rest = parts[0], parts[1:]
    here = f"{done}.{part}" if done else part
    if part == "*":
        items = list(node.values()) if isinstance(node, Mapping) else node
        if not isinstance(items, list):
            raise ReproduceError(f"{done or 'the output'} is not a list or table, for '*'")
        return [v for item in items for v in _walk(item, rest, here)]
    select = _SELECT.fullmatch(part)
    if select:
        key, value = select.groups()
        if not isinstance(node, list):
            raise ReproduceError(f"{done or 'the output'} is not a list, for {part}")
        for item in node:
            if isinstance(item, Mapping) and str(item.get(key)) == value:
                return _walk(item, rest, here)
        raise ReproduceError(f"no item of {done or 'the output'} has {key} = {value!r}")
    if isinstance(node, list) and re.fullmatch(r"-?\d+", part):
        index = int(part)
        if not -len(node) <= index < len(node):
            raise ReproduceError(f"{done} has {len(node)} items, no item {index}")
        return _walk(node[index], rest, here)
    if isinstance(node, Mapping):
        if part not in node:
            known = ", ".join(map(str, list(node)[:12]))
            raise ReproduceError(f"the output has no {here!r} (keys there: {known})")
        return _walk(node[part], rest, here)
    raise ReproduceError(f"{done or 'the output'} is a {type(node).__name__}, it has no {part!r}")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReproduceError(f"{where} is {value!r}, not a number")
    return float(value)


def _evaluate_term(term: _Term, data: Any) -> float:
    where = ".".join(term.parts)
    values = _walk(data, term.parts, "")
    if term.function is None:
        return _number(values[0], where)
    numbers = [_number(v, where) for v in values]
    if not numbers:
        raise ReproduceError(f"{where} matched nothing")
    return _FUNCTIONS[term.function](numbers)


def evaluate(expression: str, data: Any) -> float:
    """The number ``expression`` picks (or computes) from the engine output ``data``.

    Raises:
        ReproduceError: A part of the path is not in the output, or not a number.
    """
    left, op, right = parse_expression(expression)
    value = _evaluate_term(left, data)
    if op is None or right is None:
        return value
    other = _evaluate_term(right, data)
    if op == "-":
        return value - other
    if other == 0:
        raise ReproduceError(f"{expression}: division by zero")
    return value / other
