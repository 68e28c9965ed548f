"""MiniAgent: the built-in harness (`harness/`), its process entry and its adapter."""
