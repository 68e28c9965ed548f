#!/bin/bash
set -euo pipefail
mkdir -p "$RELEASE_DIR"
python3 - <<'PY'
import hashlib, json, os, tarfile
version, out = os.environ["RELEASE_VERSION"], os.environ["RELEASE_DIR"]
top, files = f"tool-{version}", {}
with tarfile.open(f"{out}/tool-{version}.tar.xz", "w:xz") as archive:
    for folder, dirs, names in os.walk("/app/project"):
        dirs[:] = sorted(d for d in dirs if d != ".cache")
        for name in sorted(names):
            path = os.path.join(folder, name)
            inside = f"{top}/{os.path.relpath(path, '/app/project')}"
            archive.add(path, inside)
            with open(path, "rb") as handle:
                files[inside] = hashlib.sha256(handle.read()).hexdigest()
with open(f"{out}/manifest.json", "w") as handle:
    json.dump({"version": version, "files": files}, handle, indent=2)
PY
