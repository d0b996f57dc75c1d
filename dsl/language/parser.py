"""Text -> AST: split a spec into declarations, parse each with Lark (LALR), fold exact
arithmetic into sympy numbers (the tree -> AST callbacks: :mod:`privspec.language.build`), and
turn every syntax error into a :class:`Diagnostic`.

A declaration ends at the end of a line unless inside (), [] or {} (LANGUAGE.md).  The
splitter finds those ends, so each declaration is parsed on its own: one syntax error
does not hide the errors of later declarations, and an unclosed bracket is reported
where it was opened instead of at the end of the file.
"""
from __future__ import annotations

import difflib
import functools
import os
import re
import sys
from importlib.resources import files

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from privspec.errors import Diagnostic
from privspec.language import ast
from privspec.language.build import MAX_DEPTH, BuildError, ToAst, parse_state, unescape
from privspec.language.source import Source, Span
from privspec.limits import MAX_CATEGORIES
from privspec.outputs import user_cache

def _grammar_declaration_keywords() -> tuple[str, ...]:
    """The words that start a declaration, read from the grammar: the first literal of
    each alternative of ``statement`` (``spec_decl: "spec" STRING`` -> ``spec``).

    Examples
    --------
    >>> _grammar_declaration_keywords()[:3]
    ('spec', 'variable', 'parameter')
    """
    text = files("privspec.grammar").joinpath("privspec.lark").read_text(encoding="utf-8")
    body = re.search(r"^\??statement:(.*?)^\s*$", text, re.M | re.S)
    rules = re.findall(r"\b(\w+)\b", body.group(1)) if body else []
    words = []
    for rule in rules:
        first = re.search(rf'^{rule}:\s*"(\w+)"', text, re.M)
        if first and first.group(1) not in words:
            words.append(first.group(1))
    return tuple(words)


#: words that start a declaration (from the grammar, the one place they are written)
DECLARATION_KEYWORDS = _grammar_declaration_keywords()


def _cache_path() -> str | bool:
    """Lark's grammar cache lives in the user's cache folder, never in the package."""
    folder = user_cache()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    return str(folder / f"grammar-py{sys.version_info[0]}{sys.version_info[1]}.lark-cache")


@functools.lru_cache(maxsize=1)
def get_parser() -> Lark:
    """The LALR parser for ``privspec.lark`` (start symbols ``statement`` and ``file``).

    Examples
    --------
    >>> get_parser().parse("variable x: continuous", start="statement").name.name
    'x'
    """
    return Lark.open_from_package(
        "privspec.grammar", "privspec.lark", ("",),
        parser="lalr", start=["statement", "file"], maybe_placeholders=False,
        transformer=ToAst(), cache=_cache_path(),
    )


# ---------------------------------------------------------------------------------
# splitting into declarations
_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[()\[\]{}]|\n')
#: what follows a declaration keyword on a line that clearly starts a declaration: a name
#: and the declaration's punctuation, except where the grammar says otherwise
_DECL_FOLLOW = {"population": r"(?:\(|[A-Za-z_]\w*[ \t]*~)", "spec": '"'}
_NAME_FOLLOW = r"[A-Za-z_]\w*[ \t]*[=:<>~]"
_DECL_START = re.compile(r"[ \t]*(?:" + "|".join(
    kw + r"[ \t]+" + _DECL_FOLLOW.get(kw, _NAME_FOLLOW) for kw in DECLARATION_KEYWORDS) + ")")
_OPEN = "([{"
_CLOSE = ")]}"


