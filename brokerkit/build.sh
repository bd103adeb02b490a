#!/bin/sh
# Compile brokerkit against the Debian activemq jars (apt-get install -y activemq).
# Output: build/classes (a symlink to the current build/classes.N, swapped atomically so JVMs running
# from an older build keep working) and build/classpath (the java classpath to use, classes first).
# Safe to run concurrently; does nothing when the build is up to date (use --force to rebuild).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
b="$here/build"
AMQ_LIB=${AMQ_LIB:-/usr/share/activemq/lib}
JDK14=${JDK14:-/usr/share/java/slf4j-jdk14.jar}
force=0
[ "${1:-}" = "--force" ] && force=1

uptodate() {
  [ -f "$b/classpath" ] && [ -e "$b/classes/Generate.class" ] || return 1
  for f in "$here"/src/*.java "$here/build.sh"; do
    [ "$f" -nt "$b/classpath" ] && return 1
  done
  return 0
}

if [ ! -d "$AMQ_LIB" ]; then
  echo "brokerkit: $AMQ_LIB not found; run: apt-get install -y activemq" >&2
  exit 1
fi
if [ ! -f "$JDK14" ]; then
  echo "brokerkit: $JDK14 not found (Debian package libslf4j-java)" >&2
  exit 1
fi
mkdir -p "$b"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$b/.lock"
  flock 9
fi
if [ "$force" = 0 ] && uptodate; then
  exit 0
fi

cp=""
for j in "$AMQ_LIB"/*.jar "$AMQ_LIB"/optional/*.jar; do
  [ -e "$j" ] || continue
  case "$(basename "$j")" in
    slf4j-log4j12*.jar) continue ;;   # the log4j 1.2 binding: we log through JUL (slf4j-jdk14) instead
  esac
  cp="$cp${cp:+:}$j"
done
cp="$cp:$JDK14"

n=$$
rm -rf "$b/classes.$n"
mkdir -p "$b/classes.$n"
if ! javac -nowarn -encoding UTF-8 -d "$b/classes.$n" -cp "$cp" "$here"/src/*.java; then
  rm -rf "$b/classes.$n"
  exit 1
fi
# atomic swap of the symlink build/classes -> classes.N
if [ -d "$b/classes" ] && [ ! -L "$b/classes" ]; then
  rm -rf "$b/classes"
fi
ln -s "classes.$n" "$b/classes.link.$n"
mv -T "$b/classes.link.$n" "$b/classes"
printf '%s\n' "$b/classes:$cp" > "$b/classpath.$n"
mv -f "$b/classpath.$n" "$b/classpath"
for d in "$b"/classes.*; do
  case "$d" in
    "$b/classes.$n") ;;
    *) rm -rf "$d" ;;
  esac
done
