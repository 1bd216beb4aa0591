#!/bin/sh
# Processes under crec run (docs/EMU.md, "Processes"): fork, vfork and
# posix_spawn, execve (ELF and #! scripts), wait4/waitid and exit
# statuses, pipes between guest processes, O_CLOEXEC across execve.  The
# output and exit status equal the native run's.  A recording of several
# processes is not supported yet: one line, and the recording replays.
. "$E2E_DIR/lib.sh"

same_as_native "procs: sh pipeline seq | sort -r | head" "@ sh -c 'seq 1 1000 | sort -r | head -3'"
same_as_native "procs: bash for loop over \$(seq)" \
    "@ bash -c 'for i in \$(seq 1 3); do echo \$i; done'"
same_as_native "procs: exit status of sh -c" "@ sh -c 'exit 7'"
same_as_native "procs: a child killed by a signal, as its parent sees it" \
    "@ sh -c 'sh -c \"kill -TERM \\\$\\\$\"; echo status \$?'"
same_as_native "procs: sh killed by a signal" "@ sh -c 'kill -SEGV \$\$'"
same_as_native "procs: python3 subprocess.run" \
    "@ /usr/bin/python3 -c 'import subprocess; print(subprocess.run([\"echo\",\"hi\"], capture_output=True).stdout)'"

# a bash script: a function, a subshell, a here-document, $(...), a for
# loop over files, wait for a background job
mkdir -p "$TMP/files"
for i in a b c; do echo "content $i" >"$TMP/files/$i.txt"; done
cat >"$TMP/script.sh" <<'SCRIPT'
#!/bin/bash
greet() { echo "hello $1"; }
greet world
(cd files && echo "in subshell: $(ls | wc -l) files")
cat <<END
here-doc line, sum=$((2 + 3))
END
n=$(seq 1 10 | wc -l)
echo "n=$n"
for f in files/*.txt; do echo "$f: $(cat "$f")"; done
sleep 0.1 &
pid=$!
wait $pid
echo "background job done: $?"
(exit 3); echo "subshell status $?"
SCRIPT
chmod +x "$TMP/script.sh"
same_as_native "procs: a bash script (function, subshell, here-doc, \$(), for, wait)" "@ ./script.sh"

# make runs three recipes (posix_spawn, setresuid)
printf 'all: a b c\na:\n\t@echo one\nb:\n\t@echo two\nc:\n\techo three\n' >"$TMP/Makefile"
same_as_native "procs: make -f, three recipes" "@ make -f Makefile"

# O_CLOEXEC: an fd opened with it is gone after execve, one without stays
cat >"$TMP/cloexec.py" <<'PY'
import os
a = os.open("/dev/null", os.O_RDONLY)
os.set_inheritable(a, True)
b = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
os.execv("/bin/sh", ["sh", "-c", "for f in %d %d; do if { true <&$f; } 2>/dev/null; then echo $f open; else echo $f closed; fi; done" % (a, b)])
PY
same_as_native "procs: O_CLOEXEC across execve" "@ /usr/bin/python3 cloexec.py"

# fork from worker threads (a thread pool running subprocesses), then
# execve while another thread sleeps
cat >"$TMP/threads.py" <<'PY'
import concurrent.futures as cf, os, subprocess, threading, time
def run(i):
    return subprocess.run(["echo", "job%d" % i], capture_output=True, text=True).stdout.strip()
with cf.ThreadPoolExecutor(max_workers=3) as ex:
    print(sorted(ex.map(run, range(5))))
threading.Thread(target=lambda: time.sleep(5), daemon=True).start()
os.execv("/bin/echo", ["echo", "exec while a thread sleeps"])
PY
same_as_native "procs: fork from threads, execve with another thread alive" "@ /usr/bin/python3 threads.py"

# execve's errors, as execvp sees them
same_as_native "procs: a command not found, then one that is" \
    "@ sh -c 'no-such-command-xyz 2>/dev/null; echo \$?; /etc/passwd 2>/dev/null; echo \$?; true; echo \$?'"

# a recording of a fork and an execve: every process, each replayed alone
"$CREC" record -o "$TMP/fork.crec" -- sh -c 'echo before; ls /dev/null; echo after' \
    >"$TMP/out" 2>"$TMP/err"
if [ ! -s "$TMP/err" ] && [ "$(cat "$TMP/out")" = "before
/dev/null
after" ] && "$CREC" replay "$TMP/fork.crec" 2>&1 | grep -q 'replay verified (3 processes'; then
    pass "procs: fork and execve in a recording, every process replayed"
else
    fail "procs: fork and execve in a recording" "$(head -c 300 "$TMP/err")"
fi
