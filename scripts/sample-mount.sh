#!/usr/bin/env bash
# Mount the bundled sample store (made by a real ActiveMQ 5.17.2 broker) with
# kahafs. Sets up what is missing on a fresh Debian machine: fuse3 (as root),
# the kahafs binary (built into bin/kahafs). Stays in the foreground; Ctrl-C
# (or fusermount3 -u MOUNTPOINT from elsewhere) unmounts.
#
#   scripts/sample-mount.sh [MOUNTPOINT]        (default /tmp/kahafs-sample)
set -euo pipefail
cd "$(dirname "$0")/.."
mnt=${1:-/tmp/kahafs-sample}
store=testdata/stores/topics/store

if ! command -v go >/dev/null 2>&1; then
  echo "Go is missing: kahafs needs Go 1.26 or later (go.mod); put its bin directory on PATH (e.g. export PATH=\$PATH:/usr/local/go/bin) and try again" >&2
  exit 1
fi
if ! command -v fusermount3 >/dev/null 2>&1 || [ ! -e /dev/fuse ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing fuse3 (apt-get) ..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 >/dev/null
  else
    echo "FUSE is missing: run 'sudo apt-get install -y fuse3' and try again" >&2
    exit 1
  fi
fi
mkdir -p bin "$mnt"
echo "building kahafs into bin/kahafs (the first build downloads its Go modules and compiles them: about a minute) ..." >&2
# -buildvcs=auto: --version names the commit even where GOFLAGS says otherwise.
go build -buildvcs=auto -o bin/kahafs ./cmd/kahafs
echo "built: $(bin/kahafs --version | head -n 1)" >&2
echo "mounting $store at $mnt; in another terminal try:" >&2
echo "  ls $mnt; cat $mnt/pinned; cat $mnt/by-file/db-2.log/holders; ls $mnt/by-destination/topic/*/subscriptions/*/pending" >&2
# The sample broker ran with journalMaxFileLength=16384.
exec bin/kahafs mount --max-file-length 16384 "$store" "$mnt"
