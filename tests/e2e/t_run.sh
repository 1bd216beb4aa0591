# crec run: real programs give the same stdout and exit status as natively.
. "$E2E_DIR/lib.sh"

# Test data, generated the same way every time.
seq 1 1400000 | head -c 10000000 >"$TMP/big.txt"
seq 1 30000 | awk '{ print ($1 * 7919) % 100003 " line " $1 }' >"$TMP/lines.txt"
head -c 200000 "$TMP/lines.txt" >"$TMP/small.txt"

same_as_native "run: /bin/true" '@ /bin/true'
same_as_native "run: echo" '@ /bin/echo hello'
same_as_native "run: cat a file" '@ cat lines.txt'
same_as_native "run: ls -la /usr/bin" '@ ls -la /usr/bin'
same_as_native "run: sha256sum of 10 MB" '@ sha256sum big.txt'
same_as_native "run: sort 30,000 lines" '@ sort lines.txt'
same_as_native "run: gzip | gunzip" '@ gzip -c lines.txt | @ gzip -dc | cksum'
# xz uses PCLMULQDQ when CPUID shows it (Unicorn 2.0.1 runs it once ucfix.c lets it)
same_as_native "run: xz | unxz" '@ xz -0 -c small.txt | @ xz -dc | cksum'
same_as_native "run: busybox sh loop" "@ busybox sh -c 'for i in 1 2 3; do echo \$i; done'"
same_as_native "run: busybox exit status" "@ busybox sh -c 'echo out; exit 5'"
same_as_native "run: lua" "@ lua5.4 -e 'local s=0 for i=1,1e5 do s=s+i end print(s)'"
same_as_native "run: sqlite3" "@ sqlite3 :memory: 'create table t(x); insert into t values(1),(2); select sum(x) from t;'"
same_as_native "run: python3 sum" "@ /usr/bin/python3 -c 'print(sum(range(10**5)))'"
same_as_native "run: python3 modules" "@ /usr/bin/python3 -c 'import json, re, math; print(json.dumps({\"a\": [1, 2.5]}), re.sub(\"b+\", \"x\", \"abbbc\"), math.sqrt(2))'"
same_as_native "run: python3 exit status" "@ /usr/bin/python3 -c 'import sys; sys.exit(4)'"
same_as_native "run: perl" "@ perl -e 'my %h = (a => 1, b => 2); print \"\$_=\$h{\$_}\\n\" for sort keys %h; printf(\"%.6f\\n\", atan2(1, 1) * 4)'"
same_as_native "run: perl regex" "@ perl -ne 'print if /^9999[0-9] /' lines.txt"
same_as_native "run: static guest" "@ $GUESTS/hello_static a b"
same_as_native "run: dynamic guest" "@ $GUESTS/hello_dyn x"
same_as_native "run: memory syscalls" "@ $GUESTS/memops_static"
same_as_native "run: read, pread, mmap a file" "@ $GUESTS/readfile lines.txt"
same_as_native "run: python3 socketpair" "@ /usr/bin/python3 -c 'import socket; a, b = socket.socketpair(); a.sendall(b\"ping\"); print(b.recv(9))'"
printf '#!/bin/sh\necho "script says $1"\nexit 6\n' >"$TMP/script.sh"
chmod +x "$TMP/script.sh"
same_as_native "run: #! script" "@ ./script.sh hi"
same_as_native "run: segfault is 139" "@ $GUESTS/segv"
same_as_native "run: abort is 134" "@ $GUESTS/abort"
same_as_native "run: ud2 is SIGILL, 132" "@ $GUESTS/ud2"

expect_status "run: segfault exit status" 139 "$CREC" run -- "$GUESTS/segv"
if grep -q 'guest killed by SIGSEGV at 0x.*(write to unmapped 0x' "$TMP/err"; then
    pass "run: segfault message"
else fail "run: segfault message" "$(cat "$TMP/err")"; fi
expect_status "run: unknown program is 127" 127 "$CREC" run -- no-such-program-crec
one_error_line "run: unknown program is one error line"
expect_status "run: non-ELF file is 126" 126 "$CREC" run -- /etc/passwd
one_error_line "run: non-ELF file is one error line"
expect_status "run: no program is 2" 2 "$CREC" run
expect_status "run: --help" 0 "$CREC" run --help

