"""The memory guard: refuse an allocation estimate above a limit before anything is allocated.

:func:`check_memory` compares an estimated allocation with a limit taken from
:func:`set_max_bytes`, else the ``OMNIGRAPH_MAX_BYTES`` environment variable (bytes, or with a
``K``/``M``/``G``/``T`` suffix), else the machine's physical memory.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator

ENV_MAX_BYTES = "OMNIGRAPH_MAX_BYTES"
_UNSET = object()
_max_bytes: object = _UNSET  # set_max_bytes(); _UNSET: environment variable, then physical memory


class MemoryLimitError(MemoryError, ValueError):
    """An allocation estimate exceeds the configured limit (a ``MemoryError`` and a ``ValueError``)."""




def parse_bytes(value: float | str) -> int:
    """``1073741824``, ``"1e9"``, ``"512M"``, ``"8G"``, ``"8GiB"`` -> bytes (binary multiples)."""
    if isinstance(value, bool):
        raise TypeError(f"a byte count must be a number or a string like '8G', got {value!r}")
    if isinstance(value, (int, float)):
        out = int(value)
    else:
        match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([KMGT]?)(?:i?B)?\s*", str(value), flags=re.IGNORECASE)
        if match is None:
            raise ValueError(f"cannot read {value!r} as a byte count; use e.g. 17179869184, '16G' or '512M'")
        try:
            number = float(match.group(1))
        except ValueError:
            raise ValueError(f"cannot read {value!r} as a byte count; use e.g. '16G'") from None
        out = int(number * 1024 ** " KMGT".index(match.group(2).upper() or " "))
    if out <= 0:
        raise ValueError(f"a memory limit must be positive, got {value!r}")
    return out


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def get_max_bytes() -> int | None:
    """The current limit in bytes (``None``: unlimited)."""
    if _max_bytes is not _UNSET:
        return _max_bytes  # type: ignore[return-value]
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if raw:
        try:
            return parse_bytes(raw)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{ENV_MAX_BYTES}={raw!r} is not a byte count: {err}") from None
    return _physical_memory()


def set_max_bytes(limit: int | str | None | object = _UNSET) -> int | None:
    """Set the limit of :func:`check_memory` for this process; return the previous effective limit.

    ``limit``: bytes (int or ``"16G"``), ``None`` for no limit; called without an argument it
    goes back to ``OMNIGRAPH_MAX_BYTES`` / physical memory.
    """
    global _max_bytes
    try:
        previous = get_max_bytes()
    except ValueError:  # a malformed environment variable is being overridden
        previous = None
    _max_bytes = limit if limit is _UNSET or limit is None else parse_bytes(limit)  # type: ignore[arg-type]
    return previous


@contextlib.contextmanager
def max_bytes(limit: int | str | None) -> Iterator[None]:
    """Temporarily set the memory limit: ``with max_bytes("1G"): ...``."""
    global _max_bytes
    saved = _max_bytes
    set_max_bytes(limit)
    try:
        yield
    finally:
        _max_bytes = saved


def _fmt(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def check_memory(nbytes: int, what: str, hint: str | None = None) -> None:
    """Raise :class:`MemoryLimitError` before allocating ``nbytes`` for ``what`` when over the limit.

    Args:
        nbytes: estimated size of the allocation.
        what: what would be allocated (``"RGVT views [5, N, c]"``), shown in the message.
        hint: how to stay below the limit (default: process the input in chunks).
    """
    limit = get_max_bytes()
    if limit is not None and int(nbytes) > limit:
        raise MemoryLimitError(
            f"{what} needs about {_fmt(int(nbytes))}, more than the memory limit of {_fmt(limit)}; "
            f"{hint or 'process the input in smaller chunks'} (or raise the limit with {ENV_MAX_BYTES}=... or "
            "omnigraph.memory.set_max_bytes(...))")


__all__ = ["ENV_MAX_BYTES", "MemoryLimitError", "check_memory", "get_max_bytes", "max_bytes", "parse_bytes",
           "set_max_bytes"]
