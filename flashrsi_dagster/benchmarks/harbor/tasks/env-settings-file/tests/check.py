import sys

EXPECTED = "[app]\nenv = staging\nport = 80801\n"
try:
    with open("/app/settings.ini") as handle:
        text = handle.read()
except OSError as exc:
    sys.exit(f"cannot read /app/settings.ini: {exc}")
if text.strip().splitlines() != EXPECTED.strip().splitlines():
    sys.exit(f"expected {EXPECTED!r}, got {text!r}")
print("settings.ini is right")
