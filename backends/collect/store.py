"""The store of a fielded survey: every acknowledged submission kept, append-only, tied to
the design of one spec.

:func:`open_store` opens (or creates) a store from a URL: ``sqlite:///reports.db`` (or a
plain path; the default: Python's sqlite3, write-ahead log, ``synchronous=FULL``) or
``postgresql://...`` (psycopg 3, the ``collect`` extra).  :meth:`Store.submit` checks a
submission (:mod:`.store_checks`: the D-code ``run`` gives for a report the mechanism
cannot produce, as :class:`RejectedSubmission`) and returns its id only once the commit
is on disk, so an acknowledged submission survives the writer's kill -9.  Nothing in
this API updates or deletes a submission, and the database refuses it too (a trigger).
A submission is kept as its reports only: an id (their order) and the design's hash,
no time of receipt, nothing of the request.

The store keeps the hash of the spec's design (:func:`design_hash`: its variables,
parameters and mechanisms in the canonical model, not its text) in its ``meta`` table
and beside each submission: a store opened with a spec of another design refuses
(D051), so the reports of two designs are never mixed.  Queries, populations and
compare blocks may change: they are the analysis, not the design.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from privspec.errors import DataError, Diagnostic
from privspec.model.serialize import model_to_dict
from privspec.backends.collect.store_checks import cells, check_reports, fieldable, report_columns
from privspec.backends.collect.urls import is_store

#: distinct valid reports remembered per store, so that a report seen before is not read again
CHECKED = 1 << 16


class RejectedSubmission(DataError):
    """A submission the store refuses (a server answers 422): not a mapping mechanism ->
    report, an unknown or missing mechanism, a report of the wrong shape (D050), or a
    report the mechanism cannot produce (the D-code of ``run``)."""


def design_hash(model: Any) -> str:
    """SHA-256 of the spec's design in its canonical model (variables, parameters,
    mechanisms; their places in the text left out): the same for the same design
    whatever the spacing, comments, queries or populations.

    Examples
    --------
    >>> import privspec
    >>> a = privspec.load("variable x: categorical {a, b}\\nmechanism m = grr(x, epsilon = 1)").model
    >>> b = privspec.load("# fielded\\nvariable x : categorical {a,b}\\n\\nmechanism m = grr(x, epsilon=1)").model
    >>> design_hash(a) == design_hash(b), len(design_hash(a))
    (True, 64)
    """
    dump = model_to_dict(model)
    design = {k: _without_spans(dump[k]) for k in ("variables", "parameters", "mechanisms")}
    return hashlib.sha256(json.dumps(design, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _without_spans(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_spans(v) for k, v in value.items() if k != "span"}
    if isinstance(value, list):
        return [_without_spans(v) for v in value]
    return value


class Store(ABC):
    """Submissions of one spec's design, append-only.

    Parameters
    ----------
    url : str
        Where it is (named in messages).
    model : ModelGraph
        The spec's model: its design hash is checked against the store's.
    mechanisms : sequence of str, optional
        The mechanisms fielded (every submission holds a report of each).  A new store is
        created with them (default: every mechanism a randomizer draws reports of,
        :func:`.store_checks.fieldable`); an existing one is opened with its own, and
        refuses others (D051).
    """

    #: the connection (sqlite3's or psycopg's: both ``execute(sql).fetchone()``)
    _db: Any

    def __init__(self, url: str, model: Any, mechanisms: Sequence[str] | None = None, create: bool = True):
        self.url = url
        self.create = create
        self.model = model
        self.hash = design_hash(model)
        asked = list(mechanisms or ())
        unknown = [m for m in asked if m not in model.mechanisms]
        if unknown:
            raise DataError(Diagnostic("D050", f"no mechanism named '{unknown[0]}' in the spec",
                                       hint=f"mechanisms: {', '.join(model.mechanisms)}"))
        # a new store fields the mechanisms asked, else every one a randomizer draws reports of
        self.mechanisms = tuple(asked or fieldable(model))
        self._asked = bool(asked)
        self.columns: dict[str, list[str]] = {}
        self._checked: OrderedDict[tuple, None] = OrderedDict()
        self._lock = threading.Lock()

    # -- what a backend does --------------------------------------------------------------------------
    @abstractmethod
    def _setup(self) -> dict[str, str]:
        """Create the tables if new (meta, submissions, the append-only triggers) and
        return the meta; when reading (``create`` false), the meta only, and D001 for a
        database that holds no store (nothing is written into it)."""

    @abstractmethod
    def _insert(self, rows: list[tuple[str, str]]) -> list[int]:
        """Insert submissions (design hash, reports JSON) in one transaction, committed on
        return; their ids."""

    def _rows(self) -> list[tuple[int, str, str]]:
        """Every submission as (id, design hash, reports JSON), by id (one SQL for both
        databases: sqlite3's and psycopg's connections both execute and fetch)."""
        with self._lock:
            return self._db.execute("SELECT id, design, reports FROM submissions ORDER BY id").fetchall()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    # -- the store ------------------------------------------------------------------------------------
    def _open(self) -> None:
        # a new store's mechanisms are known to have a randomizer before anything is written
        columns = {m: report_columns(self.model, self.model.mechanisms[m]) for m in self.mechanisms} \
            if self.create else {}
        try:
            meta = self._setup()
        except BaseException:
            self.close()
            raise
        fielded = json.loads(meta["mechanisms"])
        if meta["design"] != self.hash or (self._asked and fielded != list(self.mechanisms)):
            self.close()
            what = "another design (its variables, parameters or mechanisms differ)" if meta["design"] != self.hash \
                else f"the mechanisms {', '.join(fielded)}"
            raise DataError(Diagnostic("D051", f"{self.url} holds the reports of {what}: the reports of two designs "
                                               "are never mixed", file=self.url,
                                       hint="open it with the spec (and the mechanisms) it was created with, or "
                                            "collect into a new store"))
        self.mechanisms = tuple(fielded)
        self.columns = {m: columns.get(m) or report_columns(self.model, self.model.mechanisms[m]) for m in fielded}

    def submit(self, reports: Any) -> int:
        """Check and store one submission ``{mechanism: report}``; its id, returned once
        committed.  :class:`RejectedSubmission` when the store refuses it."""
        outcome = self.submit_many([reports])[0]
        if isinstance(outcome, RejectedSubmission):
            raise outcome
        return outcome

    def submit_many(self, submissions: Sequence[Any]) -> list[int | RejectedSubmission]:
        """Check submissions together and store those accepted in one transaction (a
        server's group commit: one flush to disk for all); per submission, its id (the
        commit done when this returns) or why it was refused.  The reports are read
        together, a mechanism's distinct new reports in one table; only when that table
        fails is each read alone, to say which submission holds what."""
        outcome: list[Any] = [None] * len(submissions)
        rows: dict[int, dict[str, dict[str, str | None]]] = {}
        for i, reports in enumerate(submissions):
            try:
                rows[i] = self.cells(reports)
            except DataError as e:
                outcome[i] = RejectedSubmission(e.diagnostics)
        with self._lock:     # the memory of reports read is shared by a server's threads
            refused = self._check(rows)
        for i, error in refused.items():
            outcome[i] = RejectedSubmission(error.diagnostics)
            del rows[i]
        texts = [(self.hash, json.dumps(row, separators=(",", ":"), ensure_ascii=False)) for row in rows.values()]
        if texts:
            with self._lock:
                ids = self._insert(texts)
            for i, id_ in zip(rows, ids):
                outcome[i] = id_
        return outcome

    def cells(self, reports: Any) -> dict[str, dict[str, str | None]]:
        """A submission as the cells of each fielded mechanism's columns; D050 for one of
        the wrong shape (its reports are not read here: :meth:`submit_many`)."""
        if not isinstance(reports, Mapping):
            raise DataError(Diagnostic("D050", f"a submission is an object mechanism -> report, not a "
                                               f"{type(reports).__name__}"))
        unknown = [str(m) for m in reports if m not in self.mechanisms]
        missing = [m for m in self.mechanisms if m not in reports]
        if unknown or missing:
            what = f"no mechanism named '{unknown[0]}' is fielded" if unknown else \
                f"no report of {', '.join(repr(m) for m in missing)}"
            raise DataError(Diagnostic("D050", f"{what}: a submission holds one report of each fielded mechanism",
                                       hint=f"fielded: {', '.join(self.mechanisms)}"))
        return {m: cells(m, reports[m], self.columns[m]) for m in self.mechanisms}

    def _check(self, rows: Mapping[int, dict[str, dict[str, str | None]]]) -> dict[int, DataError]:
        """The submissions (by index) holding a report its mechanism cannot produce, with
        ``run``'s error for it; reports read before are remembered (:data:`CHECKED`)."""
        errors: dict[int, DataError] = {}
        for m in self.mechanisms:
            fresh: dict[tuple, list[int]] = {}
            for i, row in rows.items():
                key = tuple(row[m].values())
                if i in errors:
                    continue
                if (m, key) in self._checked:
                    self._checked.move_to_end((m, key))
                else:
                    fresh.setdefault(key, []).append(i)
            if not fresh:
                continue
            bad = self._read(m, list(fresh))
            for key, where in fresh.items():
                if key in bad:
                    errors.update((i, bad[key]) for i in where)
                else:
                    self._checked[(m, key)] = None
            while len(self._checked) > CHECKED:
                self._checked.popitem(last=False)
        return errors

    def _read(self, mechanism: str, keys: list[tuple]) -> dict[tuple, DataError]:
        """The distinct reports ``keys`` of ``mechanism`` read as ``run`` reads a file: all
        in one table, and each alone where that fails; the refused ones with their error."""
        mech, columns = self.model.mechanisms[mechanism], self.columns[mechanism]
        try:
            check_reports(self.model, mech, pd.DataFrame({c: [k[j] for k in keys] for j, c in enumerate(columns)},
                                                         dtype=object))
            return {}
        except DataError as e:
            if len(keys) == 1:
                return {keys[0]: e}
        return {k: e for k in keys for e in self._read(mechanism, [k]).values()}

    def frame(self, mechanisms: Sequence[str] | None = None) -> pd.DataFrame:
        """The reports of ``mechanisms`` (default: every fielded one), one row per submission
        in the order of their ids, one column per report column, cells as text (None for
        a null): the table ``privatize`` would have written.  D051 for a submission of
        another design."""
        names = list(mechanisms) if mechanisms else list(self.mechanisms)
        unknown = [m for m in names if m not in self.mechanisms]
        if unknown:
            raise DataError(Diagnostic("D005", f"{self.url} holds no reports of mechanism '{unknown[0]}'",
                                       hint=f"it holds the reports of {', '.join(self.mechanisms)}"))
        seen: dict[str, str] = {}
        for m in names:
            for c in self.columns[m]:
                if c in seen:
                    raise DataError(Diagnostic("D006", f"the mechanisms '{seen[c]}' and '{m}' both fill the column "
                                                       f"'{c}': one table cannot hold both", columns=(c,),
                                               hint="export one of them at a time (--mechanism M)"))
                seen[c] = m
        return self._table(self._checked_rows(), names)

    def _checked_rows(self) -> list[dict]:
        """Every submission's reports, by id; D051 for one of another design."""
        rows = self._rows()
        if any(h != self.hash for _, h, _ in rows):
            raise DataError(Diagnostic("D051", f"{self.url} holds submissions of another design", file=self.url))
        return [json.loads(text) for _, _, text in rows]

    def _table(self, data: list[dict], names: Sequence[str]) -> pd.DataFrame:
        out = {c: pd.Series([r[m][c] for r in data], dtype=object) for m in names for c in self.columns[m]}
        return pd.DataFrame(out, columns=[c for m in names for c in self.columns[m]])

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every fielded mechanism's reports (:meth:`frame`), read at once."""
        rows = self._checked_rows()
        return {m: self._table(rows, [m]) for m in self.mechanisms}

    def ids(self) -> list[int]:
        """The ids of every submission, in order."""
        return [i for i, _, _ in self._rows()]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM submissions").fetchone()[0])

    def _no_store(self) -> DataError:
        return DataError(Diagnostic("D001", f"{self.url} holds no survey store", file=self.url,
                                    hint="collect into it first (privspec serve SPEC --db ...)"))

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- SQLite ---------------------------------------------------------------------------------------------
class SQLiteStore(Store):
    """A store in one SQLite file: write-ahead log, ``synchronous=FULL`` (a commit is on
    disk when :meth:`submit` returns), one connection shared under a lock."""

    def __init__(self, path: str | os.PathLike[str], model: Any, mechanisms: Sequence[str] | None = None,
                 create: bool = True, url: str | None = None):
        super().__init__(url or f"sqlite:///{path}", model, mechanisms, create)
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise DataError(Diagnostic("D001", f"no such store: {self.url}", file=self.url,
                                       hint="collect into it first (privspec serve SPEC --db ...)"))
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as e:
            raise DataError(Diagnostic("D001", f"cannot open the store {self.url}: {e}", file=self.url)) from None
        self._open()

    def _setup(self) -> dict[str, str]:
        db = self._db
        if not self.create:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
                raise self._no_store()
            return dict(db.execute("SELECT key, value FROM meta").fetchall())
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS submissions (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                       "design TEXT NOT NULL, reports TEXT NOT NULL)")
            for verb in ("UPDATE", "DELETE"):
                db.execute(f"CREATE TRIGGER IF NOT EXISTS append_only_{verb.lower()} BEFORE {verb} ON submissions "
                           "BEGIN SELECT RAISE(ABORT, 'submissions are append-only'); END")
            db.execute("INSERT OR IGNORE INTO meta VALUES ('design', ?), ('mechanisms', ?)",
                       (self.hash, json.dumps(list(self.mechanisms))))
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return meta

    def _insert(self, rows: list[tuple[str, str]]) -> list[int]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            ids = [int(db.execute("INSERT INTO submissions (design, reports) VALUES (?, ?)",
                                  row).lastrowid or 0) for row in rows]
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return ids



