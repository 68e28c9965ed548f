"""The Dockerfile subset: what becomes a build step, and what is refused with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashrsi_dagster.environments.local_chroot.dockerfile import (
    Copy,
    DockerfileError,
    MakeDir,
    Run,
    parse_dockerfile,
)


def dockerfile(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Path:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return path


def test_honoured_instructions_become_steps_in_order(tmp_path: Path):
    path = dockerfile(
        tmp_path,
        "# syntax=docker/dockerfile:1\n"
        "ARG BASE=ubuntu:24.04\n"
        "FROM $BASE AS runtime\n"
        "ARG PORT=80\n"
        'ENV APP=/srv/app MODE="fast mode" \\\n'
        "    URL=http://localhost:${PORT:-8080}/x\n"
        "ENV LEGACY some value\n"
        "WORKDIR $APP\n"
        "WORKDIR sub\n"
        "COPY data.txt ./\n"
        "COPY --chmod=600 conf/ /etc-like/\n"
        'RUN echo "$MODE" > out.txt\n'
        'SHELL ["/bin/bash", "-c"]\n'
        'RUN ["python3", "-c", "print(1)"]\n'
        "RUN set -o pipefail && true\n"
        'LABEL a=b\nEXPOSE 80\nCMD ["sleep", "1"]\nUSER root\n',
        {"data.txt": "x", "conf/a.ini": "[a]"},
    )

    recipe = parse_dockerfile(path)

    assert recipe.base_image == "ubuntu:24.04"
    assert recipe.env == {
        "APP": "/srv/app",
        "MODE": "fast mode",
        "URL": "http://localhost:80/x",
        "LEGACY": "some value",
    }
    assert recipe.workdir == "/srv/app/sub"
    kinds = [type(step) for step in recipe.steps]
    assert kinds == [MakeDir, MakeDir, Copy, Copy, Run, Run, Run]
    copy_file, copy_dir = recipe.steps[2], recipe.steps[3]
    assert (copy_file.dest, copy_file.dest_is_dir) == ("/srv/app/sub/", True)
    assert copy_file.sources == ((tmp_path / "data.txt").resolve(),)
    assert (copy_dir.dest, copy_dir.mode) == ("/etc-like/", 0o600)
    run_shell, run_exec, run_bash = recipe.steps[4:]
    assert run_shell.argv == ("/bin/sh", "-c", 'echo "$MODE" > out.txt')
    assert run_shell.env["PORT"] == "80" and run_shell.workdir == "/srv/app/sub"
    assert run_exec.argv == ("python3", "-c", "print(1)")
    assert run_bash.argv == ("/bin/bash", "-c", "set -o pipefail && true")


def test_single_quotes_stop_expansion_and_globs_stay_in_one_folder(tmp_path: Path):
    path = dockerfile(
        tmp_path,
        "FROM scratch\nENV A=1\nENV A=2 B='$A' C=\"$A\"\nCOPY src/*.py /app/\n",
        {"src/a.py": "", "src/b.py": "", "src/deep/c.py": "", "src/d.txt": ""},
    )

    recipe = parse_dockerfile(path)

    # As in Docker, an ENV line sees the values from before it, not its own.
    assert recipe.env == {"A": "2", "B": "$A", "C": "1"}
    assert [p.name for p in recipe.steps[0].sources] == ["a.py", "b.py"]


def test_path_expands_to_the_images_own_so_prepending_keeps_usr_bin(tmp_path: Path):
    path = dockerfile(
        tmp_path,
        'FROM python:3.12-slim\nENV PATH="/root/.local/bin:$PATH"\n'
        "ARG TOOLS=/opt/tools/bin:${PATH}\nENV PATH=$TOOLS\nRUN echo ok\n",
    )

    recipe = parse_dockerfile(path)

    image_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert recipe.env["PATH"] == f"/opt/tools/bin:/root/.local/bin:{image_path}"
    assert recipe.steps[-1].env["PATH"] == recipe.env["PATH"]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("FROM a\nFROM b\n", 2, "multi-stage builds"),
        ("FROM a\nUSER nobody\n", 2, "USER nobody is not supported"),
        ("FROM a\nADD https://example.com/x.tgz /x\n", 2, "ADD from a URL"),
        ("FROM a\nCOPY --from=build /x /y\n", 2, "COPY/ADD --from=build is not supported"),
        ('FROM a\nENTRYPOINT ["x"]\n', 2, "ENTRYPOINT is not supported"),
        ("FROM a\nHEALTHCHECK CMD true\n", 2, "HEALTHCHECK is not supported"),
        ("FROM a\nRUN --mount=type=cache,target=/c true\n", 2, "RUN --mount"),
        ("FROM a\nRUN <<EOF\necho\nEOF\n", 2, "heredocs"),
        ("FROM a\nCOPY missing.txt /x\n", 2, "not found"),
        ("FROM a\nCOPY ../outside /x\n", 2, "outside the context"),
        ("FROM a\nCOPY a.txt b.txt /dir\n", 2, "must end in /"),
        ("RUN true\n", 1, "RUN before FROM"),
        ("FROM a\nFROBNICATE\n", 2, "unknown or unsupported instruction FROBNICATE"),
        ("# escape=`\nFROM a\n", 1, "escape character"),
        ("ARG X=1\n", 1, "no FROM"),
    ],
)
def test_unsupported_lines_are_refused_with_file_and_line(
    tmp_path: Path, text: str, line: int, reason: str
):
    (tmp_path / "ctx").mkdir()
    (tmp_path / "outside").write_text("secret")
    path = dockerfile(tmp_path / "ctx", text, {"a.txt": "", "b.txt": ""})

    with pytest.raises(DockerfileError) as caught:
        parse_dockerfile(path)

    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert reason in str(caught.value)


def test_a_dockerignore_is_refused(tmp_path: Path):
    path = dockerfile(tmp_path, "FROM a\n", {".dockerignore": "*.log\n"})

    with pytest.raises(DockerfileError, match=r"\.dockerignore:1: .*not supported"):
        parse_dockerfile(path)
