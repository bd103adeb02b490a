#!/bin/sh
# Usage: brokerkit/regen-check.sh SCENARIO OUTDIR
# Regenerates one scenario into OUTDIR/SCENARIO with the real broker (the generator's own checks must pass)
# and compares the host/timing-independent facts with the committed testdata/stores/SCENARIO.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 SCENARIO OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
scenario=$1
out=$2
mkdir -p "$out"
"$here/run.sh" Generate "$out" "$scenario"
committed="$repo/testdata/stores/$scenario"
if [ -f "$committed/expected.json" ]; then
  "$here/run.sh" RegenCheck "$committed" "$out/$scenario"
else
  echo "regen-check: no committed $committed/expected.json to compare with" >&2
  exit 1
fi