def split_declarations(text: str) -> list[tuple[int, int]]:
    """Offsets ``(start, end)`` of each declaration's text.

    A newline ends a declaration unless a bracket is open; a line that clearly starts a
    new declaration also ends the previous one, so that an unclosed bracket does not
    swallow the rest of the file.

    Examples
    --------
    >>> t = "variable x: categorical {a,  # first\\n b}  # two lines\\nvariable y: continuous\\n"
    >>> [t[s:e] for s, e in split_declarations(t)]
    ['variable x: categorical {a,  # first\\n b}', 'variable y: continuous']
    """
    out: list[tuple[int, int]] = []
    depth = 0
    start = None  # offset of the first non-blank character of the current declaration
    comment = None  # offset of a comment that nothing but blanks has followed yet

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            out.append((start, end if comment is None else comment))
        start = None

    pos = 0
    n = len(text)
    for m in _SCAN.finditer(text):
        s = m.start()
        if text[pos:s].strip():
            comment = None
            if start is None:
                start = pos + (len(text[pos:s]) - len(text[pos:s].lstrip()))
        tok = m.group()
        if tok == "\n":
            if depth == 0:
                close(s)
            elif _DECL_START.match(text, s + 1):
                depth = 0
                close(s)
        elif tok[0] == "#":
            if comment is None:
                comment = s
        else:
            comment = None
            if start is None:
                start = s
            if tok in _OPEN:
                depth += 1
            elif tok in _CLOSE:
                depth = max(0, depth - 1)
        pos = m.end()
    if text[pos:n].strip():
        comment = None
        if start is None:
            start = pos + (len(text[pos:n]) - len(text[pos:n].lstrip()))
    close(n)
    # trailing whitespace and comments are not part of a declaration
    return [(s, _rstrip_comment(text, s, e)) for s, e in out]


def _rstrip_comment(text: str, s: int, e: int) -> int:
    chunk = text[s:e].rstrip()
    return s + len(chunk)


def parse_statement(chunk: str, start: int = 0, end: int | None = None) -> ast.Declaration:
    """Parse one declaration whose text starts at offset ``start`` of its file.

    Examples
    --------
    >>> parse_statement("variable x: continuous", 10).name.span
    Span(start=19, end=20)
    """
    with parse_state(start, start + len(chunk) if end is None else end):
        return get_parser().parse(chunk, start="statement")


# ---------------------------------------------------------------------------------
# syntax errors
_TERMINAL_WORDS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": 'a quoted label ("...")',
    "COMPARE": "a comparison (> 0)", "$END": "the end of the declaration",
}


@functools.lru_cache(maxsize=1)
def _terminal_text() -> dict[str, str]:
    out = dict(_TERMINAL_WORDS)
    for t in get_parser().terminals:
        if t.name not in out and t.pattern.type == "str":
            out[t.name] = f"'{t.pattern.value}'"
    return out


def describe_expected(names) -> str:
    """Human words for a set of Lark terminal names, keywords first."""
    text = _terminal_text()
    words = sorted({text.get(n, n) for n in names if not n.startswith("__")},
                   key=lambda w: (not w.startswith("'"), w))
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words)


def _open_bracket(text: str) -> int | None:
    """Offset (in ``text``) of the innermost bracket left open at the end, if any."""
    stack: list[int] = []
    for m in _SCAN.finditer(text):
        tok = m.group()
        if tok in _OPEN:
            stack.append(m.start())
        elif tok in _CLOSE and stack:
            stack.pop()
    return stack[-1] if stack else None


def _too_deep(chunk: str) -> int | None:
    """Offset of the first bracket nested deeper than ``MAX_DEPTH``, if any."""
    if sum(chunk.count(b) for b in _OPEN) <= MAX_DEPTH:  # the usual case, decided at once
        return None
    depth = 0
    for m in _SCAN.finditer(chunk):
        tok = m.group()
        if tok in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif tok in _CLOSE:
            depth = max(0, depth - 1)
    return None


