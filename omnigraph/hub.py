"""Checkpoints: safetensors weights + JSON config + a model card. Never pickle.

Layout of a saved model directory (``save_pretrained``)::

    DIR/model.safetensors   tensors (loaded without executing code)
    DIR/config.json         {"model_type", "config": init kwargs, "card": {...}}
    DIR/README.md           the human-readable model card

Shipped checkpoints live in the repository's ``pretrained/`` folder (installed as
``omnigraph._pretrained``) as ``NAME.safetensors`` + ``NAME.json`` + ``NAME.md``, listed in
``registry.json`` with their sha256. Loading a shipped name verifies the hash.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, ClassVar

try:  # Python >= 3.11
    from importlib.resources.abc import Traversable
except ImportError:  # pragma: no cover - Python 3.10
    from importlib.abc import Traversable

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import save_file

from omnigraph._files import sha256_file, staged

PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
_PICKLE_SUFFIXES = {".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".bin"}
def pretrained_dir() -> Traversable:
    """The shipped checkpoints: the repo's ``pretrained/`` or the installed package data.

    The result is a :class:`~importlib.resources.abc.Traversable` (a :class:`~pathlib.Path` in a
    source tree; inside a wheel, a zip or a namespace package it need not be a real folder), so read
    it with ``/``, ``read_text()`` and ``read_bytes()``, never through ``str()``."""
    if (PRETRAINED_DIR / "registry.json").is_file():
        return PRETRAINED_DIR
    from importlib import resources

    return resources.files("omnigraph._pretrained")


def shipped_registry() -> dict[str, dict[str, str]]:
    """``registry.json`` of the shipped checkpoints: name -> ``{"file", "sha256", "model_type"}``."""
    return json.loads((pretrained_dir() / "registry.json").read_text())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename: never a half-written file."""
    with staged(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def _atomic_save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str],
                         dtype: torch.dtype | None = None) -> str:
    """Write ``tensors`` as safetensors (floating tensors stored as ``dtype`` if given); return its sha256."""
    def stored(v: torch.Tensor) -> torch.Tensor:
        v = v.detach().cpu()
        return (v.to(dtype) if dtype is not None and v.is_floating_point() else v).contiguous()

    with staged(path) as tmp:
        save_file({k: stored(v) for k, v in tensors.items()}, str(tmp), metadata=metadata)
        digest = sha256_file(tmp)
    return digest


def _is_safetensors(path: Path) -> bool:
    """The safetensors layout: an 8-byte little-endian header size, then a JSON object header."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) < 9:
        return False
    n = int.from_bytes(head[:8], "little")
    return 2 <= n <= size - 8 and head[8:9] == b"{"


def refuse_pickle(path: Path) -> None:
    """Raise if ``path`` looks like a pickle / torch zip checkpoint (``.pt``, ``.ckpt``, ... or pickle bytes)."""
    with open(path, "rb") as f:
        head = f.read(2)
    pickled = head[:1] == b"\x80" or head == b"PK"  # pickle protocol 2+ / torch.save's zip archive
    if path.suffix in _PICKLE_SUFFIXES or (pickled and not _is_safetensors(path)):
        raise ValueError(
            f"{path} is a pickle-based checkpoint; omnigraph refuses to unpickle files because that can run "
            "arbitrary code. Convert it to safetensors (safetensors.torch.save_file(state_dict, 'model.safetensors')) "
            "and pass that file instead.")


def _parse_config(text: str, where: object) -> dict[str, Any]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where} is not valid JSON: {err}") from err
    if not isinstance(config, dict) or "model_type" not in config or not isinstance(config.get("config"), dict):
        raise ValueError(f"{where} lacks 'model_type'/'config' keys (config must be a JSON object); not an "
                         "omnigraph checkpoint")
    return config


def _read_shipped(name: str) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """A shipped checkpoint read through the package's Traversable (works from a wheel, a zip or a tree)."""
    registry = shipped_registry()
    if name not in registry:
        raise FileNotFoundError(
            f"no checkpoint named {name!r}: not a file or folder, and not a shipped model "
            f"(shipped: {', '.join(sorted(registry)) or 'none'})")
    entry, root = registry[name], pretrained_dir()
    weights, cfg = root / entry["file"], root / (entry["file"].rsplit(".", 1)[0] + ".json")
    if not weights.is_file():
        raise FileNotFoundError(f"shipped checkpoint {name!r}: {entry['file']} is missing from the installed "
                                "package; reinstall omnigraph")
    blob = weights.read_bytes()
    if hashlib.sha256(blob).hexdigest() != entry["sha256"]:
        raise ValueError(f"sha256 of the shipped {entry['file']} does not match the registry "
                         f"({entry['sha256'][:12]}...): the file is corrupt or was modified; reinstall omnigraph")
    if not cfg.is_file():
        raise FileNotFoundError(f"shipped checkpoint {name!r}: its config {cfg.name} is missing; reinstall omnigraph")
    return _parse_config(cfg.read_text(), cfg.name), load_bytes(blob)


