# Two commands on a fresh machine with python3 and pip: `make demo` and `make test`.
# Each bootstraps uv (into .tools/) and the locked environment (into .venv/) itself.

UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
PYTHON ?= python3

CODEX_VERSION := 0.169.0
CODEX_PREFIX := $(TOOLS)/codex

.PHONY: demo test lint env jail browser docker image codex vendor clean

demo: env
	@echo "== flashrsi: Meta-Harness on the built-in text classification, offline model simulator =="
	$(UV) run --locked flashrsi run --config examples/meta_harness.yaml \
		--algorithm.max_steps 2 --benchmark.limit 9
	@echo "== browse it: .venv/bin/flashrsi ui   (Dagster UI on the same instance)"

# One pytest-xdist worker per core (`-n auto`), each test file whole on one worker (its
# module-scoped experiments made once); the Docker engine one session at a time
# (tests/docker_engine.py). Serially: .venv/bin/pytest. The 30 slowest tests close the report:
# the suite's time is kept near 20 minutes on 2 cores by moving or marking them.
test: env browser docker
	$(UV) run --locked pytest -n auto --dist loadfile --durations=30

# Every agent process runs in a bubblewrap jail (Debian's `bubblewrap`), and a Harbor trial with
# internet gets its own network through slirp4netns; installed here where apt and root allow.
# Without bubblewrap, agents refuse to start unless a config says `confinement: none`.
jail:
	@{ command -v bwrap && command -v slirp4netns; } >/dev/null 2>&1 || { \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap slirp4netns >/dev/null; \
		else echo "bubblewrap / slirp4netns missing (apt-get install bubblewrap slirp4netns): agents cannot be jailed"; fi; }

# The UI test drives Debian's headless Chromium; installed here where apt and root allow.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else echo "chromium is not installed: the UI test will be skipped"; fi; }

# A Docker engine for the container tests (docs/scaling-out/docker.md): Debian's docker.io, and
# debootstrap for the base image made here; installed where apt and root allow. Then the Compose
# v2 plugin Harbor's docker environment needs (deploy/docker/compose-plugin.sh). The tests
# start their own dockerd (tests/docker_engine.py) and skip, saying why, where none can run.
docker:
	@{ command -v dockerd && command -v debootstrap; } >/dev/null 2>&1 || { \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null; \
		else echo "docker.io / debootstrap missing (apt-get install docker.io debootstrap): the container tests will be skipped"; fi; }
	@sh deploy/docker/compose-plugin.sh

# The code location's image from uv.lock, on a base made here (debootstrap and this machine's
# Python; an engine must be running: DOCKER_HOST). Elsewhere: docker build --network host -t flashrsi-dagster .
image: env
	$(UV) run --locked python -m flashrsi_dagster.images

# The real Codex CLI for `type: codex-cli`: npm's @openai/codex, pinned (about 400 MB with its
# Linux binary), into .tools/codex where npm exists; without it, its tests are skipped.
codex:
	@if grep -qs '"version": "$(CODEX_VERSION)"' $(CODEX_PREFIX)/node_modules/@openai/codex/package.json; then :; \
	elif command -v npm >/dev/null 2>&1; then \
		npm install --prefix $(CODEX_PREFIX) --save-exact --no-audit --no-fund --loglevel=error \
			@openai/codex@$(CODEX_VERSION) >/dev/null; \
	else echo "npm is not installed: the Codex CLI (type codex-cli) is missing and its tests will be skipped"; fi

# The explorer's tree layout, charts and syntax highlighting, from npm at pinned versions, copied minified into its
# static folder. The copies are committed (a fresh clone and the wheel work without npm); this
# target remakes them, e.g. after a version bump here (tests/explorer/test_static.py checks them).
D3_HIERARCHY_VERSION := 3.1.2
UPLOT_VERSION := 1.6.32
HIGHLIGHT_VERSION := 11.11.1
VENDOR := flashrsi_dagster/explorer/static/vendor
vendor:
	rm -rf $(TOOLS)/explorer-npm
	npm install --prefix $(TOOLS)/explorer-npm --save-exact --no-audit --no-fund --loglevel=error \
		d3-hierarchy@$(D3_HIERARCHY_VERSION) uplot@$(UPLOT_VERSION) \
		@highlightjs/cdn-assets@$(HIGHLIGHT_VERSION) >/dev/null
	mkdir -p $(VENDOR)
	cp $(TOOLS)/explorer-npm/node_modules/d3-hierarchy/dist/d3-hierarchy.min.js $(VENDOR)/
	cp $(TOOLS)/explorer-npm/node_modules/uplot/dist/uPlot.iife.min.js $(VENDOR)/
	cp $(TOOLS)/explorer-npm/node_modules/uplot/dist/uPlot.min.css $(VENDOR)/
	cp $(TOOLS)/explorer-npm/node_modules/d3-hierarchy/LICENSE $(VENDOR)/d3-hierarchy.LICENSE
	cp $(TOOLS)/explorer-npm/node_modules/uplot/LICENSE $(VENDOR)/uPlot.LICENSE
	cp $(TOOLS)/explorer-npm/node_modules/@highlightjs/cdn-assets/highlight.min.js $(VENDOR)/
	cp $(TOOLS)/explorer-npm/node_modules/@highlightjs/cdn-assets/styles/github.min.css $(VENDOR)/highlight-github.min.css
	cp $(TOOLS)/explorer-npm/node_modules/@highlightjs/cdn-assets/LICENSE $(VENDOR)/highlight.LICENSE

lint: env
	$(UV) run --locked ruff check flashrsi_dagster tests bench

# Bytecode compiled up front (once; later syncs check it in seconds): where
# PYTHONDONTWRITEBYTECODE is set, every process — each run worker the UI starts — would
# otherwise compile all it imports again (~20 s for the code location on 2 cores).
env: $(UV) jail codex
	$(UV) sync --locked --quiet --all-extras --compile-bytecode

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

clean:
	rm -rf $(TOOLS) .venv .pytest_cache
