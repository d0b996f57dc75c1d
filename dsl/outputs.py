"""Output files written whole or not at all: the path checked before any work
(:func:`check_output`, D007), the file written to a temporary file beside it and
published in one step that never replaces another run's file unless asked
(:func:`write_atomic`).

Every verb writes through these, the results' reports and plots as well as privatized
data; the standard library is all they need, so that a module of the front end may
import them.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

from privspec.errors import DataError, Diagnostic
from privspec.signals import interrupt_on_signals

#: file suffixes written and read as Parquet (everything else is CSV)
PARQUET = (".parquet", ".pq")


#: what :func:`output_kind` calls each kind of file a path can name
_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "folder"),
          (stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"))


def output_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` names, the last component not followed if it is a link: None when
    nothing is there, else ``"file"`` (a regular file), ``"symbolic link"``, ``"folder"``,
    ``"named pipe (FIFO)"``, ``"socket"``, ``"character device"``, ``"block device"``.

    Examples
    --------
    >>> output_kind("/dev/null"), output_kind("/")
    ('character device', 'folder')
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _not_regular(name: str, kind: str) -> DataError:
    """D007 for a target that exists and is neither a regular file nor a link: privspec
    replaces none of these, even with --force (a device or a pipe is not a file's old
    version: replacing ``/dev/full`` as root would put a regular file in its place)."""
    return DataError(Diagnostic(
        "D007", f"cannot write {name}: it is a {kind}, not a regular file; privspec writes regular files only, "
                "and never replaces anything else (not even with --force)", file=name,
        hint="give the path of a new or a regular file"))


def _link_refused(name: str, path: str | os.PathLike[str]) -> DataError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    dangling = not os.path.exists(path)
    return DataError(Diagnostic(
        "D007", f"{name} is a symbolic link (to {target}{', which does not exist' if dangling else ''}): privspec "
                "does not write through links", file=name,
        hint=f"give another path, or add --force (force=True in Python) to replace the link itself with a "
             f"regular file ({target} is left untouched)"))


def check_output(path: str | os.PathLike[str], force: bool = False) -> None:
    """Refuse, before any work, an output that cannot or should not be written (D007):
    a folder that does not exist or cannot be written, a path that is a folder, a device,
    a named pipe or a socket (even with ``force``), an existing file or a symbolic link
    (unless ``force``: the link itself is then replaced, never what it points to), Parquet
    without pyarrow.  :func:`write_atomic` checks again when it publishes the file."""
    p = Path(path)
    name = str(path)
    folder = p.parent if str(p.parent) else Path(".")
    kind = output_kind(p)
    if kind == "folder":
        raise DataError(Diagnostic("D007", f"cannot write {name}: it is a folder", file=name,
                                   hint=f"give a file name, e.g. --output {p / 'privatized.csv'}"))
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise DataError(Diagnostic("D007", f"cannot write {name}: the folder {folder} {what}", file=name,
                                   hint=f"create it first (mkdir -p {folder}) or write elsewhere"))
    if kind not in (None, "file", "symbolic link"):
        raise _not_regular(name, kind)
    if kind == "symbolic link" and not force:
        raise _link_refused(name, p)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(Diagnostic("D007", f"cannot write {name}: the folder {folder} is not writable", file=name,
                                   hint="write somewhere you may write"))
    if kind == "file" and not force:
        raise _exists(name)
    if p.suffix.lower() in PARQUET:
        try:
            # start-up: pyarrow costs 170 ms, imported here only to tell a broken install
            import pyarrow  # noqa: F401
        except ImportError:
            raise DataError(Diagnostic("D007", f"cannot write {name}: Parquet needs pyarrow", file=name,
                                       hint="pip install pyarrow (a dependency of privspec), or write CSV")) from None


def _exists(name: str, appeared: bool = False) -> DataError:
    when = " (it appeared while privspec was writing: another run wrote it first)" if appeared else ""
    return DataError(Diagnostic("D007", f"{name} exists{when}: privspec does not overwrite a file unless asked",
                                file=name, hint="add --force (force=True in Python) to replace it, or choose "
                                                "another output"))


def write_atomic(path: str | os.PathLike[str], write: Callable[[str], None], force: bool = False) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then publish it there, so that a
    failure never leaves a partial file.

    Without ``force`` the finished file is hard-linked to ``path`` (:func:`_publish`), which
    fails if anything is there by then: of two runs writing one new output, exactly one
    succeeds, the other gets D007 and its file is dropped; the check and the write are one
    step, where a check before a rename would let the later rename win silently.  With
    ``force`` it is renamed over ``path`` (a regular file, or a link: the link itself is
    replaced), after checking once more that ``path`` is no device, pipe, socket or folder.

    SIGINT and SIGTERM during the write remove the temporary file and raise
    :class:`privspec.signals.Interrupted`; only ``kill -9`` can leave it behind:
    ``.NAME.XXXXXXXX.tmp`` beside ``path`` (docs/cli.md).  The file gets the permissions a
    plain ``open`` would give (``mkstemp``'s are private to the user)."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    with interrupt_on_signals():
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
        try:
            write(tmp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            _publish(tmp, p, force)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)


#: errors of :func:`os.link` that mean "no hard links here" (FAT and some network or FUSE
#: file systems: EPERM or EOPNOTSUPP), rather than "the target exists"
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}


def _publish(tmp: str, path: Path, force: bool) -> None:
    """Put the finished temporary file ``tmp`` at ``path`` (the caller removes ``tmp``)."""
    name = str(path)
    if force:
        kind = output_kind(path)
        if kind not in (None, "file", "symbolic link"):  # became one since check_output
            raise _not_regular(name, kind)
        os.replace(tmp, path)  # a link is replaced itself: rename never follows the last component
        return
    try:
        os.link(tmp, path)  # fails with EEXIST if anything is at path, a dangling link too
    except FileExistsError:
        raise _exists(name, appeared=True) from None
    except OSError as e:
        if e.errno not in _NO_LINKS:
            raise
        _publish_exclusive(tmp, path)


def _publish_exclusive(tmp: str, path: Path) -> None:
    """The fallback where the file system has no hard links: reserve ``path`` by creating
    it empty with ``O_EXCL`` (fails if anything is there, a link included: one writer
    wins), then rename the finished file over that reservation.  Not atomic as the link
    is: until the rename a reader can see the empty reservation, and a run with --force
    could replace it meanwhile (and then lose to this rename); but no run without --force
    ever replaces another's file, and the file is whole once it is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        raise _exists(str(path), appeared=True) from None
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(path)  # our empty reservation
        raise


def write_text_atomic(text: str, path: str | os.PathLike[str], force: bool = False) -> None:
    """Text, written atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), force=force)


def write_bytes_atomic(data: bytes, path: str | os.PathLike[str], force: bool = False) -> None:
    """Bytes, written atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda tmp: Path(tmp).write_bytes(data), force=force)



def user_cache() -> Path:
    """privspec's folder in the user's cache: ``$PRIVSPEC_CACHE_DIR/privspec``, else
    ``$XDG_CACHE_HOME/privspec``, else ``~/.cache/privspec`` (the grammar's tables, run
    plans).  Not made here: a cache that cannot be written is simply not used."""
    base = os.environ.get("PRIVSPEC_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") \
        or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "privspec"
