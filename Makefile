# Two commands on a fresh machine with Python >= 3.10 and pip:
#   make demo   create .venv, install, run zero-shot inference with a shipped checkpoint
#   make test   same install, then the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The offline mirror laid out like ../shared/data (see docs); override with OMNIGRAPH_DATA=...
SHARED := $(abspath ../shared)
OMNIGRAPH_DATA ?= $(if $(wildcard $(SHARED)/data),$(SHARED)/data,)
OMNIGRAPH_REFERENCE ?= $(if $(wildcard $(SHARED)/reference),$(SHARED)/reference,)
export OMNIGRAPH_DATA OMNIGRAPH_REFERENCE
TORCH_SPEC ?= torch==2.13.0

.PHONY: install demo test wheel-check bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# a torch that is already importable is kept; otherwise the pinned CPU build
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q -e ".[dev]"
	# optional baselines: pygod needs torch-sparse/torch-scatter, prebuilt for this torch in ../shared/wheels
	if [ -f "$(SHARED)/wheels/SHA256SUMS" ]; then \
	  (cd "$(SHARED)/wheels" && sha256sum -c --quiet SHA256SUMS) && \
	  $(PIP) install -q --no-index "$(SHARED)"/wheels/torch_scatter-*.whl "$(SHARED)"/wheels/torch_sparse-*.whl && \
	  $(PIP) install -q -e ".[dev,baselines]"; \
	else echo "no $(SHARED)/wheels: pygod baselines not installed (omnigraph benchmark gad --models pygod:... will say so)"; fi
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/omnigraph predict --model rgvt --dataset Cora

test: install
	$(PY) -m pytest -q -x --durations=15
	$(MAKE) wheel-check

# The user's path: build the wheel, install it (no dependencies: they come from $(VENV) through a
# .pth line, so no second torch) into an environment of its own, and from outside the source tree
# load every shipped checkpoint, run the CLI and a notebook (.ci/wheel_check.py).
WHEEL_ENV := build/wheel-env
wheel-check: install
	rm -rf build/lib build/bdist.* build/wheel $(WHEEL_ENV)
	$(PIP) wheel -q --no-deps --no-build-isolation -w build/wheel .
	$(PY) -m venv --without-pip $(WHEEL_ENV)
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	  "$$($(WHEEL_ENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/omnigraph-deps.pth"
	$(PIP) --python $(WHEEL_ENV)/bin/python install -q --no-deps --no-index build/wheel/omnigraph-*.whl
	env -u PYTHONPATH OMP_NUM_THREADS=1 MPLBACKEND=Agg $(WHEEL_ENV)/bin/python .ci/wheel_check.py $(CURDIR)

# issue #5's figures (docs/results/performance.md, perf.json, perf_scaling.png) and RGVT's
# fast-vs-reference adaptation table (about an hour on one thread); not part of `make test`
bench: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/rgvt_fast_vs_reference.py --suite rgvt28 --out docs/results
	$(PY) benchmarks/perf.py --out docs/results

clean:
	rm -rf $(VENV) build *.egg-info
