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


#: longest line quoted in full by a diagnostic
LINE_SHOWN = 1_000


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
    >>> Source("a\\r\\nb\\rc").text  # every line end read as a newline
    'a\\nb\\nc'
    """

    text: str
    name: str = "<string>"
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # One reading of line ends, whether the text came from a file (read with universal
        # newlines) or from a string: \r\n and a lone \r end a line like \n does.
        if "\r" in self.text:
            object.__setattr__(self, "text", self.text.replace("\r\n", "\n").replace("\r", "\n"))
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
        """The text of a 1-based line, without its newline.

        A line longer than :data:`LINE_SHOWN` characters (a 50 MB label set) is cut there
        with a note of how much was left out: diagnostics quote lines, and a quote must
        stay readable.
        """
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        if end < 0:
            end = len(self.text)
        if end - start > LINE_SHOWN:
            return self.text[start:start + LINE_SHOWN] + f" ... ({end - start - LINE_SHOWN:,} more characters)"
        return self.text[start:end]

    def snippet(self, span: Span) -> str:
        """The exact text a span covers."""
        return self.text[span.start:span.end]
