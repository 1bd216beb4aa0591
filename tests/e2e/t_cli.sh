# The crec command line itself: help, unknown commands, bad arguments.
. "$E2E_DIR/lib.sh"

expect_status "cli: --help exits 0" 0 "$CREC" --help
for cmd in $("$CREC" --help | sed -n 's/^  \([a-z]*\)  .*/\1/p'); do
    expect_status "cli: $cmd --help exits 0" 0 "$CREC" "$cmd" --help
done
twice=$("$CREC" --help | sed -n 's/^  \([a-z]*\)  .*/\1/p' | sort | uniq -d | tr '\n' ' ')
expect_eq "cli: --help lists each command once" "" "$twice"
expect_status "cli: no command exits 2" 2 "$CREC"
expect_status "cli: unknown command exits 2" 2 "$CREC" frobnicate
one_error_line "cli: unknown command is one error line"
expect_status "cli: bad run option exits 2" 2 "$CREC" run --no-such-option
one_error_line "cli: bad run option is one error line"
expect_status "cli: bad info option exits 2" 2 "$CREC" info --no-such-option x
one_error_line "cli: bad info option is one error line"
for cmd in $("$CREC" --help | sed -n 's/^  \([a-z]*\)  .*/\1/p'); do
    expect_status "cli: $cmd with an unknown option exits 2" 2 "$CREC" "$cmd" --no-such-option x y
    one_error_line "cli: $cmd with an unknown option is one error line"
done
expect_status "cli: an option without its value exits 2" 2 "$CREC" query x.crec rip@0 --size
one_error_line "cli: an option without its value is one error line"
