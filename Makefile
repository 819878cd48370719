# GraphLemon — `make demo`, `make test`, `make bench`, `make bench-live`, `make lint`.
# Every target creates .venv on first use (Python 3.11) and installs the project into it (scripts/install.py: uv from
# PyPI, else pip; it prints each step, its progress and its time). `make demo` installs what the demo needs; the
# other targets add the dev extras (tests, lint, benchmarks).

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120

.PHONY: install bytecode fixtures lint test test-fast demo demo-skill bench bench-smoke bench-live clean

install: $(DEV_STAMP) bytecode

$(STAMP): pyproject.toml constraints.txt scripts/install.py
	@$(PYTHON) scripts/install.py --venv $(VENV) --extras demo
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	@$(PYTHON) scripts/install.py --venv $(VENV) --extras dev
	@touch $(DEV_STAMP)

# The bytecode of GraphLemon's own modules (the installer writes the packages'): where PYTHONDONTWRITEBYTECODE is set,
# and in a sandboxed test run, which cannot write here, every Python process would compile each module it imports.
# Only what changed is compiled again (about a second when nothing did).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 graphlemon flows tasks blocks analytics

# Test-fixture dependencies (JS test frameworks from committed lockfiles).
fixtures: $(DEV_STAMP)
	@bash scripts/install-fixtures.sh

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache

# pytest, then every benchmark at its smoke size (both run; the first failure's exit status is the target's).
# `--durations=30` lists the 30 slowest tests (set-up, call, teardown) at the end: where the suite's time goes.
# The tests run over PYTEST_WORKERS pytest-xdist processes, 2 by default (tests/conftest.py keeps a module, and the
# tests of the Prefect stack, on one of them); PYTEST_WORKERS=0 runs them in this one process.
PYTEST_WORKERS ?= 2
test: $(DEV_STAMP) bytecode fixtures lint
	@set +e; $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=30 $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests (exit 5): the suite is missing" >&2; fi; \
	$(MAKE) --no-print-directory bench-smoke; bench=$$?; \
	exit $$(( rc ? rc : bench ))

# The unit tier: every test not marked `system` (README, "Tests"), each stopped after PYTEST_FAST_TIMEOUT seconds. No
# fixtures to install, no lint, no benchmark: what changed is checked in about two minutes.
PYTEST_FAST_TIMEOUT ?= 60
test-fast: $(DEV_STAMP) bytecode
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup -m "not system" --timeout $(PYTEST_FAST_TIMEOUT) $(PYTEST_ARGS)

demo: $(STAMP) bytecode
	$(BIN)/python scripts/demo.py

demo-skill: $(STAMP) bytecode  # REQ-08: a skill_defect bug -> a gated skill iteration -> done
	$(BIN)/python scripts/demo.py playbook-skill.yaml

# Every benchmark, even after one fails; the failures are listed at the end (and the exit status is then 1).
BENCHMARKS = $(sort $(wildcard benchmarks/bench_*.py))
# Every benchmark as its own process, each one's output a block in file order (scripts/run_benchmarks.py); $(2) at once.
define run_benchmarks
	$(1) $(BIN)/python scripts/run_benchmarks.py --jobs $(2) $(BENCHMARKS)
endef

bench: $(DEV_STAMP) bytecode fixtures
	$(call run_benchmarks,,1)

# Each benchmark at its smoke size (BENCH_SMOKE=1: seconds, every figure printed, no number judged): part of `make test`.
# No figure is judged, so BENCH_SMOKE_JOBS of them run at once (`make bench` runs one at a time: its ratios need a quiet
# machine).
BENCH_SMOKE_JOBS ?= 3
bench-smoke: $(DEV_STAMP) bytecode
	$(call run_benchmarks,BENCH_SMOKE=1,$(BENCH_SMOKE_JOBS))

# The model path against the real API (costs money; skipped with a message without ANTHROPIC_API_KEY or in CI).
bench-live: $(DEV_STAMP)
	@$(BIN)/python benchmarks/live.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
