"""The contamination check against a declared grammar of transformations: a text -> label
table of the built-in corpus, written through every single transform of each layer and every
pair of layers, must be caught; a case the check cannot catch by a content search is listed in
`_limit`, with the reason docs/host-duties.md gives, and marked xfail (strict: a limit that
starts being caught fails until it is taken off the list).

A case is `key -> container -> compression -> encoding -> layout`: how each row's key is
written (the text in another case, a digest of it), the table's serialisation, a stream it is
compressed into, the encoding the bytes are written in, and how the file is laid out. A single
changes one layer from the default (`text`, `json`, none, none, one file); a pair changes two.
The search runs as `ContentCheck.judge` runs it (`scan` then `judge`), against an empty seed.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import codecs
import csv
import gzip
import hashlib
import io
import json
import lzma
import marshal
import pickle
import quopri
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from itertools import combinations, product
from urllib.parse import quote_from_bytes

import pytest
import yaml

from flashrsi_dagster.benchmarks.text_classification import TextClassification
from flashrsi_dagster.contamination import ContentCheck
from flashrsi_dagster.contamination.detector import Scan, judge, scan

BENCHMARK = TextClassification()
TASKS = BENCHMARK.tasks()
ROWS = TASKS[:12]
"""Twelve rows: more than the `input` and `fragments` rules need, small enough that the
matrix of several hundred cases stays at a minute or two on a loaded machine."""


def _text(task) -> str:
    return BENCHMARK.secrets(task)[0].text


def _lines(text: str, width: int = 20) -> str:
    return "\n".join(text[at : at + width] for at in range(0, len(text), width))


# -- the layers ------------------------------------------------------------------------------

TEXT_FORMS: dict[str, Callable[[str], str]] = {
    "text": lambda t: t,
    "upper": str.upper,
    "lower": str.lower,
    "whitespace": lambda t: "  \t".join(t.split()),
    "squeezed": lambda t: "".join(t.split()),
    "lines": _lines,
}


def _digest(name: str, form: str) -> Callable[[str], object]:
    def key(text: str):
        h = hashlib.new(name, text.encode())
        raw = h.digest(32) if name.startswith("shake") else h.digest()
        return {
            "hex": raw.hex(),
            "HEX": raw.hex().upper(),
            "b64": base64.b64encode(raw).decode(),
            "int": str(int.from_bytes(raw, "big")),
            "raw": raw,
        }[form]

    return key


DIGEST_FORMS = ("hex", "HEX", "b64", "int", "raw")
KEYS: dict[str, Callable[[str], object]] = dict(TEXT_FORMS)
KEYS |= {
    f"{name}:{form}": _digest(name, form)
    for name in sorted(hashlib.algorithms_guaranteed)
    for form in DIGEST_FORMS
}


def _csv(table: dict) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(table.items())
    return out.getvalue().encode()


def _json(table: dict) -> bytes:
    return json.dumps({k if isinstance(k, str) else k.hex(): v for k, v in table.items()}).encode()


CONTAINERS: dict[str, Callable[[dict], bytes]] = {
    "json": _json,
    "yaml": lambda t: yaml.safe_dump(t, allow_unicode=True).encode(),
    "pickle": lambda t: pickle.dumps(t),
    "marshal": lambda t: marshal.dumps(t),
    "python": lambda t: f"TABLE = {t!r}\n".encode(),
    "csv": _csv,
}


def _zip(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("table", data)
    return out.getvalue()


def _tar(mode: str) -> Callable[[bytes], bytes]:
    def pack(data: bytes) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode=mode) as archive:
            info = tarfile.TarInfo("table")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        return out.getvalue()

    return pack


def _deflate(data: bytes) -> bytes:
    engine = zlib.compressobj(wbits=-15)
    return engine.compress(data) + engine.flush()


COMPRESSIONS: dict[str, Callable[[bytes], bytes]] = {
    "none": lambda d: d,
    "gzip": gzip.compress,
    "zlib": zlib.compress,
    "deflate": _deflate,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE),
    "zip": _zip,
    "tar": _tar("w"),
    "tar.gz": _tar("w:gz"),
    "tar.bz2": _tar("w:bz2"),
    "tar.xz": _tar("w:xz"),
}


def _latin(data: bytes) -> str:
    return data.decode("latin-1")


ENCODINGS: dict[str, Callable[[bytes], bytes]] = {
    "none": lambda d: d,
    "base64": base64.b64encode,
    "base64-urlsafe": base64.urlsafe_b64encode,
    "base64-wrapped": base64.encodebytes,
    "base32": base64.b32encode,
    "base85": base64.b85encode,
    "a85": base64.a85encode,
    "hex": lambda d: d.hex().encode(),
    "HEX": lambda d: d.hex().upper().encode(),
    "uu": lambda d: codecs.encode(d, "uu"),
    "quoted-printable": quopri.encodestring,
    "url": lambda d: quote_from_bytes(d, safe="").encode(),
    "html": lambda d: "".join(f"&#x{c:x};" for c in d).encode(),
    "backslash-x": lambda d: "".join(f"\\x{c:02x}" for c in d).encode(),
    "unicode-escape": lambda d: "".join(f"\\u{c:04x}" for c in d).encode(),
    "json-string": lambda d: json.dumps(_latin(d)).encode(),
    "bytes-literal": lambda d: repr(d).encode(),
    "octal": lambda d: "".join(f"\\{c:03o}" for c in d).encode(),
    "binascii-b2a_hex": binascii.b2a_hex,
}

LAYOUTS = ("one file", "reversed", "split across files")

DEFAULTS = {"key": "text", "container": "json", "compression": "none", "encoding": "none"}
DEFAULTS |= {"layout": "one file"}
LAYERS = {
    "key": KEYS,
    "container": CONTAINERS,
    "compression": COMPRESSIONS,
    "encoding": ENCODINGS,
    "layout": dict.fromkeys(LAYOUTS),
}


# -- what cannot be caught, and why (docs/host-duties.md, "What it cannot see") ---------------


HEADERLESS_ESCAPED = (
    "a stream without a magic (raw deflate, legacy lzma) written in an escape, or in base85 "
    "or Ascii85: read only from a base64, base32, hex or code-list blob"
)
REVERSED_DIGEST = "a digest written reversed (digests are searched in the plain readings)"
REVERSED_ENCODED = "two encodings composed other than nesting (the encoded data reversed)"
SHAKE_LENGTH = "a shake digest of another length than 64 bytes, in base64 or as an integer"
QP_NUMBER = "a digest's integer cut by a quoted-printable soft line break"
ESCAPES = ("url", "html", "quoted-printable", "unicode-escape", "json-string", "bytes-literal")
ESCAPES += ("octal", "base85", "a85")


def _limit(case: dict) -> str | None:
    """Why a case is not caught, when it is a documented limit; `n/a` when it is no case."""
    key, encoding, compression = case["key"], case["encoding"], case["compression"]
    if key.endswith(":raw") and case["container"] not in ("pickle", "marshal", "python"):
        return "n/a"  # raw digest bytes as keys: only a container that keeps bytes
    if case["layout"] == "reversed" and ":" in key:
        return REVERSED_DIGEST
    if case["layout"] == "reversed" and _name(case) in REVERSED_CAUGHT:
        return None
    if case["layout"] == "reversed" and (encoding != "none" or compression != "none"):
        return REVERSED_ENCODED
    if compression in ("deflate", "lzma") and encoding in ESCAPES:
        return HEADERLESS_ESCAPED
    if key.startswith("shake") and key.endswith((":b64", ":int")):
        return SHAKE_LENGTH
    if key.endswith(":int") and encoding == "quoted-printable":
        return QP_NUMBER
    return None


REVERSED_CAUGHT = {
    f"{layer}={choice}|layout=reversed"
    for layer, choice in [("compression", "tar")]
    + [("encoding", e) for e in ("quoted-printable", "unicode-escape", "json-string")]
    + [("encoding", "bytes-literal")]
}
"""Reversed layouts caught all the same: the table's characters stand in them as they are
(a tar member, ASCII text a escape leaves alone), read in the reversed view."""


def _name(case: dict) -> str:
    return "|".join(f"{layer}={case[layer]}" for layer in LAYERS if case[layer] != DEFAULTS[layer])


def _cases() -> list[dict]:
    """Every single, and every pair of layers (a digest key with other layers: the first
    digest form of each algorithm, `hex`, and one algorithm in every form)."""
    cases = [dict(DEFAULTS)]
    for layer, choices in LAYERS.items():
        cases += [DEFAULTS | {layer: c} for c in choices if c != DEFAULTS[layer]]
    for first, second in combinations(LAYERS, 2):
        for a, b in product(LAYERS[first], LAYERS[second]):
            if a == DEFAULTS[first] or b == DEFAULTS[second]:
                continue
            if first == "key" and ":" in a and not (a.endswith(":hex") or a.startswith("sha256")):
                continue
            cases.append(DEFAULTS | {first: a, second: b})
    return [c for c in cases if _limit(c) != "n/a"]


CASES = _cases()


def _files(case: dict) -> dict[str, bytes]:
    key = KEYS[case["key"]]
    table = {key(_text(t)): t.verifier["label"] for t in ROWS}
    data = CONTAINERS[case["container"]](table)
    data = ENCODINGS[case["encoding"]](COMPRESSIONS[case["compression"]](data))
    if case["layout"] == "reversed":
        return {"skills/table.txt": data[::-1]}
    if case["layout"] == "split across files":
        size = max(len(data) // 7, 1)
        return {
            f"skills/t/{n:03d}": data[at : at + size]
            for n, at in enumerate(range(0, len(data), size))
        }
    return {"skills/table.dat": data}


@pytest.fixture(scope="module")
def index():
    return ContentCheck(BENCHMARK, lambda: TASKS, {}).index


def _param(case: dict):
    reason = _limit(case)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=_name(case) or "plain", marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_the_table_through_the_grammar_is_caught(index, case):
    found, rules = judge(scan(_files(case), index), Scan(), index)
    assert rules, f"{_name(case)}: not caught"
    assert found


def test_the_grammar_covers_every_guaranteed_digest_and_each_layer():
    assert {k.split(":")[0] for k in KEYS if ":" in k} == hashlib.algorithms_guaranteed
    assert len(CASES) > 500
