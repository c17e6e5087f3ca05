"""The package installs as `omnigraph` (with its catalogue and checkpoints) and never shadows stdlib graphlib."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_stdlib_graphlib_not_shadowed():
    out = subprocess.run([sys.executable, "-c", "import graphlib, omnigraph; print(graphlib.__file__); "
                          "print(graphlib.TopologicalSorter)"], cwd=REPO, capture_output=True, text=True, check=True)
    assert "site-packages" not in out.stdout.splitlines()[0] and "omnigraph" not in out.stdout.splitlines()[0]
    assert not (REPO / "graphlib").exists()


@pytest.mark.slow
def test_non_editable_install_imports_from_outside_repo(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(REPO)], check=True, capture_output=True)
    code = ("import omnigraph, graphlib, json, importlib.resources as r; "
            "print(omnigraph.__file__); print(graphlib.__file__); "
            "print(sorted(p.name for p in r.files('omnigraph._pretrained').iterdir())); "
            "print(sorted(p.name for p in r.files('omnigraph._catalogue').iterdir()))")
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(str(target))
    assert "site" not in lines[1].split("python3")[-1] or "graphlib.py" in lines[1]
    assert "registry.json" in lines[2]
    assert any(name.endswith(".json") for name in eval(lines[3]))
    assert (target / "bin" / "omnigraph").exists()


def test_every_subpackage_is_listed_in_pyproject():
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "omnigraph").rglob("__init__.py")}
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"
