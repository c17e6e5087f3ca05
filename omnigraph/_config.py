"""Where omnigraph looks for data, reference weights and its writable cache.

* ``OMNIGRAPH_DATA``: a path list (``os.pathsep``-separated) of offline mirrors laid out
  like ``shared/data`` (``pyg/``, ``yandex/``, ``gad/``). ``OMNIGRAPH_DATA_ROOT`` is accepted
  as an alias. When unset, no mirror is used and PyG / OGB download the canonical files.
* ``OMNIGRAPH_CACHE``: writable cache (default ``~/.cache/omnigraph``). Mirror files are
  copied here before PyG processes them; mirrors are never written to.
* ``OMNIGRAPH_REFERENCE``: the authors' published weights (parity tests only).
"""
from __future__ import annotations

import os
from pathlib import Path


def data_roots() -> list[Path]:
    """The configured mirror roots that exist, in priority order."""
    raw = os.environ.get("OMNIGRAPH_DATA") or os.environ.get("OMNIGRAPH_DATA_ROOT") or ""
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p and Path(p).expanduser().is_dir()]


def portable(text: str) -> str:
    """``text`` with this machine's data roots written as ``$OMNIGRAPH_DATA`` and the home folder
    as ``~``: for messages that go into committed result pages."""
    for root in sorted(data_roots(), key=lambda p: len(str(p)), reverse=True):
        text = text.replace(str(root.resolve()), "$OMNIGRAPH_DATA").replace(str(root), "$OMNIGRAPH_DATA")
    home = str(Path.home())
    return text.replace(home + os.sep, "~" + os.sep) if home not in ("", os.sep) else text


def cache_dir() -> Path:
    path = Path(os.environ.get("OMNIGRAPH_CACHE", "~/.cache/omnigraph")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
