"""MiniAgent's runtime: the agent loop, the model client, log redaction and activation beacons.

This folder is part of the evolvable harness: it imports nothing from the framework."""
