#!/bin/sh
# Processes (docs/EMU.md, "Processes"; docs/ARCHITECTURE.md, "Processes"):
# fork, vfork and posix_spawn, execve (ELF and #! scripts), wait4/waitid
# and exit statuses, pipes between guest processes, O_CLOEXEC across
# execve.  Under crec run the output and exit status equal the native
# run's; recorded, every process of the tree goes into the one file, which
# replays verified (every process, each alone) after its inputs are gone;
# `crec info` shows the tree, and a query addresses one process.
. "$E2E_DIR/lib.sh"

# rec NAME 'SHELL LINE' [CLEANUP]: record the line (in $TMP) and require
# the native run's stdout and status; run CLEANUP (the inputs go), then
# the replay must verify every process.
rec() {
    name=$1 line=$2 cleanup=$3
    (cd "$TMP" && sh -c "$line") >"$TMP/$name.native" 2>/dev/null
    nrc=$?
    (cd "$TMP" && sh -c "timeout 600 \"$CREC\" record -o \"$TMP/$name.crec\" -- $line") \
        >"$TMP/$name.out" 2>"$TMP/$name.err"
    rrc=$?
    if [ "$nrc" != "$rrc" ] || ! cmp -s "$TMP/$name.native" "$TMP/$name.out"; then
        fail "procs: record $name" "native exit $nrc, recorded $rrc; $(head -c 300 "$TMP/$name.err")"
        return 1
    fi
    pass "procs: record $name"
    [ -n "$cleanup" ] && (cd "$TMP" && sh -c "$cleanup")
    if timeout 600 "$CREC" replay "$TMP/$name.crec" >"$TMP/$name.replay" 2>&1 &&
        grep -q 'replay verified (.* process' "$TMP/$name.replay"; then
        pass "procs: replay $name (every process)"
    else
        fail "procs: replay $name" "$(head -c 400 "$TMP/$name.replay")"
        return 1
    fi
}

# pid_of FILE PROGRAM: the pid of the process of FILE that ran PROGRAM
# (crec info's tree: "process pid parent instr end command...")
pid_of() {
    "$CREC" info "$1" | awk -v p="$2" '/^processes:/ {on = 1; next} on && /^process 0/ {exit}
        on && $0 ~ " " p "( |$)" && $1 ~ /^[0-9]+$/ {print $2; exit}'
}

same_as_native "procs: bash for loop over \$(seq)" \
    "@ bash -c 'for i in \$(seq 1 3); do echo \$i; done'"
same_as_native "procs: exit status of sh -c" "@ sh -c 'exit 7'"
same_as_native "procs: a child killed by a signal, as its parent sees it" \
    "@ sh -c 'sh -c \"kill -TERM \\\$\\\$\"; echo status \$?'"
same_as_native "procs: sh killed by a signal" "@ sh -c 'kill -SEGV \$\$'"

# (the pipeline, python3 subprocess.run, the bash script and make are
# recorded below: `rec` compares the recording run with the native one)

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

# make runs three recipes (posix_spawn, setresuid): recorded below
printf 'all: a b c\na:\n\t@echo one\nb:\n\t@echo two\nc:\n\techo three\n' >"$TMP/Makefile"

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

# ---- recorded: issue 15's list, each replayed after its inputs are gone ----

rec pipeline "sh -c 'seq 1 1000 | sort -r | head -3'"
n=$("$CREC" info "$TMP/pipeline.crec" | sed -n 's/^processes: *\([0-9]*\).*/\1/p')
if [ "${n:-0}" -ge 7 ]; then pass "procs: the pipeline's $n processes (sh, and a fork and a program each)"
else fail "procs: the pipeline's processes" "'$n'"; fi
for p in seq sort head; do
    pid=$(pid_of "$TMP/pipeline.crec" "$p")
    if [ -n "$pid" ] && "$CREC" replay --pid "$pid" "$TMP/pipeline.crec" 2>&1 | grep -q 'replay verified'; then
        pass "procs: replay --pid (the $p of the pipeline alone)"
    else
        fail "procs: replay --pid $p" "pid '$pid'"
    fi
done

