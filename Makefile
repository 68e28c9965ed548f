# Two commands on a fresh machine with python3 and pip: `make demo` and `make test`.
# Each bootstraps uv (into .tools/) and the locked environment (into .venv/) itself.

UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
PYTHON ?= python3

.PHONY: demo test lint env clean

demo: env
	@echo "== flashrsi: validating the example experiment =="
	@$(UV) run --locked flashrsi validate --config examples/meta_harness.yaml \
		--algorithm.max_steps 2 --benchmark.limit 9
	@echo "== the config is valid; the line starting with '# ok' says what it will run."
	@echo "== The Meta-Harness job that runs it lands with its issue; until then"
	@echo "== 'make demo' stops after validation."

test: env
	$(UV) run --locked pytest

lint: env
	$(UV) run --locked ruff check flashrsi_dagster tests bench

env: $(UV)
	$(UV) sync --locked --quiet --all-extras

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

clean:
	rm -rf $(TOOLS) .venv .pytest_cache
