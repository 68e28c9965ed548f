"""`python -m flashrsi_dagster.offline_model`: the simulator in the foreground."""

from flashrsi_dagster.offline_model.cli import main

# Guarded: tools that import every module (the architecture test does) must not start a server.
if __name__ == "__main__":
    raise SystemExit(main())
