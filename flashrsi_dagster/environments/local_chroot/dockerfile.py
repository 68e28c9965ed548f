"""The subset of a task's Dockerfile that the local environment can honour, as a `Recipe`.

Terminal-Bench tasks describe their container with a Dockerfile. Without a Docker engine the
local environment replays it on a per-trial root built from the host's own tools, so it
reads the file here, once, and either turns every line into a step it can reproduce or refuses
the whole file with an error naming the file and line:

* `FROM` must name the host's own system (see `base_image`, which refuses the rest): the
  host's tools stand in for the image; a second `FROM`, i.e. a multi-stage build, is refused;
* `WORKDIR` and `VOLUME` create the folder; `WORKDIR` becomes the default working directory;
* `ENV` values reach the build and every later command, `ARG` defaults the build only;
* `COPY` and `ADD` copy from the task's `environment/` folder (`ADD` unpacks a local tar
  archive; `--chmod` is honoured); `RUN` runs inside the trial's root with the host's tools,
  in shell or exec form, with the `SHELL` in force;
* `USER root`, `LABEL`, `EXPOSE`, `CMD`, `STOPSIGNAL`, `MAINTAINER`, `HEALTHCHECK NONE` have
  no effect here;
* refused: `USER <anyone else>`, `ADD <url>`, `COPY --from` and other flags, `ENTRYPOINT`,
  `HEALTHCHECK`, `ONBUILD`, heredocs, `RUN --mount`/`--network`, a `.dockerignore`.

Variables (`$NAME`, `${NAME}`, `${NAME:-word}`, `${NAME:+word}`) are expanded the way Docker
does, outside single quotes, in every instruction except `RUN` (whose shell expands them). As
in Docker, the base image's own environment is in force from `FROM` on: every image the local
environment honours (see `base_image`) sets `PATH` to Debian's default, so
`ENV PATH="/root/.local/bin:$PATH"` keeps `/usr/bin`.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from flashrsi_dagster.environments.local_chroot.sandbox import DEFAULT_PATH

DEFAULT_SHELL = ("/bin/sh", "-c")
IMAGE_ENV = {"PATH": DEFAULT_PATH}
"""The environment a Debian-based image's config sets (what `$PATH` expands to after FROM)."""
IGNORED = {"LABEL", "EXPOSE", "CMD", "STOPSIGNAL", "MAINTAINER"}
REFUSED = {
    "ENTRYPOINT": "an entrypoint would have to run as the container's main process",
    "ONBUILD": "triggers only matter to images built FROM this one",
}
_VAR = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
_HEREDOC = re.compile(r"<<-?\s*[\"']?[A-Za-z_]")


