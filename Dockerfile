# The code location's image: FlashRSI and the dependencies pinned in uv.lock, for Dagster's
# DockerRunLauncher and docker_executor (docs/scaling-out/docker.md).
#
#   anywhere with a registry:  docker build --network host -t flashrsi-dagster .
#   no registry (this machine): python -m flashrsi_dagster.images   (a debootstrap BASE with
#                               the host's Python 3.12 at the same path; see images/base.py)
#
# BASE: any image with python3.12 on PATH (and, where they are missing, apt for git and
# bubblewrap). PyPI must be reachable from the build (--network host here).
ARG BASE=python:3.12-slim-bookworm
FROM ${BASE}

ARG UV_VERSION=0.13.9
RUN if ! command -v git >/dev/null || ! command -v bwrap >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends git bubblewrap ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3.12 -m pip install --no-cache-dir --disable-pip-version-check --prefix /opt/uv \
        uv==${UV_VERSION}

ENV UV_PROJECT_ENVIRONMENT=/opt/flashrsi/venv \
    UV_PYTHON=python3.12 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_NO_CACHE=1 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PATH=/opt/flashrsi/venv/bin:/opt/uv/bin:$PATH
WORKDIR /opt/flashrsi/src

# The locked dependencies first: a layer that changes only with uv.lock and pyproject.toml
COPY pyproject.toml uv.lock ./
RUN uv sync --locked --no-dev --no-install-project

COPY README.md ./
COPY flashrsi_dagster ./flashrsi_dagster
RUN uv sync --locked --no-dev --no-editable && rm -rf /opt/flashrsi/src/flashrsi_dagster

CMD ["dagster", "--help"]
