import sys
import tarfile

EXPECTED = {
    "release/app.py": 'print("release")\n',
    "release/config.yaml": "mode: production\n",
    "release/lib/util.py": "def helper():\n    return 42\n",
    "release/logs/keep.txt": "kept\n",
    "release/notes.log.txt": "not a .log file, kept\n",
}


def read_archive(path):
    """{name: contents} of the archive's files, and the names of all its entries."""
    with tarfile.open(path, "r:gz") as archive:
        members = archive.getmembers()
        files = {
            m.name.removeprefix("./"): archive.extractfile(m).read().decode()
            for m in members
            if m.isfile()
        }
    return files, [m.name.removeprefix("./") for m in members]


try:
    files, names = read_archive("/app/release.tar.gz")
except (OSError, tarfile.TarError, UnicodeDecodeError) as exc:
    sys.exit(f"cannot read /app/release.tar.gz as a gzip tar: {exc}")
outside = [name for name in names if name.split("/")[0] != "release"]
if outside:
    sys.exit(f"entries outside release/: {outside}")
if files != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {files}")
print("release.tar.gz is right")