def syntax_diagnostic(err: UnexpectedInput, chunk: str, offset: int) -> Diagnostic:
    """Turn a Lark error on one declaration into a positioned, hinted diagnostic."""
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream
        ch = chunk[pos]
        span = Span(offset + pos, offset + pos + 1)
        hint = ""
        if ch == "'":
            hint = 'labels and titles are quoted with double quotes: "..."'
        elif ch == '"':
            hint = "close the quoted label on the same line"
        elif ch in "=!" and chunk[pos:pos + 2] in ("==", "!="):
            hint = "comparisons are written > 0, >= 0, < 1 or <= 1 (parameters only)"
        elif ch == "*" or ch == ".":
            hint = "powers are written with ^ (2^3)" if chunk[pos:pos + 2] == "**" else ""
        return Diagnostic("E102", f"unexpected character {ch!r}", span,
                          hint or f"expected {describe_expected(err.allowed)}")
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        expected = err.expected if isinstance(err, UnexpectedEOF) else err.accepts or err.expected
        opened = _open_bracket(chunk)
        if opened is not None:
            closer = _CLOSE[_OPEN.index(chunk[opened])]
            return Diagnostic("E103", f"'{chunk[opened]}' is never closed",
                              Span(offset + opened, offset + opened + 1),
                              f"add '{closer}' to close it (a declaration ends at the end of its line "
                              "unless a bracket is open)")
        end = offset + len(chunk)
        return Diagnostic("E103", "unexpected end of declaration", Span(end - 1, end) if chunk else Span(end, end),
                          f"expected {describe_expected(expected)}")
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    span = Span(offset + tok.start_pos, offset + (tok.end_pos or tok.start_pos + len(str(tok))))
    expected = err.accepts or err.expected
    hint = f"expected {describe_expected(expected)}"
    if tok.start_pos == 0:
        close = difflib.get_close_matches(str(tok), DECLARATION_KEYWORDS, n=1, cutoff=0.7) \
            if tok.type == "NAME" else []
        hint = f"did you mean '{close[0]}'?" if close else \
            "a declaration starts with " + ", ".join(DECLARATION_KEYWORDS)
        if str(tok) in ("let", "var", "def", "import", "from"):
            hint += " (this is not Python)"
        return Diagnostic("E101", f"unexpected {_describe_token(tok)} at the start of a declaration", span, hint)
    if tok.type == "NUMBER" and "STRING" in expected and "NUMBER" not in expected:
        hint = f'labels are names or quoted strings: write "{tok}"'
    elif tok.type == "RPAR" and chunk[tok.start_pos - 1:tok.start_pos] == ",":
        hint = "remove the trailing comma or add the missing argument"
    elif tok.type == "STAR" and chunk[tok.start_pos - 1:tok.start_pos] == "*":
        hint = "powers are written with ^ (2^3)"
    elif tok.type == "EQUAL" and chunk[tok.start_pos - 1:tok.start_pos] == "=":
        hint = "'==' is not part of the language; keyword arguments take one '=' (epsilon = 1)"
    if tok.type in ("NAME", "STRING", "NUMBER", "LPAR") and expected & {"RPAR", "COMMA", "RSQB", "RBRACE"} \
            and tok.type not in expected:
        hint += "; is a comma missing before it?"
    return Diagnostic("E101", f"unexpected {_describe_token(tok)}", span, hint)


def _describe_token(tok: Token) -> str:
    if tok.type in ("NAME", "NUMBER", "STRING"):
        kind = {"NAME": "name", "NUMBER": "number", "STRING": "label"}[tok.type]
        return f"{kind} {str(tok)!r}" if tok.type != "STRING" else f"label {tok}"
    return f"'{tok}'"


# ---------------------------------------------------------------------------------
def parse_declarations(source: Source) -> tuple[list[ast.Declaration], list[Diagnostic], list[tuple[int, int]]]:
    """Parse every declaration of ``source``.

    Returns
    -------
    declarations : list
        AST of each declaration that parsed.
    diagnostics : list of Diagnostic
        One syntax error per declaration that did not parse.
    failed : list of (start, end)
        Offsets of the declarations that did not parse (their names are recovered by
        the resolver, so that later uses do not cascade into "unknown name" errors).

    Examples
    --------
    >>> decls, diags, _ = parse_declarations(Source("variable x: continuous\\nvariable y: oops"))
    >>> type(decls[0]).__name__, diags[0].code
    ('ContinuousDecl', 'E101')
    """
    decls: list[ast.Declaration] = []
    diags: list[Diagnostic] = []
    failed: list[tuple[int, int]] = []
    text = source.text
    for start, end in split_declarations(text):
        chunk = text[start:end]
        try:
            fast = _label_set_declaration(chunk, start)
        except BuildError as err:
            diags.append(err.diagnostic)
            failed.append((start, end))
            continue
        if fast is not None:
            decls.append(fast)
            continue
        if len(chunk) > MAX_PARSED_CHARS:
            diags.append(_too_long(chunk, start))
            failed.append((start, end))
            continue
        deep = _too_deep(chunk)
        if deep is not None:  # later passes recurse on the nesting
            diags.append(Diagnostic("E104", "brackets nested too deeply", Span(start + deep, start + deep + 1),
                                    f"nesting is limited to {MAX_DEPTH} levels"))
            failed.append((start, end))
            continue
        try:
            decls.append(parse_statement(chunk, start, end))
        except UnexpectedInput as err:
            diags.append(syntax_diagnostic(err, chunk, start))
            failed.append((start, end))
        except BuildError as err:
            diags.append(err.diagnostic)
            failed.append((start, end))
    return decls, diags, failed