# the bash script above, recorded; its files and itself removed before the replay
cp "$TMP/script.sh" "$TMP/script2.sh"
mkdir -p "$TMP/keep" && cp -r "$TMP/files" "$TMP/keep/"
rec script "./script2.sh" "rm -rf files script2.sh" && {
    "$CREC" info "$TMP/script.crec" >"$TMP/script.info"
    ok=1
    for p in "./script2.sh" "ls" "wc -l" "seq 1 10" "cat files/a.txt" "sleep 0.1"; do
        grep -q " $p" "$TMP/script.info" || { ok=0; missing=$p; }
    done
    if [ $ok = 1 ] && grep -q 'execve -> ' "$TMP/script.info" && grep -q 'exit 0' "$TMP/script.info"; then
        pass "procs: crec info shows the script's process tree with each command line"
    else
        fail "procs: crec info shows the script's process tree" "no '$missing': $(head -c 600 "$TMP/script.info")"
    fi
    # a query in a child (seq 1 10), cross-checked by a replay from 0 (--no-index)
    pid=$(pid_of "$TMP/script.crec" "seq 1 10")
    q1=$("$CREC" query "$TMP/script.crec" --pid "$pid" rax@end rsp@1000 rip@50% 2>&1)
    q2=$("$CREC" query "$TMP/script.crec" --pid "$pid" --no-index rax@end rsp@1000 rip@50% 2>&1)
    sp=$(printf '%s\n' "$q1" | sed -n 's/^rsp@1000 = \(0x[0-9a-f]*\).*/\1/p')
    m1=$("$CREC" query "$TMP/script.crec" --pid "$pid" "$sp:16@2000" 2>&1)
    m2=$("$CREC" query "$TMP/script.crec" --pid "$pid" --no-index "$sp:16@2000" 2>&1)
    m1=$(printf '%s' "$m1" | sed 's/ (index+replay)$//; s/ (index)$//; s/ (snapshot)$//')
    m2=$(printf '%s' "$m2" | sed 's/ (replay)$//')
    if [ -n "$pid" ] && [ -n "$sp" ] && [ "$q1" = "$q2" ] && [ "$m1" = "$m2" ] &&
        ! printf '%s' "$m1" | grep -q '??'; then
        pass "procs: a query in a child process answers as a replay does"
    else
        fail "procs: a query in a child process" "pid '$pid': $q1 / $q2 / $m1 / $m2"
    fi
    q3=$("$CREC" query "$TMP/script.crec" "rax@$pid/end" 2>&1)
    if [ "$q3" = "rax@$pid/end = $(printf '%s\n' "$q1" | sed -n 's/^rax@end = //p')" ]; then
        pass "procs: PID/WHEN names the process of a query"
    else
        fail "procs: PID/WHEN" "$q3"
    fi
    expect_status "procs: without --pid a recording of several processes is refused" 1 \
        "$CREC" query "$TMP/script.crec" rax@0
    if grep -q 'holds [0-9]* processes: pid .*(script2.sh).*choose one with --pid' "$TMP/err"; then
        pass "procs: ... naming the processes it holds"
    else
        fail "procs: ... naming the processes it holds" "$(cat "$TMP/err")"
    fi
    one_error_line "procs: ... in one line"
    expect_status "procs: --pid of no process is an error" 1 "$CREC" query "$TMP/script.crec" --pid 1 rax@0
    one_error_line "procs: ... in one line"
    w=$("$CREC" when "$TMP/script.crec" --pid "$pid" "$sp:8" 2>&1 | head -2 | wc -l)
    if [ "$w" = 2 ]; then pass "procs: when --pid in a child"; else
        fail "procs: when --pid in a child" "$("$CREC" when "$TMP/script.crec" --pid "$pid" "$sp:8" 2>&1 | head -3)"; fi
}
cp -r "$TMP/keep/files" "$TMP/"

rec subprocess "/usr/bin/python3 -c 'import subprocess; print(subprocess.run([\"echo\",\"hi\"], capture_output=True).stdout)'"
cp "$TMP/Makefile" "$TMP/Makefile2"
rec make "make -f Makefile2" "rm Makefile2"

# the fork and execve recorded above: the pid of ls ran two programs: sh (the fork) then ls
pid=$(pid_of "$TMP/fork.crec" "ls")
expect_status "procs: replay --pid PID.K (the fork before its execve)" 0 \
    "$CREC" replay --pid "$pid.1" "$TMP/fork.crec"
expect_status "procs: replay --pid PID.3 of a pid of two programs" 1 \
    "$CREC" replay --pid "$pid.3" "$TMP/fork.crec"
one_error_line "procs: ... in one line"

# the recording on a pipe: every process's chunks through the one pipe
"$CREC" record -o - -- sh -c 'seq 1 100 | wc -l' 2>"$TMP/pipe.prog" | "$CREC" replay - >"$TMP/out" 2>&1
if grep -q 'replay verified (5 processes' "$TMP/out" && [ "$(cat "$TMP/pipe.prog")" = 100 ]; then
    pass "procs: a recording of several processes written to a pipe (-o -)"
