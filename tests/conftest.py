"""Shared fixtures. Mirror data and reference weights come from ``OMNIGRAPH_DATA`` /
``OMNIGRAPH_REFERENCE`` (the Makefile points them at ../shared). Outside CI a test that needs
them skips when they are absent; under ``CI=true`` their absence is a failure."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def _need(var: str) -> Path:
    raw = os.environ.get(var, "").split(os.pathsep)[0]
    if raw and Path(raw).is_dir():
        return Path(raw)
    msg = f"{var} is not set to an existing folder (expected ../shared/{var.split('_')[-1].lower()})"
    if IN_CI:
        pytest.fail(msg + " — required under CI=true")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def data_root() -> Path:
    return _need("OMNIGRAPH_DATA")


@pytest.fixture(scope="session")
def reference_root() -> Path:
    return _need("OMNIGRAPH_REFERENCE")