expect_status "run: cpuid guest" 0 "$CREC" run -- "$GUESTS/cpuid"
expect_eq "run: cpuid table" "max=0x19 vendor=GenuineIntel|leaf1 ecx=0x42d82203 edx=0x78bfbff avx=0|brand=crec virtual x86-64 CPU" \
    "$(tr '\n' '|' <"$TMP/out" | sed 's/|$//')"

# Instructions crec executes itself (docs/EMU.md): compiled code of this
# machine's every vector extension, x86-64-v2 code, 2,154 AVX/AVX2/FMA/F16C/
# AVX-512 forms against the CPU itself (this machine has AVX-512), RDRAND.
same_as_native "run: -O3 -march=native build (AVX-512)" "@ $GUESTS/vec_native"
same_as_native "run: -march=x86-64-v2 build" "@ $GUESTS/vec_v2"
# avx_ops.expected is avx_ops' output on a CPU with AVX-512 (its forms
# need it): crec must give it on any host, and a host with AVX-512 must too,
# so that the file stays the CPU's answer.  All 2,154 forms run in one
# process: each is a site of its own, and with a code hook per site
# Unicorn's translator took 390 s of CPU over them (emu/ucfix.c, 9); now
# about 2 s.
avx_rc=0
"$CREC" run -- "$GUESTS/avx_ops" >"$TMP/avx.out" 2>"$TMP/avx.err" || avx_rc=$?
if [ "$avx_rc" = 0 ] && cmp -s "$E2E_DIR/../guests/avx_ops.expected" "$TMP/avx.out"; then
    pass "run: AVX to AVX-512 forms equal the CPU's (avx_ops.expected)"
else
    fail "run: AVX to AVX-512 forms equal the CPU's (avx_ops.expected)" \
        "exit $avx_rc: $(diff "$E2E_DIR/../guests/avx_ops.expected" "$TMP/avx.out" | head -5) $(head -c 300 "$TMP/avx.err")"
fi
if grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
    "$GUESTS/avx_ops" >"$TMP/avx.native" 2>&1
    if cmp -s "$E2E_DIR/../guests/avx_ops.expected" "$TMP/avx.native"; then
        pass "run: this AVX-512 CPU gives avx_ops.expected"
    else fail "run: this AVX-512 CPU gives avx_ops.expected" "$(diff "$E2E_DIR/../guests/avx_ops.expected" "$TMP/avx.native" | head -5)"; fi
    "$GUESTS/avx_ops" quick >"$TMP/avx.native" 2>&1
    if cmp -s "$E2E_DIR/../guests/avx_ops.quick.expected" "$TMP/avx.native"; then
        pass "run: this AVX-512 CPU gives avx_ops.quick.expected"
    else fail "run: this AVX-512 CPU gives avx_ops.quick.expected" "$(diff "$E2E_DIR/../guests/avx_ops.quick.expected" "$TMP/avx.native" | head -5)"; fi
fi
same_as_native "run: rdrand and rdseed" "@ $GUESTS/rdrand"
for how in unmapped misaligned readonly; do
    same_as_native "run: fault in an AVX instruction ($how)" "@ $GUESTS/avx_fault $how"
done
expect_status "run: an AVX-512 instruction crec lacks is SIGILL" 132 "$CREC" run -- "$GUESTS/avx_unsupported"
if grep -q 'SIGILL at 0x.*: an AVX-512 instruction that crec does not execute$' "$TMP/err"; then
    pass "run: it is named"
else fail "run: it is named" "$(cat "$TMP/err")"; fi
"$CREC" run -- "$GUESTS/rdrand" show >"$TMP/r1" 2>/dev/null
"$CREC" run -- "$GUESTS/rdrand" show >"$TMP/r2" 2>/dev/null
if ! cmp -s "$TMP/r1" "$TMP/r2"; then pass "run: rdrand differs from run to run"
else fail "run: rdrand differs from run to run" "$(cat "$TMP/r1")"; fi