class DockerfileError(ValueError):
    """A Dockerfile line the local environment cannot honour (or cannot parse)."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.reason = path, line, message


@dataclass(frozen=True)
class MakeDir:
    """Create `path` (WORKDIR, VOLUME)."""

    line: int
    path: str


@dataclass(frozen=True)
class Copy:
    """Copy build-context files to `dest`, as `COPY`/`ADD` would."""

    line: int
    sources: tuple[Path, ...]
    dest: str
    dest_is_dir: bool
    """True when `dest` names a folder to copy into (trailing `/`, several sources, or a
    folder source); otherwise a single file lands at `dest` unless `dest` is an existing
    folder in the root."""
    mode: int | None = None
    unpack_archives: bool = False


@dataclass(frozen=True)
class Run:
    """Run `argv` in `workdir` with `env` (the ENV and ARG values in force at this line)."""

    line: int
    argv: tuple[str, ...]
    workdir: str
    env: dict[str, str]


Step = MakeDir | Copy | Run


@dataclass
class Recipe:
    """What a Dockerfile asks of the root, in order, plus the state every command starts in."""

    path: Path
    base_image: str = ""
    base_image_line: int = 1
    steps: list[Step] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"


@dataclass
class _State:
    recipe: Recipe
    context: Path
    args: dict[str, str] = field(default_factory=dict)
    shell: tuple[str, ...] = DEFAULT_SHELL
    from_seen: bool = False

    @property
    def variables(self) -> dict[str, str]:
        image = IMAGE_ENV if self.from_seen else {}
        return {**image, **self.args, **self.recipe.env}


def parse_dockerfile(path: Path, context: Path | None = None) -> Recipe:
    """Read `path` into a Recipe; `context` (default: its folder) holds COPY/ADD sources."""
    state = _State(Recipe(path=path), (context or path.parent).resolve())
    ignore = state.context / ".dockerignore"
    if ignore.exists():
        raise DockerfileError(ignore, 1, ".dockerignore is not supported: COPY would copy more")
    lines = _logical_lines(path)
    for line, keyword, rest in lines:
        _apply(state, line, keyword, rest)
    if not state.from_seen:
        raise DockerfileError(path, lines[0][0] if lines else 1, "no FROM instruction")
    return state.recipe


def _logical_lines(path: Path) -> list[tuple[int, str, str]]:
    """(first line number, KEYWORD, rest) per instruction: continuations joined, comments
    and blank lines dropped, parser directives checked."""
    out: list[tuple[int, str, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        stripped = raw.strip()
        if not pending and not out and stripped.startswith("#"):
            _check_directive(path, number, stripped)
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        # As Docker does: drop the backslash and newline, keep the spacing around them.
        text = raw.rstrip() if pending else stripped
        if text.endswith("\\"):
            pending.append(text[:-1])
            continue
        text = "".join([*pending, text]).strip()
        pending = []
        keyword, _, rest = text.partition(" ")
        out.append((start, keyword.upper(), rest.strip()))
    if pending:
        raise DockerfileError(path, start, "the file ends inside a line continuation")
    return out


def _check_directive(path: Path, line: int, comment: str) -> None:
    name, sep, value = comment[1:].partition("=")
    if sep and name.strip().lower() == "escape" and value.strip() != "\\":
        raise DockerfileError(path, line, "only the default escape character '\\' is supported")


def _apply(state: _State, line: int, keyword: str, rest: str) -> None:
    path = state.recipe.path
    if keyword in REFUSED:
        raise DockerfileError(path, line, f"{keyword} is not supported: {REFUSED[keyword]}")
    if keyword != "FROM" and not state.from_seen and keyword != "ARG":
        raise DockerfileError(path, line, f"{keyword} before FROM")
    if keyword in {"RUN", "COPY", "ADD"} and _HEREDOC.match(_strip_flags(rest)[1]):
        raise DockerfileError(path, line, f"heredocs in {keyword} are not supported")
    handler = _HANDLERS.get(keyword)
    if handler is None and keyword not in IGNORED:
        raise DockerfileError(path, line, f"unknown or unsupported instruction {keyword}")
    if handler is not None:
        handler(state, line, rest)


def _from(state: _State, line: int, rest: str) -> None:
    if state.from_seen:
        raise DockerfileError(
            state.recipe.path, line, "multi-stage builds (a second FROM) are not supported"
        )
    state.from_seen = True
    _, image = _strip_flags(rest)
    state.recipe.base_image_line = line
    state.recipe.base_image = _expand(image.split()[0] if image else "", state.args)


def _arg(state: _State, line: int, rest: str) -> None:
    for word in _words(state, line, rest):
        name, sep, default = word.partition("=")
        if not _is_name(name):
            raise DockerfileError(state.recipe.path, line, f"bad ARG name {name!r}")
        state.args.setdefault(name, default if sep else "")


def _env(state: _State, line: int, rest: str) -> None:
    first, _, remainder = rest.partition(" ")
    if "=" not in first:  # the legacy `ENV NAME value with spaces` form
        pairs = [(first, _expand(remainder.strip(), state.variables))]
    else:
        pairs = [word.partition("=")[::2] for word in _words(state, line, rest)]
    for name, value in pairs:
        if not _is_name(name):
            raise DockerfileError(state.recipe.path, line, f"bad ENV name {name!r}")
        state.recipe.env[name] = value


def _workdir(state: _State, line: int, rest: str) -> None:
    words = _words(state, line, rest)
    if len(words) != 1:
        raise DockerfileError(state.recipe.path, line, "WORKDIR takes exactly one path")
    state.recipe.workdir = _absolute(state, words[0])
    state.recipe.steps.append(MakeDir(line, state.recipe.workdir))


def _volume(state: _State, line: int, rest: str) -> None:
    paths = _json_list(rest) or _words(state, line, rest)
    for volume in paths:
        state.recipe.steps.append(MakeDir(line, _absolute(state, volume)))


def _user(state: _State, line: int, rest: str) -> None:
    words = _words(state, line, rest)
    if words and words[0] in {"root", "0", "root:root", "0:0"}:
        return
    raise DockerfileError(
        state.recipe.path, line, f"USER {rest} is not supported: every command runs as root"
    )


def _healthcheck(state: _State, line: int, rest: str) -> None:
    if rest.strip().upper() != "NONE":
        raise DockerfileError(
            state.recipe.path,
            line,
            "HEALTHCHECK is not supported: declare [environment.healthcheck] in task.toml",
        )


def _shell(state: _State, line: int, rest: str) -> None:
    argv = _json_list(rest)
    if not argv:
        raise DockerfileError(state.recipe.path, line, "SHELL needs a JSON array")
    state.shell = tuple(argv)


def _run(state: _State, line: int, rest: str) -> None:
    flags, command = _strip_flags(rest)
    if flags:
        raise DockerfileError(state.recipe.path, line, f"RUN {flags[0]} is not supported")
    argv = _json_list(command)
    run_argv = tuple(argv) if argv is not None else (*state.shell, command)
    recipe = state.recipe
    recipe.steps.append(Run(line, run_argv, recipe.workdir, dict(state.variables)))


def _copy(state: _State, line: int, rest: str, *, add: bool = False) -> None:
    path = state.recipe.path
    flags, body = _strip_flags(rest)
    mode = _copy_mode(path, line, flags)
    words = _json_list(body) or _words(state, line, body)
    if len(words) < 2:
        raise DockerfileError(path, line, "COPY/ADD needs at least one source and a destination")
    *sources, dest = words
    if add and any("://" in s or s.startswith("git@") for s in sources):
        raise DockerfileError(path, line, "ADD from a URL is not supported (no network)")
    paths = [p for source in sources for p in _context_paths(state, line, source)]
    dest_is_dir = dest.endswith("/") or len(paths) > 1 or any(p.is_dir() for p in paths)
    if len(paths) > 1 and not dest.endswith("/"):
        raise DockerfileError(path, line, "with several sources the destination must end in /")
    copy = Copy(line, tuple(paths), _absolute(state, dest), dest_is_dir, mode, unpack_archives=add)
    state.recipe.steps.append(copy)


def _copy_mode(path: Path, line: int, flags: list[str]) -> int | None:
    mode = None
    for flag in flags:
        name, _, value = flag.partition("=")
        if name == "--chmod" and re.fullmatch(r"[0-7]{3,4}", value):
            mode = int(value, 8)
        elif name == "--chown" and value in {"root", "0", "root:root", "0:0"}:
            continue
        elif name != "--link":
            raise DockerfileError(path, line, f"COPY/ADD {flag} is not supported")
    return mode


def _context_paths(state: _State, line: int, source: str) -> list[Path]:
    """The build-context files a COPY source names (after globbing), refusing escapes."""
    path = state.recipe.path
    relative = source.lstrip("/") or "."
    if any(ch in relative for ch in "*?["):
        matches = sorted(
            p
            for p in state.context.rglob("*")
            if _glob_match(p.relative_to(state.context).as_posix(), relative)
        )
    else:
        matches = [state.context / relative]
    resolved = [m.resolve() for m in matches if m.exists()]
    if not resolved:
        raise DockerfileError(
            path, line, f"COPY/ADD source {source!r} not found in {state.context}"
        )
    for candidate in resolved:
        if not candidate.is_relative_to(state.context):
            raise DockerfileError(path, line, f"COPY/ADD source {source!r} is outside the context")
    return resolved


def _glob_match(relative: str, pattern: str) -> bool:
    """Docker's matching: wildcards never cross a `/`."""
    names, globs = relative.split("/"), pattern.rstrip("/").split("/")
    return len(names) == len(globs) and all(map(fnmatch.fnmatchcase, names, globs))


