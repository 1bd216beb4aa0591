#!/bin/sh
# check-includes.sh - fail when a module includes a header it may not.
# The rules are the table tools/includes.txt (one line per module); run by
# `make test` (make check-includes).  Each violation is one line:
#   FILE:LINE: MODULE may not include HEADER (tools/includes.txt)
# tests/ may include any module's headers (unit tests reach inside), but
# not the restricted system headers.
cd "$(dirname "$0")/.." || exit 2
rules=tools/includes.txt
status=0

# Folders holding C files: every one but tests/ must have a rule.
for dir in $(find . -name '*.[ch]' -not -path './build*' -not -path './tests/*' \
                  -not -path './traces-sample/*' -not -path './bench/*' |
             sed 's|^\./||; s|/.*||' | sort -u); do
    case $dir in *.c|*.h) continue ;; esac
    [ "$dir" = include ] && continue
    if ! grep -q "^$dir:" "$rules"; then
        echo "$dir/: a module with no line in $rules (add 'MODULE: MODULES')"
        status=1
    fi
done

out=$(find . -name '*.[ch]' -not -path './build*' -not -path './traces-sample/*' \
           -not -path './bench/*' | sed 's|^\./||' | sort |
      xargs awk -v rules="$rules" '
BEGIN {
    while ((getline line < rules) > 0) {
        if (line ~ /^#/ || line !~ /:/)
            continue
        split(line, kv, ":")
        key = kv[1]; val = kv[2]
        if (key ~ /^</) { sysallow[key] = " " val " "; continue }
        allow[key] = " " val " "
    }
}
FNR == 1 {
    mod = FILENAME; sub(/\/.*/, "", mod)
}
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    hdr = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", hdr)
    sub(/[ \t].*$/, "", hdr)
    if (hdr ~ /^</) {
        if (hdr in sysallow && index(sysallow[hdr], " " mod " ") == 0)
            printf "%s:%d: %s may not include %s (only %s may; %s)\n", FILENAME, FNR, mod, hdr,
                   trim(sysallow[hdr]), rules
        next
    }
    gsub(/"/, "", hdr)
    if (mod == "tests" || mod == "include" || hdr == "crec.h")
        next
    owner = hdr; sub(/\/.*/, "", owner)
    if (owner == mod)
        next
    if (hdr != owner "/" owner ".h") {
        printf "%s:%d: %s may not include %s: another module'"'"'s private header (%s)\n",
               FILENAME, FNR, mod, hdr, rules
        next
    }
    if (!(mod in allow) || index(allow[mod], " " owner " ") == 0)
        printf "%s:%d: %s may not include %s (%s: %s)\n", FILENAME, FNR, mod, hdr, rules,
               !(mod in allow) ? "no line for " mod : \
               trim(allow[mod]) == "" ? mod " includes only crec.h and its own headers" : \
               mod " may include " trim(allow[mod])
}
function trim(s) { gsub(/^ +| +$/, "", s); gsub(/  +/, " ", s); return s }')
if [ -n "$out" ]; then
    echo "$out"
    status=1
fi
[ $status -eq 0 ] && echo "includes: every module includes only what tools/includes.txt allows"
exit $status
