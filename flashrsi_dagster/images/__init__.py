"""The code location's container image, for Dagster's Docker run launcher and executor
(docs/scaling-out/docker.md): `build.py` builds it from the project's lock on any base with Python
3.12; `base.py` makes a base where no registry is reachable, from Debian's packages and this
machine's own interpreter. `python -m flashrsi_dagster.images` does both."""
