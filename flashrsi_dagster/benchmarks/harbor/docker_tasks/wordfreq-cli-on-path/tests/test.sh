#!/bin/bash
# The verifier's shell has the image's PATH: both prepended folders, then the system's.
fail() { echo "FAIL: $*"; echo 0 > /logs/verifier/reward.txt; exit 0; }
command -v wordfreq >/dev/null || fail "wordfreq is not on PATH ($PATH)"
[ "$(command -v python)" = /opt/tools/bin/python ] || fail "python is $(command -v python), not the venv's"
out=$(cd / && wordfreq /app/corpus/a.txt /app/corpus/b.txt) || fail "wordfreq failed"
[ "$out" = "$(printf 'the 5\ndog 3\na 2')" ] || fail "default output: $out"
out=$(wordfreq -n 5 /app/corpus/a.txt /app/corpus/b.txt) || fail "wordfreq -n 5 failed"
[ "$out" = "$(printf 'the 5\ndog 3\na 2\nfox 2\nand 1')" ] || fail "-n 5 output: $out"
head -1 "$(command -v wordfreq)" | grep -q '/opt/tools/bin/python' \
    || grep -q 'opt/tools' "$(command -v wordfreq)" || fail "wordfreq does not use /opt/tools's interpreter"
echo 1 > /logs/verifier/reward.txt
