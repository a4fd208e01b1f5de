"""Reading our figure out of an engine's JSON: the ``ours`` expression of a recipe.

An expression is arithmetic (``+ - * /`` between spaces, parentheses, numbers) over
paths into the output, and ``max``, ``min`` and ``mean`` of several::

    rows[row=capsnet].test_accuracy
    scenarios[lanes=24&devices=4xK80].random_over_greedy_mean
    studies."thesis-fig6.2-flops-4x".best
    max(studies.*.best)
    (a.x - a.y) - (b.x - b.y)
    mean(v[n=2].acc, v[n=4].acc) * 100

A path's parts are separated by dots: a key (quoted when it holds a dot), a list
index (``0``, ``-1``), ``[key=value]`` (the first item of a list whose ``key`` is
``value``, compared as text; ``[a=1&b=x]`` for several keys; ``name[key=value]``
is ``name`` then the selection) or ``*`` (every item; only inside a function).
An operator needs spaces around it: ``8*mlcn2:4x1`` and ``thesis-fig6.2`` are names.
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
_OPERATORS = ("+", "-", "*", "/")
_SELECT = re.compile(r"\[([^\]]+)\]")
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


@dataclass(frozen=True)
class _Path:
    parts: tuple[str, ...]


@dataclass(frozen=True)
class _Call:
    function: str
    args: tuple[_Node, ...]


@dataclass(frozen=True)
class _BinOp:
    op: str
    left: _Node
    right: _Node


_Node = float | _Path | _Call | _BinOp


def _conditions(text: str, part: str) -> list[tuple[str, str]]:
    pairs = []
    for condition in text.split("&"):
        key, sep, value = condition.partition("=")
        if not sep or not key.strip():
            raise ReproduceError(f"{part}: expected [key=value] or [key=value&key=value]")
        pairs.append((key.strip(), value.strip()))
    return pairs


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
            key, bracket, select = part.partition("[")
            if bracket and key:  # key[a=b]: the key, then the selection
                parts += [key, "[" + select]
            else:
                parts.append(part)
            i = end
        if i < len(text):
            if text[i] != ".":
                raise ReproduceError(f"expected '.' after a quoted key in path {text!r}")
            i += 1
            if i == len(text):
                raise ReproduceError(f"path {text!r} ends with '.'")
            if text[i] == ".":
                raise ReproduceError(f"empty part in path {text!r}")
    if not parts:
        raise ReproduceError("empty path")
    for part in parts:
        selection = _SELECT.fullmatch(part)
        if selection:
            _conditions(selection.group(1), part)
    return tuple(parts)


def _tokens(text: str) -> list[str]:
    """Words split at spaces, parentheses and commas, outside brackets and quotes."""
    tokens: list[str] = []
    word: list[str] = []
    depth, quoted = 0, False

    def flush() -> None:
        if word:
            tokens.append("".join(word))
            word.clear()

    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "[":
            depth += 1
        elif not quoted and ch == "]":
            depth -= 1
        if not quoted and depth == 0 and (ch.isspace() or ch in "(),"):
            flush()
            if not ch.isspace():
                tokens.append(ch)
            continue
        word.append(ch)
    flush()
    if quoted or depth:
        raise ReproduceError(f"unclosed {'quote' if quoted else '['} in {text!r}")
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ReproduceError(f"{self.text!r} ends too early")
        self.i += 1
        return token

    def expect(self, token: str) -> None:
        got = self.take()
        if got != token:
            raise ReproduceError(f"{self.text!r}: expected {token!r}, got {got!r}")

    def parse(self) -> _Node:
        if not self.tokens:
            raise ReproduceError("empty expression")
        node = self.sum()
        if self.peek() is not None:
            raise ReproduceError(f"{self.text!r}: unexpected {self.peek()!r}")
        return node

    def sum(self) -> _Node:
        node = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            node = _BinOp(op, node, self.product())
        return node

    def product(self) -> _Node:
        node = self.atom()
        while self.peek() in ("*", "/"):
            op = self.take()
            node = _BinOp(op, node, self.atom())
        return node

    def atom(self) -> _Node:
        token = self.take()
        if token == "(":
            node = self.sum()
            self.expect(")")
            return node
        if token in (")", ",", *_OPERATORS):
            raise ReproduceError(f"{self.text!r}: unexpected {token!r}")
        if self.peek() == "(":
            if token not in _FUNCTIONS:
                raise ReproduceError(
                    f"unknown function {token!r} in {self.text!r} (known: {', '.join(_FUNCTIONS)})"
                )
            self.take()
            args = [self.sum()]
            while self.peek() == ",":
                self.take()
                args.append(self.sum())
            self.expect(")")
            return _Call(token, tuple(args))
        if _NUMBER.fullmatch(token):
            return float(token)
        return _Path(_split_path(token))


def parse_expression(text: str) -> _Node:
    """The parsed expression.

    Raises:
        ReproduceError: Not an expression of paths, numbers, ``+ - * /``,
            parentheses and ``max``/``min``/``mean``; or ``*`` outside a function.
    """
    node = _Parser(text).parse()
    _check_wildcards(node, inside=False, text=text)
    return node


def _check_wildcards(node: _Node, *, inside: bool, text: str) -> None:
    if isinstance(node, _Path) and "*" in node.parts and not inside:
        raise ReproduceError(
            f"{text!r}: a path with '*' must be inside max(...), min(...) or mean(...)"
        )
    if isinstance(node, _Call):
        for arg in node.args:
            _check_wildcards(arg, inside=isinstance(arg, _Path), text=text)
    if isinstance(node, _BinOp):
        _check_wildcards(node.left, inside=False, text=text)
        _check_wildcards(node.right, inside=False, text=text)


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
        wanted = _conditions(select.group(1), part)
        if not isinstance(node, list):
            raise ReproduceError(f"{done or 'the output'} is not a list, for {part}")
        for item in node:
            if isinstance(item, Mapping) and all(str(item.get(k)) == v for k, v in wanted):
                return _walk(item, rest, here)
        raise ReproduceError(f"no item of {done or 'the output'} has {select.group(1)}")
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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ReproduceError(f"{where} is {value!r}, not a number")
    return float(value)


def _values(node: _Node, data: Any) -> list[float]:
    if isinstance(node, _Path):
        where = ".".join(node.parts)
        return [_number(v, where) for v in _walk(data, node.parts, "")]
    return [_value(node, data)]


def _value(node: _Node, data: Any) -> float:
    if isinstance(node, float):
        return node
    if isinstance(node, _Path):
        return _values(node, data)[0]
    if isinstance(node, _Call):
        numbers = [v for arg in node.args for v in _values(arg, data)]
        if not numbers:
            raise ReproduceError(f"{node.function}(...) matched nothing")
        return _FUNCTIONS[node.function](numbers)
    left, right = _value(node.left, data), _value(node.right, data)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        return left * right
    if right == 0:
        raise ReproduceError("division by zero")
    return left / right


def evaluate(expression: str, data: Any) -> float:
    """The number ``expression`` picks (or computes) from the engine output ``data``.

    Raises:
        ReproduceError: A part of a path is not in the output, or not a number.
    """
    return _value(parse_expression(expression), data)


def evaluate_samples(path: str, data: Any) -> list[float]:
    """The list of numbers a path picks from ``data``
    (``studies."thesis-fig6.4-devices-4xK80".values``: every model's accuracy).

    Raises:
        ReproduceError: ``path`` is not a path, or picks something not a number.
    """
    node = parse_expression(path)
    if not isinstance(node, _Path):
        raise ReproduceError(f"{path!r} is not a path (samples are read, not computed)")
    items = _walk(data, node.parts, "")
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    return [_number(v, path) for v in items]
