"""The real Codex CLI (`@openai/codex`, pinned in `install.py`), one `codex exec` per run.

`adapter.py` is the `Agent`; `install.py` finds the CLI the set-up installed; `home.py` builds
the run's private `CODEX_HOME` (the snapshot's resources, and a `config.toml` whose provider,
model, sandbox and network keys are the framework's); `process.py` runs the CLI in the jail
under the role's timeout; `events.py` turns its `--json` event stream into trajectory data.
"""
