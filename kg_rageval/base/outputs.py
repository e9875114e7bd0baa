"""No command writes over one of its own inputs (standard library only).

:func:`refuse_overwrite` is called by a command before it writes anything: every file it will
write is compared with every file it reads, and a match is a :class:`ConfigError` (exit 2)
naming both options. Two paths are the same file when they resolve to the same path after
symlinks (``os.path.realpath``) or, when both exist, name the same inode (``os.path.samefile``:
a hard link). An output that is a directory is given as the files the command writes into it.

Writers that replace a file do so atomically (a temporary file in the same folder, renamed
into place): a crash leaves the old file or the new one, never half of one, and a hard link
elsewhere to the old file keeps the old content.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Union

from kg_rageval.base.errors import ConfigError

PathLike = Union[str, "os.PathLike[str]"]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` are one file: the same path after symlinks, or (both existing)
    the same inode (hard links)."""
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if ra == rb:
        return True
    try:
        return os.path.samefile(ra, rb)
    except OSError:
        return False


def refuse_overwrite(
    outputs: Mapping[str, PathLike | Sequence[PathLike] | None],
    inputs: Mapping[str, PathLike | Sequence[PathLike] | None],
) -> None:
    """Raise :class:`ConfigError` when an output would be written over an input (or two outputs
    are one file). Keys are what the user typed (``"--out"``, ``"-d"``); a value is a path, a
    list of paths (the files a directory output will hold) or ``None`` (not given)."""
    outs = list(_flatten(outputs))
    ins = list(_flatten(inputs))
    for o_opt, o in outs:
        for i_opt, i in ins:
            if same_file(o, i):
                raise ConfigError(
                    f"{o_opt} {o} is the same file as the input {i_opt} {i}: writing it would "
                    "destroy the input; choose another output path"
                )
    for n, (a_opt, a) in enumerate(outs):
        for b_opt, b in outs[n + 1 :]:
            if same_file(a, b):
                raise ConfigError(f"{a_opt} {a} and {b_opt} {b} are the same file; choose two output paths")


def _flatten(paths: Mapping[str, PathLike | Sequence[PathLike] | None]) -> Iterable[tuple[str, str]]:
    for opt, p in paths.items():
        if p is None:
            continue
        for one in [p] if isinstance(p, (str, os.PathLike)) else p:
            yield opt, os.fspath(one)


def atomic_path(path: PathLike) -> Path:
    """A temporary sibling of ``path`` (same folder, so the final rename is atomic)."""
    p = Path(path)
    return p.with_name(f".{p.name}.tmp{os.getpid()}")


@contextlib.contextmanager
def writing(path: PathLike) -> Iterator[None]:
    """Name ``path`` in an :class:`OSError` raised while writing it (a full disk's
    ``[Errno 28] No space left on device`` says no file by itself)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(
            exc.errno, f"{exc.strerror or exc} (writing {os.fspath(path)})", os.fspath(path)
        ) from None
