"""The Codex adapter (`type: codex`): the snapshot's own Python core, never a native CLI."""