else
    fail "procs: a recording of several processes to a pipe" "$(head -c 300 "$TMP/out")"
fi

# ---- what goes wrong -------------------------------------------------------------

# a child's recorder killed (SIGKILL from outside): its parent goes on, the
# file is complete, that process is "cut short" and verified up to its
# last key frame, the others whole
"$CREC" record -o "$TMP/k1.crec" -- sh -c 'sleep 30 & echo started; wait; echo "waited"' \
    >"$TMP/out" 2>"$TMP/err" &
root=$!
child=
for i in $(seq 100); do
    child=$(pgrep -P $root 2>/dev/null | head -1)
    [ -n "$child" ] && grep -q started "$TMP/out" 2>/dev/null && break
    sleep 0.1
done
sleep 0.5
[ -n "$child" ] && kill -9 "$child"
wait $root
rc=$?
timeout 600 "$CREC" replay "$TMP/k1.crec" >"$TMP/k1.replay" 2>&1
rrc=$?
if [ "$rc" = 0 ] && grep -q waited "$TMP/out" && [ $rrc = 0 ] &&
    grep -q 'some cut short' "$TMP/k1.replay" && "$CREC" info "$TMP/k1.crec" | grep -q 'cut short *sleep 30'; then
    pass "procs: a child's recorder killed: the rest records, replays, and info says which was cut"
else
    fail "procs: a child's recorder killed" "exit $rc, replay $rrc: $(head -c 300 "$TMP/k1.replay")"
fi

# the whole tree SIGKILLed while children run: no directory, every process
# read up to its last complete chunk, and replayed up to its last key frame
setsid "$CREC" record -o "$TMP/k2.crec" -- sh -c 'for i in 1 2; do (i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done) & done; wait' \
    >/dev/null 2>&1 &
# setsid execs crec in this background process (not a group leader), so
# $! is crec's pid and its process group holds the whole tree.  The kill
# has no "--": dash's kill refuses it ("Illegal number"), and then killed
# nothing and left the tree computing its two loops under emulation for
# many minutes (the hang this case was suspected of)
pg=$!
sleep 3
kill -9 "-$pg"
wait $pg 2>/dev/null
if timeout 300 "$CREC" info "$TMP/k2.crec" >"$TMP/k2.info" 2>&1 && grep -q 'truncated: *yes' "$TMP/k2.info" &&
    grep -q 'cut short' "$TMP/k2.info" &&
    timeout 600 "$CREC" replay "$TMP/k2.crec" 2>&1 | grep -q 'replay verified (3 processes.*cut short'; then
    pass "procs: the recorder SIGKILLed with its children: the file reads and replays up to where each was"
else
    fail "procs: the recorder SIGKILLed with its children" "$(head -c 400 "$TMP/k2.info")"
fi

# ---- real programs -----------------------------------------------------------

mkdir -p "$TMP/repo" && (cd "$TMP/repo" && git init -q && echo hi >a && git add a &&
    git -c user.email=t@t -c user.name=t commit -qm one && echo more >>a)
rec git "sh -c 'cd repo && git status --short'"
mkdir -p "$TMP/tardir" && seq 1 3000 >"$TMP/tardir/f1" && seq 1 500 >"$TMP/tardir/f2"
rec tar "sh -c 'tar czf - tardir | tar tzf -'" "rm -rf tardir"
# timeout(1) moves itself into a group of its own and signals that group
rec timeout "sh -c 'timeout 1 sleep 5; echo timeout rc \$?'"
rec perl "perl -e 'my \$p = fork(); if (!\$p) { print \"child\\n\"; exit 3 } waitpid(\$p, 0); print \"parent saw \", \$? >> 8, \"\\n\";'"
printf 'all: a b c\na:\n\t@echo one\nb:\n\t@echo two\nc:\n\t@echo three\n' >"$TMP/Makefile3"
rec make_j2 "sh -c 'make -j2 -s -f Makefile3 | sort'" "rm Makefile3"
seq 1 2000 >"$TMP/words"
rec coreutils "sh -c 'cat words | tr 0-9 a-j | sort | uniq -c | sort -rn | head -3 | cut -c1-20'" "rm words"
cat >"$TMP/mp.py" <<'PY'
import multiprocessing as mp
def sq(x): return x * x
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as p:
        print(p.map(sq, range(6)))
PY
rec multiprocessing "/usr/bin/python3 mp.py" "rm mp.py"
# a thread's id is never a child's pid: kill() of the child kills the child
# (crec made thread ids up as pid+1, pid+2..., which children's pids met)
rec thread-ids "$GUESTS/threads_tids"
