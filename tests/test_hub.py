"""Checkpoint round trip, hash verification and pickle refusal."""
import json

import pytest
import torch
from torch import nn

from omnigraph import hub
from omnigraph._files import sha256_file


class _Toy(hub.PretrainedMixin, nn.Module):
    model_type = "toy-test"

    def __init__(self, width: int = 4):
        super().__init__()
        self.width = width
        self.lin = nn.Linear(width, 2)

    def get_config(self):
        return {"width": self.width}


def test_round_trip(tmp_path):
    torch.manual_seed(0)
    model = _Toy(width=6)
    model.save_pretrained(tmp_path / "ck", card={"training_data": "none", "seed": 0})
    assert {p.name for p in (tmp_path / "ck").iterdir()} == {"model.safetensors", "config.json", "README.md"}
    back = _Toy.from_pretrained(tmp_path / "ck")
    assert back.width == 6
    for (k, a), (_, b) in zip(model.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), k
    assert back.card_["seed"] == 0


def test_publish_registry_and_hash_mismatch(tmp_path, monkeypatch):
    model = _Toy()
    hub.publish(model, "toy", {"seed": 1}, directory=tmp_path)
    monkeypatch.setattr(hub, "pretrained_dir", lambda: tmp_path)
    registry = json.loads((tmp_path / "registry.json").read_text())
    assert registry["toy"]["sha256"] == sha256_file(tmp_path / "toy.safetensors")
    assert isinstance(_Toy.from_pretrained("toy"), _Toy)
    data = bytearray((tmp_path / "toy.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / "toy.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        _Toy.from_pretrained("toy")


def test_unknown_name_lists_shipped(tmp_path, monkeypatch):
    (tmp_path / "registry.json").write_text('{"a": {"file": "a.safetensors", "sha256": "0"}}')
    monkeypatch.setattr(hub, "pretrained_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match="shipped: a"):
        _Toy.from_pretrained("does-not-exist")


def test_pickle_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(_Toy().state_dict(), path)
    with pytest.raises(ValueError, match="pickle"):
        hub.read_checkpoint(path)
    # a pickle hiding behind the safetensors name is refused too
    disguised = tmp_path / "d" / "model.safetensors"
    disguised.parent.mkdir()
    disguised.write_bytes(path.read_bytes())
    (tmp_path / "d" / "config.json").write_text('{"model_type": "toy-test", "config": {}}')
    with pytest.raises(ValueError, match="pickle"):
        _Toy.from_pretrained(tmp_path / "d")


def test_config_tensor_mismatch_and_truncation(tmp_path):
    _Toy(width=4).save_pretrained(tmp_path / "ck")
    meta = json.loads((tmp_path / "ck" / "config.json").read_text())
    meta["config"]["width"] = 5
    (tmp_path / "ck" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not match its tensors"):
        _Toy.from_pretrained(tmp_path / "ck")
    _Toy(width=4).save_pretrained(tmp_path / "ck2")
    w = tmp_path / "ck2" / "model.safetensors"
    w.write_bytes(w.read_bytes()[:40])
    with pytest.raises(ValueError, match="safetensors"):
        _Toy.from_pretrained(tmp_path / "ck2")


def test_wrong_model_type(tmp_path):
    _Toy().save_pretrained(tmp_path / "ck")
    meta = json.loads((tmp_path / "ck" / "config.json").read_text())
    meta["model_type"] = "other"
    (tmp_path / "ck" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="'other'"):
        _Toy.from_pretrained(tmp_path / "ck")


def test_saved_files_have_normal_permissions_and_no_leftovers(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        _Toy().save_pretrained(tmp_path / "ck")
    finally:
        os.umask(umask)
    for f in (tmp_path / "ck").iterdir():
        assert f.stat().st_mode & 0o777 == 0o644, f.name  # not mkstemp's 0600
    assert not [p for p in (tmp_path / "ck").iterdir() if p.name.startswith(".")]


def test_safetensors_header_starting_like_a_zip_is_not_refused(tmp_path):
    """A safetensors header of 0x4B50 bytes begins with b"PK" (torch.save's zip magic): still accepted."""
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    state = _Toy().state_dict()
    for pad in range(18900, 19400):
        save_file(state, path, metadata={"model_type": "toy-test", "pad": "x" * pad})
        if path.read_bytes()[:2] == b"PK":
            break
    assert path.read_bytes()[:2] == b"PK"
    path.with_suffix(".json").write_text('{"model_type": "toy-test", "config": {"width": 4}}')
    assert isinstance(_Toy.from_pretrained(path), _Toy)


@pytest.mark.parametrize("loader", ["rgvt", "graphany"])
def test_corrupt_or_pickled_reference_npz_gives_a_clear_error(tmp_path, loader, reference_root):
    """The authors' npz weights are read without pickle; damage is reported with the file name."""
    import shutil

    import numpy as np

    from omnigraph.models.graphany import GraphAnyModel
    from omnigraph.models.rgvt import RGVTEncoder

    read = RGVTEncoder.from_reference_npz if loader == "rgvt" else GraphAnyModel.from_reference_npz
    good = tmp_path / "weights.npz"
    np.savez(good, **{"mlp.lins.0.weight": np.zeros((5, 5), np.float32)})
    for name in ("truncated", "pickled"):  # GraphAny reads its config from the JSON next to the npz
        shutil.copy(reference_root / "graphany" / "graph_any_wisconsin.json", tmp_path / f"{name}.json")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:60])
    with pytest.raises(ValueError, match=r"truncated\.npz as an npz archive: it is truncated"):
        read(truncated)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, w=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match=r"pickled\.npz.*never unpickles"):
        read(pickled)


def test_shipped_checkpoint_loads_through_a_zip_traversable(tmp_path, monkeypatch):
    """An installed package's data need not be a real folder (a wheel in a zip, a namespace package):
    shipped names are read through the Traversable API, never through ``str(path)``."""
    import zipfile

    model = _Toy()
    hub.publish(model, "toy", {"seed": 1}, directory=tmp_path / "tree")
    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in (tmp_path / "tree").iterdir():
            zf.write(f, f"_pretrained/{f.name}")
    root = zipfile.Path(archive, "_pretrained/")
    monkeypatch.setattr(hub, "pretrained_dir", lambda: root)
    assert hub.shipped_registry()["toy"]["model_type"] == _Toy.model_type
    back = _Toy.from_pretrained("toy")
    for (k, a), (_, b) in zip(model.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), k  # a byte copy of the same file: bit-identical on every machine
    assert back.card_["seed"] == 1
    # the registry's sha256 still guards a shipped file read from the archive
    data = bytearray((tmp_path / "tree" / "toy.safetensors").read_bytes())
    data[-1] ^= 0xFF
    with zipfile.ZipFile(archive, "w") as zf:
        for f in (tmp_path / "tree").iterdir():
            zf.writestr(f"_pretrained/{f.name}", bytes(data) if f.suffix == ".safetensors" else f.read_bytes())
    monkeypatch.setattr(hub, "pretrained_dir", lambda: zipfile.Path(archive, "_pretrained/"))
    with pytest.raises(ValueError, match="sha256"):
        _Toy.from_pretrained("toy")
