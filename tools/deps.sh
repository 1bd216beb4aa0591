#!/bin/sh
# Make sure the Debian packages named on the command line are installed.
# As root, missing ones are installed with apt-get; otherwise the exact
# command is printed and we stop before any compiler error can hide the cause.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    echo "crec: installing missing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null &&
        apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
        { echo "crec: apt-get install failed for:$missing" >&2; exit 1; }
    exit 0
fi
echo "crec: missing Debian packages:$missing" >&2
echo "crec: install them with:  sudo apt-get install$missing" >&2
exit 1
