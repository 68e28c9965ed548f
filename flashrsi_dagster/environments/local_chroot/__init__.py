"""The local chroot: a task's container without a container engine, as a Harbor environment.

`environment` holds `LocalChrootEnvironment` (Harbor selects it by import path); behind it,
with no Harbor in them except `transfer`'s tar filter: `dockerfile` (the subset of a
Dockerfile it honours, as a `Recipe`), `build` (replaying the recipe on a fresh root),
`rootfs` (the root's folders and the host folders it shares), `sandbox` (namespaces, chroot,
process groups) and `transfer` (files into and out of the root).
"""
