"""Reading ``.npz`` archives safely: eagerly, never unpickling, with errors that name the file."""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

NPZ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


def unreadable(path, err: BaseException) -> ValueError:
    if "pickle" in str(err) or "Object arrays" in str(err):
        return ValueError(f"cannot read {path} as an npz archive: it holds pickled Python objects, which omnigraph "
                          "never unpickles because that can run arbitrary code, or it is not an npz at all; save "
                          "plain numeric arrays (np.savez) instead")
    return ValueError(f"cannot read {path} as an npz archive: it is truncated, corrupt or not an npz "
                      f"({type(err).__name__}: {err}); replace the file (a cached copy can simply be deleted and "
                      "is copied again from the mirror)")


def load_npz(path: str | Path, keys=None) -> dict[str, np.ndarray]:
    """Every array (or those in ``keys`` that exist) of an npz, read eagerly and without pickle.

    A truncated or corrupt archive, or one holding pickled object arrays, raises a ``ValueError``
    naming the file instead of a ``zipfile`` / ``zlib`` / ``EOFError`` from deep inside numpy.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such npz file: {path}")
    try:
        with np.load(path, allow_pickle=False) as f:
            names = f.files if keys is None else [k for k in keys if k in f.files]
            return {k: np.asarray(f[k]) for k in names}
    except NPZ_ERRORS as err:
        raise unreadable(path, err) from None


def npz_keys(path: str | Path) -> list[str]:
    """The array names of an npz (``ValueError`` for a file that is not a readable npz)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return list(f.files)
    except NPZ_ERRORS as err:
        raise unreadable(path, err) from None
