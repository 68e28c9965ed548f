import subprocess
import sys


def git(*args):
    result = subprocess.run(["git", "-C", "/app/repo", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


subjects = git("log", "--format=%s", "main").splitlines()
original = ["Document the service", "Turn on debug mode", "Add server config"]
if subjects[1:] != original or len(subjects) != 4:
    sys.exit(f"expected one new commit on top of {original}, got {subjects}")
if git("rev-parse", "--abbrev-ref", "HEAD").strip() != "main":
    sys.exit("HEAD is not on main")
config = git("show", "main:config.ini")
if config != "[server]\nport = 8080\ndebug = false\n":
    sys.exit(f"config.ini was not restored: {config!r}")
if "Run it with ./serve." not in git("show", "main:README.md"):
    sys.exit("the later commit's README.md is gone")
if git("status", "--porcelain").strip():
    sys.exit("the working tree is not clean")
print("the bad commit is reverted")