# Big reservations cost what is used, as AddressSanitizer and Go need.
same_as_native "run: 1 TiB PROT_NONE reservation, pieces committed" "@ $GUESTS/reserve"
same_as_native "run: AddressSanitizer hello world" "ASAN_OPTIONS=detect_leaks=0 @ $GUESTS/hello_asan"

# Waits that nothing ends early take their time.
same_as_native "run: timed waits" "@ $GUESTS/timed_waits"
t0=$(date +%s%N)
"$CREC" run -- sleep 0.2
t1=$(date +%s%N)
if [ $((t1 - t0)) -ge 200000000 ]; then pass "run: sleep 0.2 takes its time"
else fail "run: sleep 0.2 takes its time" "$(((t1 - t0) / 1000000)) ms"; fi

# /proc/self is the guest, not crec; the CPUs agree with the model.
same_as_native "run: /proc/self" "PROCSELF_TEST=yes @ $GUESTS/procself arg1"
# capget answers as natively; the protection key calls as on a CPU without
# them (crec's CPUID), quietly, whatever this host has: recorded, replayed
"$GUESTS/caps_pkeys" | grep '^capget' >"$TMP/caps.native"
"$CREC" record -o "$TMP/caps.crec" -- "$GUESTS/caps_pkeys" >"$TMP/caps.out" 2>"$TMP/caps.err"
rc=$?
if [ $rc = 0 ] && [ ! -s "$TMP/caps.err" ] && grep '^capget' "$TMP/caps.out" | cmp -s - "$TMP/caps.native" &&
    grep -qx 'pkey_alloc -1 EINVAL' "$TMP/caps.out" && grep -qx 'pkey_mprotect -1: 0' "$TMP/caps.out" &&
    grep -qx 'pkey_mprotect 5: -1 EINVAL' "$TMP/caps.out" && "$CREC" replay -q "$TMP/caps.crec"; then
    pass "run: capget as natively, protection keys as on a CPU without them, replayed"
else
    fail "run: capget and protection keys" "exit $rc: $(head -c 300 "$TMP/caps.err") $(head -c 300 "$TMP/caps.out")"
fi
# /dev/fd/N is the guest's descriptor N, not crec's: bash's process
# substitution passes /dev/fd/63
same_as_native "run: /dev/fd/N (bash process substitution)" \
    "@ bash -c 'join <(printf \"a 1\\nb 2\\n\") <(printf \"a 3\\nb 4\\n\"); cat /dev/stdin </etc/hostname'"
"$CREC" run -- cat /proc/self/maps >"$TMP/maps" 2>"$TMP/err"
if grep -q ' \[stack\]$' "$TMP/maps" && grep -q '/cat$' "$TMP/maps" &&
    ! grep -q 'unicorn\|crec' "$TMP/maps"; then
    pass "run: cat /proc/self/maps shows cat, not crec"
else fail "run: cat /proc/self/maps shows cat, not crec" "$(head -c 300 "$TMP/maps")"; fi
expect_eq "run: nproc is the model's" "1" "$("$CREC" run -- nproc)"
expect_eq "run: python3 os.cpu_count() is the model's" "1" \
    "$("$CREC" run -- /usr/bin/python3 -c 'import os; print(os.cpu_count())')"
expect_eq "run: /proc/cpuinfo has one processor" "1" \
    "$("$CREC" run -- grep -c '^processor' /proc/cpuinfo)"
if "$CREC" run -- grep -q '^flags.* popcnt .*rdrand' /proc/cpuinfo &&
    ! "$CREC" run -- grep -q '^flags.* avx' /proc/cpuinfo; then
    pass "run: /proc/cpuinfo flags are the CPUID table's"
else fail "run: /proc/cpuinfo flags are the CPUID table's" "$("$CREC" run -- grep flags /proc/cpuinfo)"; fi

# ioctls, extended attributes, closed standard streams, the stack limit
same_as_native "run: python3 asyncio.run()" "@ /usr/bin/python3 -c 'import asyncio
async def main():
    await asyncio.sleep(0.05)
    return 42
