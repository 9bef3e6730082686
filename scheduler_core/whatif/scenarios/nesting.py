"""How deeply a parsed JSON or YAML document may nest.

Python's parsers, and the code that walks what they return (validation, hashing, error
messages), recurse once per level: a request body or a scenario nested a few hundred
levels deep runs them out of stack (RecursionError, a 500). No real scenario or request
comes near MAX_DEPTH levels, so anything deeper is refused with a clear message before
anything walks it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

MAX_DEPTH = 32

T = TypeVar("T")


class NestingTooDeep(ValueError):
    """A document nested more than `limit` levels of lists and mappings deep."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested more than {limit} levels deep (lists and mappings)")
        self.limit = limit


def check_depth(data: Any, limit: int = MAX_DEPTH) -> None:
    """Raise NestingTooDeep when `data` nests lists and dicts more than `limit` deep.

    Walks without recursion. A YAML alias makes a container appear in several places: it
    is walked again only when reached deeper than before, so a document of aliases
    (`billion laughs`) or one that contains itself costs at most `limit` walks of each
    container, and the latter is refused."""
    deepest: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise NestingTooDeep(limit)
        if deepest.get(id(value), 0) >= depth:
            continue
        deepest[id(value)] = depth
        stack.extend((child, depth + 1) for child in children)


def parse_bounded(parse: Callable[[], T], limit: int = MAX_DEPTH) -> T:
    """What `parse` (a JSON or YAML parser given its text) returns, or NestingTooDeep when
    the document nests more than `limit` levels (or so deep the parser itself gave up)."""
    try:
        data = parse()
    except RecursionError:
        raise NestingTooDeep(limit) from None
    check_depth(data, limit)
    return data