# ---------------------------------------------------------------------------------
# long declarations
#: Longest declaration parsed by Lark, in characters.  Lark's LALR parser takes about
#: 1.5 s per MB on the 2-core reference machine (bench/fuzz.py), so 2 MB stay under
#: 4 s; a longer declaration is refused at once instead of parsed for minutes.
MAX_PARSED_CHARS = 2_000_000

_LABEL_SET_HEAD = re.compile(r"variable[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*categorical[ \t\f\n]*\{")
# the whole set: labels (names or quoted strings), commas and blanks only; anything else
# (a comment, a dotted label, a number) leaves the declaration to Lark and its messages
_ITEM = r'[ \t\f\n]*(?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\\n]|\\.)*")[ \t\f\n]*'
_LABEL_SET_BODY = re.compile(rf"(?:{_ITEM},)*(?:{_ITEM})?[ \t\f\n]*\}}[ \t\f\n]*")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)|"((?:[^"\\\n]|\\.)*)"')


def _label_set_declaration(chunk: str, offset: int) -> ast.CategoricalDecl | None:
    """``variable x: categorical {a, b, "c d"}`` read without Lark (None when it is not that).

    A label set is the one declaration that grows with the data (125,000 categories),
    and Lark spends about 6 microseconds a token on it; one regular expression checks
    the whole set and a second reads its labels, about five times faster, with the same
    AST and spans.

    Examples
    --------
    >>> d = _label_set_declaration('variable x: categorical {a, "b c",}', 0)
    >>> d.name.name, [getattr(n, "name", getattr(n, "text", None)) for n in d.labels]
    ('x', ['a', 'b c'])
    >>> _label_set_declaration("variable x: categorical {a.b}", 0) is None
    True
    """
    head = _LABEL_SET_HEAD.match(chunk)
    if head is None:
        return None
    name = ast.Ref(head.group(1), Span(offset + head.start(1), offset + head.end(1)))
    if chunk.count(",", head.end()) >= MAX_CATEGORIES:
        raise BuildError(Diagnostic("E701", f"variable {name.name} lists more than {MAX_CATEGORIES:,} categories",
                                    name.span, "a variable this large cannot be analysed or privatized; group "
                                               "categories, or split the variable into parts combined with *"))
    body = _LABEL_SET_BODY.fullmatch(chunk, head.end())
    if body is None:
        return None
    close = chunk.rindex("}")
    labels: list = []
    add = labels.append
    Ref, Str = ast.Ref, ast.Str
    for m in _LABEL.finditer(chunk, head.end(), close):
        label = m.group(1)
        if label is not None:
            add(Ref(label, Span(offset + m.start(), offset + m.end())))
        else:
            add(Str(unescape(m.group(2), offset + m.start(2)), Span(offset + m.start(), offset + m.end())))
    return ast.CategoricalDecl(name, tuple(labels), Span(offset, offset + len(chunk)))


def _too_long(chunk: str, offset: int) -> Diagnostic:
    """E105 for a declaration too long to parse, pointing at its first word."""
    first = re.match(r"\S+", chunk)
    end = first.end() if first else 1
    return Diagnostic("E105", f"this declaration is {len(chunk):,} characters long; declarations are limited "
                              f"to {MAX_PARSED_CHARS:,}", Span(offset, offset + min(end, 40)),
                      "split it, or read the values from a data file (privspec run --data)")
