# The contributor's front door. Every target creates the environment first if it is missing
# (.venv from requirements-dev.txt; node_modules from package-lock.json, for `make test`).
#   make test      every check: unit tests, every page's blocks and outputs, the site build
#   make audit     the exhaustive checks make test leaves out (it keeps one case of each):
#                  every page's accessibility audit, ~ variation, browser run (CI runs it)
#   make serve     the site at http://127.0.0.1:8000 with live reload
#   make outputs   rewrite every page's Output blocks and figures from what the code prints
#                  and draws (practice notebooks are generated at build/test time, not kept)
#   make site      build the site into site/ (strict)
#   make bench     benchmark NumPy and PyTorch attention -> benchmarks/results.{json,md}
#                  (QUICK=1: tiny sizes in seconds -> benchmarks/results-quick.{json,md});
#                  chapter 7's training step and tokenizer -> benchmarks/train-step.{json,md}
#                  chapter 10's crossover -> benchmarks/linear-crossover.json (not QUICK)
#                  chapter 11's decoding against HF generate -> benchmarks/serving.{json,md}
#                  chapter 12's sparse decode step -> benchmarks/sparse-decode.{json,md}
#                  chapter 12's chunked KDA against its recurrence -> benchmarks/kda-chunked.json
#                  chapter 13's BERT encoding against HF -> benchmarks/encoders.{json,md}
#   make train     chapter 7's run: tokenizer, GPT, checkpoint and log -> attention/gpt/shipped/
#                  (deterministic for its seed; one BLAS thread: minutes on 2 shared cores)
#   make induction chapter 14's runs: the attention-only model on three seeds, then the same
#                  with MLPs; weights and logs -> attention/circuits/shipped/ (mlp-* for the
#                  second; deterministic, one BLAS thread; `-m attention.circuits.run mlp`
#                  trains the second only)

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements-dev.txt pyproject.toml | cksum | cut -d' ' -f1)
# The npm development tools (package.json, pinned by package-lock.json): the workflow
# linter and axe-core for the accessibility audit. `npm ci` writes this file last.
NODE_STAMP := node_modules/.package-lock.json

export PYTHONPATH := $(CURDIR)
export NO_MKDOCS_2_WARNING := 1
export PYTHONHASHSEED := 0

.PHONY: test audit serve outputs site clean bench train induction

$(STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m tools.site.pyodide_runtime
	rm -f $(VENV)/.installed-* && touch $@

$(NODE_STAMP): package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# In parallel (pytest-xdist), in units (tools/pagecheck/schedule.py): a page's blocks stay
# together and in order on one worker, so do a test file's tests (its fixtures are set up
# once), and the accessibility audit's pages go one by one; the longest units go first, by
# their times in the last run (.pytest_cache). The site is built once per run, for all the
# workers.
# JOBS=0 runs serially. The ten slowest tests are printed at the end (pyproject.toml).
# `make test` leaves the checks marked `audit` (pyproject.toml) to `make audit`: the
# accessibility audit of the pages that a page of their kind stands for, the variation of
# every page's ~ numbers, the browser runs of the three pages long in WebAssembly, the
# new-chapter checklist. CI runs both.
JOBS ?= auto
test: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadscope -m "not audit"

audit: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadscope -m audit

serve: $(STAMP)
	SITE_URL=http://127.0.0.1:8000/ $(PY) -m mkdocs serve --dev-addr 127.0.0.1:8000 --livereload

outputs: $(STAMP)
	$(PY) -m pytest docs README.md --update-outputs -q

site: $(STAMP)
	$(PY) -m mkdocs build --strict

bench: $(STAMP)
	$(PY) benchmarks/bench.py $(if $(QUICK),--quick)
	$(PY) benchmarks/train_step.py $(if $(QUICK),--quick)
	$(if $(QUICK),,$(PY) benchmarks/linear_crossover.py)
	$(PY) benchmarks/serving.py $(if $(QUICK),--quick)
	$(PY) benchmarks/sparse_decode.py $(if $(QUICK),--quick)
	$(PY) benchmarks/kda_chunked.py $(if $(QUICK),--quick)
	$(PY) benchmarks/encoders.py $(if $(QUICK),--quick)

train: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) -m attention.gpt.run

induction: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) -m attention.circuits.run

clean:
	rm -rf site .pytest_cache
