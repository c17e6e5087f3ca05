"""File helpers shared by the dataset store and the checkpoint hub: digests and staged writes.

No omnigraph imports here: every layer may use it.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def staged(dst: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path next to ``dst``, renamed onto ``dst`` when the block succeeds and removed
    when it fails (also on KeyboardInterrupt): ``dst`` is absent, the old file or the complete new
    one, never half-written. Same folder, so the rename is atomic; the file gets normal permissions
    (mkstemp's are 0600)."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=suffix, dir=dst.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


__all__ = ["CHUNK", "sha256_file", "staged"]
