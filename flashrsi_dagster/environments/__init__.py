"""Where agents and tasks run: the jail around every agent process (`jail`, `joining`), the
read-only runtime it shows (`runtime`), and each run's confinement behind the model gateway
(`confinement`)."""
