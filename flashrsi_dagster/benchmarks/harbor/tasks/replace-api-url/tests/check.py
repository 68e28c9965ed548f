import pathlib
import sys

OLD = "http://old-api.internal/v1"
NEW = "https://api.example.com/v2"
# file -> (occurrences of NEW, occurrences of OLD-not-followed-by-a-digit) expected after the edit
EXPECTED = {
    "client.py": (1, 0),
    "jobs/sync.py": (2, 0),
    "settings.py": (1, 0),
    "vendor/legacy.py": (0, 1),
    "README.md": (0, 1),
    "config.txt": (0, 1),
}
src = pathlib.Path("/app/src")
for name, (new_count, old_count) in EXPECTED.items():
    text = (src / name).read_text()
    old = text.count(OLD) - text.count(OLD + "0")
    if (text.count(NEW), old) != (new_count, old_count):
        sys.exit(
            f"{name}: {text.count(NEW)} new and {old} old URLs, expected {new_count}/{old_count}"
        )
sync = (src / "jobs/sync.py").read_text()
if 'FALLBACK = "http://old-api.internal/v10"' not in sync:
    sys.exit("jobs/sync.py: the /v10 URL must not change")
print("URLs replaced")
