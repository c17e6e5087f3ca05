"""Mirror lookup, verified copies into the writable cache, and cross-process locks.

The offline mirror (``OMNIGRAPH_DATA``) is read-only: files are copied from it into the cache,
which keeps the same relative layout (``<cache>/pyg/Cora/raw/...``), and PyG processes the
copy. A copy is written to a temporary file in the destination folder, its sha256 checked
against the catalogue, and only then renamed into place, so the cache never holds a
half-written or unverified file; a file present in the cache is therefore trusted.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from omnigraph._config import cache_dir, data_roots
from omnigraph._files import CHUNK, staged

try:  # POSIX advisory locks; elsewhere concurrent first loads are simply not serialised
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None



class DatasetNotAvailableError(FileNotFoundError):
    """A catalogued dataset whose files are neither in a mirror, nor in the cache, nor downloadable."""


def mirror_roots(data_root: str | Path | Iterable[str | Path] | None = None) -> list[Path]:
    """Mirror roots in priority order: ``data_root`` (a path or a list) if given, else ``OMNIGRAPH_DATA``."""
    if data_root is None:
        return data_roots()
    if isinstance(data_root, (str, os.PathLike)):
        data_root = str(data_root).split(os.pathsep)
    return [Path(p).expanduser() for p in data_root if p and Path(p).expanduser().is_dir()]


def resolve_cache(root: str | Path | None) -> Path:
    if root is None:
        return cache_dir()
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def find_file(rel: str, roots: list[Path]) -> Path | None:
    """First ``root/rel`` that exists; the file name is matched case-insensitively as a fallback
    (``gad/ACM.mat`` is found for ``gad/acm.mat``)."""
    for root in roots:
        path = root / rel
        if path.is_file():
            return path
        parent = path.parent
        if parent.is_dir():
            want = path.name.lower()
            for child in parent.iterdir():
                if child.name.lower() == want and child.is_file():
                    return child
    return None


def copy_verified(src: Path, dst: Path, sha256: str | None = None) -> Path:
    """Copy ``src`` to ``dst`` through a temporary file, checking the sha256 on the way.

    Raises:
        ValueError: the copied bytes do not have the expected sha256 (nothing is left at ``dst``).
    """
    with staged(dst, ".part") as tmp:
        digest = hashlib.sha256()
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            for block in iter(lambda: fin.read(CHUNK), b""):
                digest.update(block)
                fout.write(block)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise ValueError(f"checksum mismatch for {src}: sha256 {digest.hexdigest()} but the catalogue expects "
                             f"{sha256}; the mirror file is corrupt, truncated or a different version (replace it, "
                             "or pass verify=False to accept it)")
    return dst


def atomic_write(dst: Path, write) -> Path:
    """Call ``write(tmp_path)`` then rename the result onto ``dst`` (tmp keeps ``dst``'s suffix)."""
    with staged(dst, dst.suffix) as tmp:
        write(tmp)
    return dst


@contextlib.contextmanager
def file_lock(cache: Path, key: str) -> Iterator[None]:
    """Serialise the first load of one dataset across processes sharing a cache."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock_dir = cache / ".locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    with open(lock_dir / f"{safe}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def locate(record: dict, roots: list[Path]) -> Path | None:
    """Where a catalogue file record (``path`` plus optional ``alt`` paths) lives in the mirrors."""
    for rel in [record["path"], *record.get("alt", [])]:
        found = find_file(rel, roots)
        if found is not None:
            return found
    return None


def stage(records: list[dict], cache: Path, roots: list[Path], verify: bool = True) -> list[dict]:
    """Make every file of ``records`` present in the cache, copying from the mirrors.

    Returns the records that are in neither place (the caller downloads them or fails).
    """
    missing = []
    for record in records:
        dst = cache / record["path"]
        if dst.is_file():
            continue
        src = locate(record, roots)
        if src is None:
            missing.append(record)
            continue
        copy_verified(src, dst, record.get("sha256") if verify else None)
    return missing


def where_to_put(records: list[dict], roots: list[Path]) -> str:
    """Human-readable mirror destination(s) for missing files."""
    base = str(roots[0]) if roots else "<mirror>"
    paths = [f"{base}/{r['path']}" for r in records]
    if len(paths) > 4:
        paths = paths[:4] + [f"... ({len(records) - 4} more)"]
    return ", ".join(paths)