_HANDLERS = {
    "FROM": _from,
    "ARG": _arg,
    "ENV": _env,
    "WORKDIR": _workdir,
    "VOLUME": _volume,
    "USER": _user,
    "HEALTHCHECK": _healthcheck,
    "SHELL": _shell,
    "RUN": _run,
    "COPY": _copy,
    "ADD": lambda state, line, rest: _copy(state, line, rest, add=True),
}


# -- words, flags and variables ------------------------------------------------------------


def _strip_flags(rest: str) -> tuple[list[str], str]:
    """Leading `--name[=value]` flags, and the remaining text."""
    flags: list[str] = []
    text = rest.strip()
    while text.startswith("--"):
        flag, _, text = text.partition(" ")
        flags.append(flag)
        text = text.strip()
    return flags, text


def _json_list(text: str) -> list[str] | None:
    if not text.strip().startswith("["):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _words(state: _State, line: int, text: str) -> list[str]:
    """Split `text` into words as Docker does: quotes group, `\\` escapes, and variables
    expand outside single quotes."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    in_word = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "'" and i + 1 < len(text):
            current.append(text[i + 1])
            i, in_word = i + 2, True
            continue
        if quote and ch == quote:
            quote = ""
        elif not quote and ch in "'\"":
            quote, in_word = ch, True
        elif ch == "$" and quote != "'":
            match = _VAR.match(text, i)
            if match:
                current.append(_substitute(match, state.variables))
                i, in_word = match.end(), True
                continue
            current.append(ch)
        elif ch.isspace() and not quote:
            if in_word:
                words.append("".join(current))
            current, in_word = [], False
        else:
            current.append(ch)
            in_word = True
        i += 1
    if quote:
        raise DockerfileError(state.recipe.path, line, "unterminated quote")
    if in_word:
        words.append("".join(current))
    return words


def _expand(text: str, variables: dict[str, str]) -> str:
    return _VAR.sub(lambda match: _substitute(match, variables), text)


def _substitute(match: re.Match[str], variables: dict[str, str]) -> str:
    name = match.group("braced") or match.group("bare")
    value = variables.get(name, "")
    if match.group("op") == "-":
        return value or match.group("word")
    if match.group("op") == "+":
        return match.group("word") if value else ""
    return value


def _is_name(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None


def _absolute(state: _State, path: str) -> str:
    """`path` made absolute against the current WORKDIR, normalised, keeping a final `/`."""
    joined = PurePosixPath(state.recipe.workdir, path)
    parts: list[str] = []
    for part in joined.parts[1:]:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return "/" + "/".join(parts) + ("/" if path.endswith("/") and parts else "")
