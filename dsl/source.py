"""Source text and spans: where each piece of a spec came from.

Spans are half-open character offsets into the whole file, so that a declaration
parsed on its own can still point into the original text.  Lines and columns are
derived from offsets on demand (1-based, as compilers print them).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple


class Span(NamedTuple):
    """A half-open range ``[start, end)`` of character offsets in a :class:`Source`.

    A named tuple rather than a dataclass: the parser makes one per token, and tuples
    are several times cheaper to build.

    Examples
    --------
    >>> Span(3, 7).join(Span(10, 12))
    Span(start=3, end=12)
    """

    start: int
    end: int

    def join(self, other: "Span") -> "Span":
        """The smallest span covering both."""
        return Span(min(self.start, other.start), max(self.end, other.end))


@dataclass(frozen=True)
class Source:
    """A spec's text with its name (a path, or ``<string>``).

    Examples
    --------
    >>> s = Source("a\\nbcd\\n", "x.privspec")
    >>> s.line_col(3)
    (2, 2)
    >>> s.line_text(2)
    'bcd'
    """

    text: str
    name: str = "<string>"
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        find = self.text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        object.__setattr__(self, "_line_starts", tuple(starts))

    @classmethod
    def from_path(cls, path: str | Path) -> "Source":
        """Read a UTF-8 spec file (a BOM is tolerated)."""
        text = Path(path).read_text(encoding="utf-8-sig")
        return cls(text, str(path))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end].rstrip("\r")

    def snippet(self, span: Span) -> str:
        """The exact text a span covers."""
        return self.text[span.start:span.end]
