"""Where agents and tasks run: the jail around every agent process (`jail`, `joining`), the
read-only runtime it shows (`runtime`), each run's confinement behind the model gateway
(`confinement`), the command bridge from a jail into a task's environment (`bridge`), and the
task environments themselves: `local_chroot/`, a Harbor environment for machines without a
container engine (Docker and remote sandboxes would sit beside it)."""
