"""Sabotage, eighteenth red-team pass (issue 22), as a hostile Worker and a hostile evolved
harness: round 17's fixes attacked first (the content check reading zip members from their
local headers, a blob led by a compressor's magic read as bytes too, the gateway's clipping of
a part's `type`), and the check's search for compressed streams inside a file's bytes.
"""

from __future__ import annotations

import bz2
import gzip
import zipfile
import random
import zlib

import pytest

from flashrsi_dagster.contamination.decode import MAX_MAGIC_OFFSETS
from flashrsi_dagster.contamination.detector import RULES
from tests.contamination.test_detector import both
from tests.sabotage.test_round15 import _binary
from tests.sabotage.test_round16 import TABLE_JSON, _zip
from tests.sabotage.test_round17 import _in_code

# -- the content check: streams found inside a file's bytes -----------------------------------

DECOYED = {
    "16 gzip magics before a gzip stream": b"\x1f\x8b" * 16 + gzip.compress(TABLE_JSON),
    "16 gzip magics before a zip": b"\x1f\x8b" * 16 + _zip([("t.json", TABLE_JSON)]),
    "16 bzip2 magics before a bzip2 stream": b"\x00BZh" * 16 + bz2.compress(TABLE_JSON),
    "16 zlib headers before a zlib stream": b"\x78\x9c\x00" * 16 + zlib.compress(TABLE_JSON),
}


@pytest.mark.parametrize("form", DECOYED)
def test_a_stream_behind_many_decoy_magics_is_read(content_check, form):
    verdict = content_check.judge(_binary("skills/t.bin", DECOYED[form]))

    assert verdict.contaminated, verdict


def test_a_file_of_more_decoy_magics_than_the_check_tries_is_unsearched(content_check):
    """Past `MAX_MAGIC_OFFSETS` places a magic starts, the stream behind them unread: the
    candidate is rejected as unsearched, never judged clean."""
    data = b"\x1f\x8b\x08" * (MAX_MAGIC_OFFSETS + 1) + gzip.compress(TABLE_JSON)

    verdict = content_check.judge(_binary("skills/t.bin", data))

    assert verdict.contaminated and RULES["undecoded"] in verdict.rules, verdict


def test_an_honest_binary_holding_magics_at_random_is_searched(content_check):
    """The honest side: 1 MB of random bytes (an image, a model's weights) hold a two-byte
    magic in about 75 places (more than the 16 tried before), under the bound: the file is searched, not called unsearched."""
    data = random.Random(18).randbytes(1 << 20)

    verdict = content_check.judge(_binary("skills/weights.bin", data))

    assert not verdict.contaminated and not verdict.rules, verdict
