#!/bin/sh
# Make sure the Debian packages for the s390x cross build are installed
# (names with ":s390x" are the s390x builds of libraries, which install
# beside the amd64 ones once dpkg knows the architecture).  As root, what is
# missing is installed; otherwise the exact commands are printed and we stop.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

need_arch=
dpkg --print-foreign-architectures | grep -qx s390x || need_arch=1

if [ "$(id -u)" = 0 ]; then
    echo "crec: installing Debian packages for the s390x cross build:$missing"
    export DEBIAN_FRONTEND=noninteractive
    { [ -z "$need_arch" ] || dpkg --add-architecture s390x; } &&
        apt-get update -qq >/dev/null &&
        apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
        { echo "crec: apt-get install failed for:$missing" >&2; exit 1; }
    exit 0
fi
echo "crec: missing Debian packages for the s390x cross build:$missing" >&2
echo "crec: install them with:" >&2
[ -z "$need_arch" ] || echo "  sudo dpkg --add-architecture s390x" >&2
echo "  sudo apt-get update" >&2
echo "  sudo apt-get install$missing" >&2
exit 1
