#!/bin/sh
# Make sure the Debian packages named on the command line are installed.
# As root, missing ones are installed with apt-get; otherwise the exact
# commands are printed and we stop before any compiler error can hide the
# cause.  A name like "libzstd-dev:s390x" is the build of a library for
# another architecture: it installs beside the host's once dpkg knows that
# architecture, which this script adds first (the s390x cross build,
# mk/s390x.mk).
# make -j runs `deps` and `deps-test` at once: the second waits here for the
# first's apt-get (which holds dpkg's lock) and then finds its packages
# installed, instead of failing on the lock.
if [ "$(id -u)" = 0 ] && [ -z "$CREC_DEPS_LOCKED" ] && command -v flock >/dev/null; then
    CREC_DEPS_LOCKED=1 exec flock /tmp/crec-deps.lock sh "$0" "$@"
fi
missing="" arches=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && continue
    missing="$missing $p"
    case "$p" in
    *:*)
        a=${p#*:}
        dpkg --print-foreign-architectures | grep -qx "$a" ||
            case " $arches " in *" $a "*) ;; *) arches="$arches $a" ;; esac
        ;;
    esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    echo "crec: installing missing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    for a in $arches; do dpkg --add-architecture "$a" || exit 1; done
    apt-get update -qq >/dev/null &&
        apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
        { echo "crec: apt-get install failed for:$missing" >&2; exit 1; }
    exit 0
fi
echo "crec: missing Debian packages:$missing" >&2
echo "crec: install them with:" >&2
for a in $arches; do echo "  sudo dpkg --add-architecture $a" >&2; done
[ -z "$arches" ] || echo "  sudo apt-get update" >&2
echo "  sudo apt-get install$missing" >&2
exit 1
