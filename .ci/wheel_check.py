"""The user's path, checked on the installed wheel (run by ``make wheel-check``, part of ``make test``).

Run with the interpreter of an environment into which the built wheel was installed, from a
folder outside the source tree. Fails (exit 1) when omnigraph is imported from the source tree,
when any shipped checkpoint cannot be loaded from the installed package, or when the CLI or a
tutorial notebook fails there.

    python wheel_check.py SOURCE_TREE
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DETECTORS = {"refi-gad", "arc"}  # model types that `omnigraph detect` runs
NOTEBOOK = "01_zero_shot_node_classification.ipynb"


def main(source: Path) -> int:
    import omnigraph
    from omnigraph import ARC, REFIGAD, RGVT, GraphAny
    from omnigraph.hub import shipped_registry
    from omnigraph.models.arc import ARCModel
    from omnigraph.models.graphany import GraphAnyModel
    from omnigraph.models.refi_gad import REFIGADNet
    from omnigraph.models.rgvt import RGVTEncoder

    failures: list[str] = []
    checks = 0

    def check(name: str, fn) -> None:
        nonlocal checks
        checks += 1
        t = time.perf_counter()
        try:
            fn()
        except Exception as err:  # noqa: BLE001 - every failure is reported, then the run fails
            failures.append(f"{name}: {type(err).__name__}: {err}")
            print(f"FAIL {name}: {type(err).__name__}: {err}", flush=True)
        else:
            print(f"ok   {name} ({time.perf_counter() - t:.1f} s)", flush=True)

    where = Path(omnigraph.__file__).resolve()

    def installed() -> None:
        if (source / "omnigraph").resolve() in where.parents or Path(sys.prefix).resolve() not in where.parents:
            raise AssertionError(f"omnigraph imported from {where}, not from this environment ({sys.prefix})")
        if Path.cwd().resolve() == source.resolve() or source.resolve() in Path.cwd().resolve().parents:
            raise AssertionError("run this check from outside the source tree")

    check(f"omnigraph installed in {sys.prefix}", installed)
    models = {cls.model_type: cls for cls in (RGVTEncoder, GraphAnyModel, REFIGADNet, ARCModel)}
    estimators = {"rgvt": RGVT, "graphany": GraphAny, "refi-gad": REFIGAD, "arc": ARC}
    registry = shipped_registry()
    if not registry:
        failures.append("the installed package ships no checkpoint")
    for name, entry in sorted(registry.items()):
        kind = entry["model_type"]
        for cls in (models[kind], estimators[kind]):
            check(f"{cls.__name__}.from_pretrained({name!r})", lambda cls=cls, name=name: cls.from_pretrained(name))

    exe = Path(sys.executable).with_name("omnigraph")

    def cli(*argv: str) -> None:
        run = subprocess.run([str(exe), *argv], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"exit {run.returncode}: {run.stderr.strip()[-2000:]}")

    check("omnigraph predict --model rgvt --dataset cora", lambda: cli("predict", "--model", "rgvt", "--dataset", "cora"))
    for name in sorted(n for n, e in registry.items() if e["model_type"] in DETECTORS):
        argv = ["detect", "--model", name, "--dataset", "gad/cora", "--shots-normal", "10", "--shots-anomaly",
                "0" if registry[name]["model_type"] == "arc" else "10", "--seeds", "0"]
        check("omnigraph " + " ".join(argv), lambda argv=argv: cli(*argv))

    def notebook() -> None:
        import nbformat
        from jupyter_client.manager import KernelManager
        from nbclient import NotebookClient

        nb = nbformat.read(source / "notebooks" / NOTEBOOK, as_version=4)
        km = KernelManager(kernel_name="python3")
        km.kernel_spec.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": os.getcwd()}}).execute()

    check(f"notebook {NOTEBOOK}", notebook)
    print(f"wheel check: {checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory(prefix="omnigraph-wheel-") as tmp:
        os.chdir(tmp)
        sys.path = [p for p in sys.path if p and Path(p).resolve() != src]
        sys.exit(main(src))
