"""python3 start-up plus a small script, for make bench: count N generated
words and print the most common ones.  The output is the same on every run
(nothing depends on hash order)."""
import collections
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
words = ["w%d" % (i * 7919 % 5000) for i in range(n)]
counts = collections.Counter(words)
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
print(len(counts), ranked[:3], len(repr(ranked)))
