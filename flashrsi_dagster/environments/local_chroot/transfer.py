"""Host-side halves of file transfers into and out of the root.

Files never cross by host-side path: a symlink the agent made in its root (say
`/logs/agent -> /`) would resolve against the *host's* `/`. Uploads are packed into a tar on
the host and unpacked by `tar` running inside the sandbox; downloads are packed inside and
unpacked here through a filter that skips anything pointing outside the target folder.
"""

from __future__ import annotations

import logging
import tarfile
from pathlib import Path

from harbor.environments.base import transfer_tar_filter


def pack(tar_path: Path, entries: list[tuple[Path, str]], mode: int | None = None) -> None:
    """Write an uncompressed tar holding each host `source` under `name`: a folder's
    contents go below `name` (`name` "." for the contents themselves), a file becomes
    `name`. Owners are reset to root, as COPY does; `mode` overrides every permission."""

    def reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        if mode is not None and not info.issym():
            info.mode = mode
        return info

    with tarfile.open(tar_path, "w") as tar:
        for source, name in entries:
            if source.is_dir():
                for child in sorted(source.rglob("*")):
                    arcname = f"{name}/{child.relative_to(source).as_posix()}"
                    tar.add(child, arcname=arcname, recursive=False, filter=reset)
            else:
                tar.add(source, arcname=name, recursive=False, filter=reset)


def repack_archive(archive: Path, tar_path: Path) -> None:
    """An archive ADD would unpack (any compression tarfile knows), rewritten uncompressed
    with only members that stay inside their destination."""
    with tarfile.open(archive) as source, tarfile.open(tar_path, "w") as target:
        for member in source.getmembers():
            try:
                safe = tarfile.data_filter(member, "/destination")
            except tarfile.FilterError as exc:
                raise ValueError(f"{archive}: unsafe member {member.name!r}: {exc}") from exc
            # The filter leaves owners unset ("do not restore"); ADD makes them root.
            safe = safe.replace(uid=0, gid=0, uname="root", gname="root", deep=False)
            data = source.extractfile(member) if member.isfile() else None
            target.addfile(safe, data)


def unpack(tar_path: Path, target: Path, logger: logging.Logger) -> None:
    """Unpack a tar made inside the sandbox into host folder `target`. Members that would
    land outside it, links out of it and device files are skipped (and logged) rather than
    failing the whole transfer."""
    target.mkdir(parents=True, exist_ok=True)

    def safe(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        try:
            return transfer_tar_filter(member, dest)
        except tarfile.FilterError as exc:
            logger.warning("skipped %s while downloading: %s", member.name, exc)
            return None

    with tarfile.open(tar_path) as tar:
        tar.extractall(target, filter=safe)
