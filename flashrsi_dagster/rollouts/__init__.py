"""Rollouts: running one agent and snapshot over tasks, and the scores they add up to."""