# ---- PostgreSQL -----------------------------------------------------------------------------------------
_PG_APPEND_ONLY = """
CREATE OR REPLACE FUNCTION privspec_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'submissions are append-only'; END $$;
DROP TRIGGER IF EXISTS append_only ON submissions;
CREATE TRIGGER append_only BEFORE UPDATE OR DELETE ON submissions
FOR EACH STATEMENT EXECUTE FUNCTION privspec_append_only();
"""


class PostgresStore(Store):
    """A store in a PostgreSQL database (psycopg 3, the ``collect`` extra): autocommit, so
    each submission is committed (durably, PostgreSQL's default) when :meth:`submit` returns."""

    def __init__(self, url: str, model: Any, mechanisms: Sequence[str] | None = None, create: bool = True):
        super().__init__(url, model, mechanisms, create)
        try:
            # extra: psycopg (privspec[collect]) is needed only for a PostgreSQL store
            import psycopg
        except ImportError:
            raise DataError(Diagnostic("D052", f"a PostgreSQL store ({_shown(url)}) needs psycopg, which is not "
                                               "installed", hint="pip install 'privspec[collect]'")) from None
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise DataError(Diagnostic("D052", f"cannot connect to the store {_shown(url)}: {str(e).strip()}",
                                       hint="check that the server runs and the URL names its database")) from None
        self.url = _shown(url)
        self._open()

    def _setup(self) -> dict[str, str]:
        if not self.create:
            if self._db.execute("SELECT to_regclass('meta')").fetchone()[0] is None:
                raise self._no_store()
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(4036)")   # two servers starting at once
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS submissions (id BIGSERIAL PRIMARY KEY, "
                             "design TEXT NOT NULL, reports TEXT NOT NULL)")
            self._db.execute(_PG_APPEND_ONLY)
            self._db.execute("INSERT INTO meta VALUES ('design', %s), ('mechanisms', %s) ON CONFLICT DO NOTHING",
                             (self.hash, json.dumps(list(self.mechanisms))))
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def _insert(self, rows: list[tuple[str, str]]) -> list[int]:
        # one pipelined batch (psycopg's executemany): one round trip for the group, not one a row
        ids = []
        with self._db.transaction(), self._db.cursor() as cur:
            cur.executemany("INSERT INTO submissions (design, reports) VALUES (%s, %s) RETURNING id", rows,
                            returning=True)
            while True:
                ids.append(int(cur.fetchone()[0]))
                if not cur.nextset():
                    break
        return ids



