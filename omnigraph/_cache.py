"""Per-graph caches: values derived from a graph, reused while the graph is unchanged.

A benchmark scores one graph with several seeds and detectors, and an estimator's ``predict``
after ``fit`` sees the graph it was fitted on. :class:`GraphCache` keeps up to ``size`` such
values, each keyed on the identity *and in-place version counter* (``Tensor._version``) of the
graph's tensors (e.g. ``(data.x, data.edge_index)``) plus the settings that produced it: an
in-place edit of the graph, a new tensor or other settings miss the cache, so a stale value is
never served.

No omnigraph imports here: every layer may use it.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from torch import Tensor

_ALL: weakref.WeakSet = weakref.WeakSet()   # every live GraphCache, for clear_graph_caches


class GraphCache:
    """Up to ``size`` values, least recently used dropped first.

    Args:
        size: number of graphs (times settings) kept.
        keep_alive: hold the graph's tensors while their entry lives (``True``), or only weak
            references that drop the entry when the graph is garbage collected (``False``).
    """

    def __init__(self, size: int = 1, keep_alive: bool = False):
        self.size, self.keep_alive = int(size), bool(keep_alive)
        self._entries: OrderedDict[tuple, tuple] = OrderedDict()
        _ALL.add(self)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, tensors: Sequence[Tensor], config: tuple = ()) -> Any | None:
        """The value stored for these very tensors, unmodified since, and these settings; else ``None``."""
        key = (tuple(map(id, tensors)), config)
        hit = self._entries.get(key)
        if hit is None:
            return None
        refs, versions, value = hit
        if any(_deref(r) is not t for r, t in zip(refs, tensors)) or versions != tuple(t._version for t in tensors):
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, tensors: Sequence[Tensor], config: tuple, value: Any) -> Any:
        """Store ``value`` for the graph ``tensors`` and ``config``; returns ``value``."""
        key = (tuple(map(id, tensors)), config)
        if self.keep_alive:
            refs = tuple(tensors)
        else:
            entries = self._entries

            def drop(_ref, key=key):   # frees the entry with the graph
                entries.pop(key, None)

            refs = tuple(weakref.ref(t, drop) for t in tensors)
        self._entries[key] = (refs, tuple(t._version for t in tensors), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value


def _deref(ref):
    return ref() if isinstance(ref, weakref.ref) else ref


def clear_graph_caches() -> None:
    """Empty every :class:`GraphCache` (module-level and per-estimator), so that the next call on a
    graph computes everything again: how a benchmark times a user's first (cold) call."""
    for cache in list(_ALL):
        cache.clear()


__all__ = ["GraphCache", "clear_graph_caches"]
