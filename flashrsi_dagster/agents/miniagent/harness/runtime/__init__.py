"""MiniAgent's runtime: the agent loop, the model client and log redaction.

This folder is part of the evolvable harness: it imports nothing from the framework."""