def _shown(url: str) -> str:
    """A URL as messages show it: its password left out."""
    head, sep, rest = url.partition("://")
    user, at, host = rest.rpartition("@")
    if not at or ":" not in user:
        return url
    return f"{head}{sep}{user.split(':', 1)[0]}:***@{host}"


def bind_stores(bindings: Any, model: Any) -> None:
    """Bind every mechanism whose data are a store (``--data sqlite:///reports.db``, or
    ``--data M=postgresql://...``) to the store's reports of that mechanism, read once:
    a table named ``URL#M`` in messages, its rows the submissions in the order of their
    ids.  A store holds each mechanism's reports apart, so a default store feeds every
    mechanism it fielded (and no other: D005 for those), never a column to two of them."""
    stores: dict[str, dict[str, pd.DataFrame]] = {}

    def frames(url: str) -> dict[str, pd.DataFrame]:
        if url not in stores:
            with open_store(url, model, create=False) as store:
                stores[url] = store.frames()
        return stores[url]

    for mechanism, url in list(bindings.per_mechanism.items()):
        if is_store(url):
            found = frames(url)
            if mechanism not in found:
                raise DataError(Diagnostic("D005", f"{url} holds no reports of mechanism '{mechanism}'",
                                           hint=f"it holds the reports of {', '.join(found)}"))
            bindings.bind_table(mechanism, f"{url}#{mechanism}", found[mechanism])
    if is_store(bindings.default):
        url = bindings.default
        for mechanism, frame in frames(url).items():
            if mechanism not in bindings.per_mechanism:
                bindings.bind_table(mechanism, f"{url}#{mechanism}", frame)
        bindings.default = None


def open_store(url: str | os.PathLike[str], model: Any, mechanisms: Sequence[str] | None = None,
               create: bool = True) -> Store:
    """The store at ``url``: ``postgresql://...`` (:class:`PostgresStore`), else SQLite
    (``sqlite:///relative.db``, ``sqlite:////absolute.db``, or a plain path).  ``create``:
    whether a missing SQLite file is created (False for reading: D001)."""
    text = os.fspath(url)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text, model, mechanisms, create)
    path = text[len("sqlite:///"):] if text.startswith("sqlite:///") else text
    return SQLiteStore(path, model, mechanisms, create=create, url=text if is_store(text) else None)
