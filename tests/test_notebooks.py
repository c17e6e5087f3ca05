"""The tutorial notebooks: committed without outputs, and each runs top to bottom.

Execution uses nbclient with a kernel on this interpreter and the offline mirror
(``data_root`` fixture); the four notebooks take about 15-35 s each on one CPU thread.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
EXPECTED = [
    "01_zero_shot_node_classification.ipynb",
    "02_bring_your_own_graph.ipynb",
    "03_generalist_anomaly_detection.ipynb",
    "04_pretraining_your_own_checkpoint.ipynb",
]


def test_the_four_tutorials_exist():
    found = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_committed_without_outputs(name):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"cells {dirty} have outputs; clear them before committing"
    # a tutorial opens with a markdown title and explains itself: no run of more than two code cells
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    kinds = "".join("c" if c.cell_type == "code" else "m" for c in nb.cells)
    assert "ccc" not in kinds, f"three code cells in a row without explanation: {kinds}"


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs(name, data_root, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    monkeypatch.setenv("OMNIGRAPH_DATA", str(data_root))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    km = KernelManager(kernel_name="python3")
    # run the kernel on this interpreter, whatever kernelspec named python3 the machine has
    km.kernel_spec.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    client = NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError with the failing cell and traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    executed = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert executed == list(range(1, len(executed) + 1)), "not every code cell ran, in order"
