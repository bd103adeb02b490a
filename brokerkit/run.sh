#!/bin/sh
# Usage: brokerkit/run.sh CLASS ARGS...   (builds first when needed)
# JVM options: $BROKERKIT_JAVA_OPTS (default -Xmx384m).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 CLASS ARGS...  (classes: Generate Inspect Records RegenCheck IndexDump IndexStores Workload BrokerView SelectorCheck SchedulerGen SchedulerCleanup LayoutWorkload BTreeOracle ListOracle)" >&2
  exit 2
fi
"$here/build.sh" >&2
cls=$1
shift
exec java ${BROKERKIT_JAVA_OPTS:--Xmx384m} -cp "$(cat "$here/build/classpath")" "$cls" "$@"
