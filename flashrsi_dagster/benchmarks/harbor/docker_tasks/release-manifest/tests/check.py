import hashlib
import json
import pathlib
import sys
import tarfile

out = pathlib.Path("/srv/release/v2.4.1")
expected = {
    f"tool-2.4.1/{p.relative_to('/app/project')}": hashlib.sha256(p.read_bytes()).hexdigest()
    for p in pathlib.Path("/app/project").rglob("*")
    if p.is_file() and ".cache" not in p.parts
}
try:
    with tarfile.open(out / "tool-2.4.1.tar.xz", "r:xz") as archive:
        files = [member for member in archive.getmembers() if member.isfile()]
        members = {member.name: archive.extractfile(member).read() for member in files}
    manifest = json.loads((out / "manifest.json").read_text())
except (OSError, tarfile.TarError, ValueError) as exc:
    sys.exit(f"release missing or unreadable: {exc}")
got = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
if got != expected:
    sys.exit(f"archive holds {sorted(got)}, expected {sorted(expected)}")
if manifest != {"version": "2.4.1", "files": expected}:
    sys.exit(f"manifest.json: {manifest}")
print("release ok")