def read_checkpoint(name_or_path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Resolve a shipped name, a directory or a ``.safetensors`` file to ``(config, tensors)``."""
    path = Path(name_or_path)
    if not path.exists():
        return _read_shipped(str(name_or_path))
    if path.is_dir():
        weights, cfg_path = path / "model.safetensors", path / "config.json"
    else:
        weights, cfg_path = path, path.with_suffix(".json")
    if not weights.is_file():
        raise FileNotFoundError(f"checkpoint weights not found: {weights}")
    refuse_pickle(weights)
    if not cfg_path.is_file():
        raise FileNotFoundError(f"checkpoint config not found: {cfg_path} (expected next to {weights.name})")
    config = _parse_config(cfg_path.read_text(), cfg_path)
    blob = weights.read_bytes()
    recorded = config.get("sha256")
    if recorded is not None and hashlib.sha256(blob).hexdigest() != recorded:
        raise ValueError(f"sha256 of {weights} does not match the digest recorded in {cfg_path.name} at save time "
                         f"({str(recorded)[:12]}...): the weights were altered or truncated after saving")
    try:
        tensors = load_bytes(blob)
    except (SafetensorError, OSError, ValueError) as err:
        raise ValueError(f"{weights} is not a valid safetensors file ({err}); it may be truncated or corrupt") from err
    return config, tensors


def model_card_markdown(model_type: str, card: dict[str, Any]) -> str:
    lines = [f"# {card.get('name', model_type)}", "", f"- model type: `{model_type}`"]
    for key, value in card.items():
        if key != "name":
            lines.append(f"- {key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")
    return "\n".join(lines) + "\n"


class PretrainedMixin:
    """``save_pretrained`` / ``from_pretrained`` for objects with ``get_config`` and a state dict.

    Subclasses define ``model_type`` and ``get_config()`` (the keyword arguments that rebuild
    the object) and provide ``state_dict()`` / ``load_state_dict(strict=True)``.
    """

    model_type: ClassVar[str]

    def get_config(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def save_pretrained(self, directory: str | os.PathLike, card: dict[str, Any] | None = None,
                        dtype: torch.dtype | None = None) -> Path:
        """Write ``model.safetensors`` + ``config.json`` (with the weights' sha256, checked at load) + ``README.md``.

        ``dtype`` stores the floating tensors in another precision (e.g. ``torch.float16``); loading
        copies them back into the model's own parameters."""
        directory = Path(directory)
        card = {"date": _dt.date.today().isoformat(), **(card or {})}
        digest = _atomic_save_tensors(self.state_dict(), directory / "model.safetensors",
                                      {"model_type": self.model_type}, dtype)
        meta = {"model_type": self.model_type, "config": self.get_config(), "card": card, "sha256": digest}
        atomic_write_bytes(directory / "config.json", json.dumps(meta, indent=2).encode())
        atomic_write_bytes(directory / "README.md", model_card_markdown(self.model_type, card).encode())
        return directory

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, **overrides):
        meta, tensors = read_checkpoint(name_or_path)
        if meta["model_type"] != cls.model_type:
            raise ValueError(f"{name_or_path} holds a {meta['model_type']!r} checkpoint, not {cls.model_type!r}")
        try:
            obj = cls(**{**meta["config"], **overrides})
        except TypeError as err:  # unknown or missing keys in config.json
            raise ValueError(f"the config of {name_or_path} does not fit {cls.__name__}: {err}") from err
        try:
            obj.load_state_dict(tensors, strict=True)
        except RuntimeError as err:
            raise ValueError(f"checkpoint config does not match its tensors: {err}") from err
        obj.card_ = meta.get("card", {})
        return obj


def publish(obj: PretrainedMixin, name: str, card: dict[str, Any], directory: Path | None = None,
            dtype: torch.dtype | None = None) -> Path:
    """Write a checkpoint as ``NAME.safetensors/.json/.md`` into ``pretrained/`` and register its hash
    (``dtype``: as in ``PretrainedMixin.save_pretrained``)."""
    directory = Path(directory or PRETRAINED_DIR)
    card = {"name": name, "date": _dt.date.today().isoformat(), **card}
    weights = directory / f"{name}.safetensors"
    _atomic_save_tensors(obj.state_dict(), weights, {"model_type": obj.model_type}, dtype)
    meta = {"model_type": obj.model_type, "config": obj.get_config(), "card": card}
    atomic_write_bytes(directory / f"{name}.json", json.dumps(meta, indent=2).encode())
    atomic_write_bytes(directory / f"{name}.md", model_card_markdown(obj.model_type, card).encode())
    reg_path = directory / "registry.json"
    registry = json.loads(reg_path.read_text()) if reg_path.is_file() else {}
    registry[name] = {"file": weights.name, "sha256": sha256_file(weights), "model_type": obj.model_type}
    atomic_write_bytes(reg_path, (json.dumps(registry, indent=2, sort_keys=True) + "\n").encode())
    return weights