print(asyncio.run(main()))'"
same_as_native "run: python3 non-blocking socket and isatty" "@ /usr/bin/python3 -c 'import socket, os, fcntl, termios, struct
a, b = socket.socketpair()
a.setblocking(False)
b.sendall(b\"xyz\")
print(struct.unpack(\"i\", fcntl.ioctl(a, termios.FIONREAD, b\"    \"))[0], a.recv(9), os.isatty(a.fileno()))
try:
    a.recv(9)
except BlockingIOError:
    print(\"would block\")'"
echo abc >"$TMP/x.txt"
expect_status "run: sed -i says nothing" 0 "$CREC" run -- sed -i s/a/b/ "$TMP/x.txt"
expect_eq "run: sed -i output, stderr empty" "bbc|" "$(cat "$TMP/x.txt")|$(cat "$TMP/err")"
expect_status "run: cp -a says nothing" 0 "$CREC" run -- cp -a "$TMP/x.txt" "$TMP/y.txt"
expect_eq "run: cp -a stderr empty" "" "$(cat "$TMP/err")"
expect_status "run: an unknown ioctl is refused with --strict" 125 \
    "$CREC" run --strict -- perl -e 'ioctl(STDIN, 0x7fff, my $x)'
one_error_line "run: --strict ioctl is one error line"
expect_status "run: an unknown ioctl shows under --strace" 0 \
    "$CREC" run --strace -- perl -e 'ioctl(STDIN, 0x7fff, my $x)'
if grep -q '^crec: ioctl 0x7fff on fd 0 is not emulated' "$TMP/err"; then
    pass "run: --strace names the ioctl"
else fail "run: --strace names the ioctl" "$(grep ioctl "$TMP/err" | head -3)"; fi
same_as_native "run: closed stdout fails as natively" "@ /bin/echo hi >&-"
same_as_native "run: closed stdin" "@ cat <&-"
same_as_native "run: deep recursion with ulimit -s 65536" "ulimit -s 65536; @ $GUESTS/deep_stack"
same_as_native "run: deep recursion overflows 8 MiB" "ulimit -s 8192; @ $GUESTS/deep_stack"
if grep -q 'stack overflow (write to unmapped 0x.*below the 8192 KiB stack' "$TMP/emu.err"; then
    pass "run: stack overflow is reported as one"
else fail "run: stack overflow is reported as one" "$(cat "$TMP/emu.err")"; fi

expect_status "run: rdtsc guest" 0 "$CREC" run -- "$GUESTS/rdtsc" show
first=$(cat "$TMP/out")
expect_eq "run: rdtsc is virtual" "increasing=1 virtual=1" "$(tail -n 1 "$TMP/out")"
"$CREC" run -- "$GUESTS/rdtsc" show >"$TMP/out2" 2>/dev/null
expect_eq "run: rdtsc is deterministic" "$first" "$(cat "$TMP/out2")"

expect_status "run: --strace" 0 "$CREC" run --strace -- /bin/echo hi
if grep -q '^write(1, "hi\\n", 3) = 3$' "$TMP/err"; then pass "run: --strace shows write"
else fail "run: --strace shows write" "$(tail -n 3 "$TMP/err")"; fi
expect_status "run: --stats" 0 "$CREC" run --stats -- /bin/true
if grep -q '^crec: [0-9]* instructions in .* MIPS$' "$TMP/err"; then pass "run: --stats line"
else fail "run: --stats line" "$(cat "$TMP/err")"; fi

# inotify_init1 (294) is not emulated: one message, -ENOSYS, or exit 125 with --strict.
expect_status "run: unsupported syscall" 0 "$CREC" run -- perl -e 'syscall(294, 0) == -1 or exit 1'
if grep -q "^crec: unsupported syscall 'inotify_init1' (294), returning -ENOSYS$" "$TMP/err"; then
    pass "run: unsupported syscall message"
else fail "run: unsupported syscall message" "$(cat "$TMP/err")"; fi
expect_status "run: --strict stops at it" 125 "$CREC" run --strict -- perl -e 'syscall(294, 0)'
one_error_line "run: --strict is one error line"
