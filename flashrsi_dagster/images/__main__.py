"""`python -m flashrsi_dagster.images [--tag T] [--base IMAGE]`: the code location's image.
Without `--base`, on a base made here from Debian's packages and this machine's Python
(`base.py`: root and debootstrap; made once per engine)."""

from __future__ import annotations

import argparse
import sys

from flashrsi_dagster.images.base import ensure_base_image
from flashrsi_dagster.images.build import DEFAULT_IMAGE, build_image
from flashrsi_dagster.images.engine import ImageError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flashrsi_dagster.images", description=__doc__)
    parser.add_argument("--tag", default=DEFAULT_IMAGE, help=f"default: {DEFAULT_IMAGE}")
    parser.add_argument("--base", help="an image with python3.12 (default: made here)")
    options = parser.parse_args(argv)
    try:
        base = options.base or ensure_base_image()
        print(f"building {options.tag} on {base} ...", flush=True)
        print(build_image(options.tag, base=base))
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
