#!/usr/bin/env python3
"""Rebuild every tests/corrupt/*.hex case from a fresh sample recording.

usage: regen.py GOOD.crec OUTDIR

GOOD.crec is `build/tools/mksample GOOD.crec 1 4096`.  Each case applies
the change its comment describes to that file; the expected messages that
name a byte offset are computed from the new layout.  Run it when a record
layout changes (before the format is frozen by traces-sample/).
"""
import struct
import sys

FROM = "# from: hand-made from the sample of tests/tools/sample.h (1 thread, chunk size 4096)"
STREAMS = {1: "HEADER", 2: "READS", 3: "EVENTS", 5: "KEYFRAMES", 7: "BLOBS", 8: "CODE",
           11: "DIRECTORY"}


def chunks(data):
    """(offset, type, clen) of every chunk frame, from offset 16 to the trailer."""
    out, off = [], 16
    while off + 40 <= len(data) - 32 and data[off:off + 4] == b"CRCK":
        ctype = data[off + 4]
        clen = struct.unpack_from("<I", data, off + 24)[0]
        out.append((off, ctype, clen))
        off += 40 + clen
    return out


def first(cs, name):
    return next(c for c in cs if STREAMS.get(c[1]) == name)


def dump(path, comment, expect, data):
    with open(path, "w") as f:
        f.write(f"# {comment}\n{FROM}\n# expect: {expect}\n")
        for i in range(0, len(data), 16):
            f.write("%04x: %s\n" % (i, " ".join("%02x" % b for b in data[i:i + 16])))


def patched(data, at, new):
    b = bytearray(data)
    b[at:at + len(new)] = new
    return bytes(b)


def main():
    good = open(sys.argv[1], "rb").read()
    out = sys.argv[2]
    cs = chunks(good)
    reads, events, blobs, code = (first(cs, n) for n in ("READS", "EVENTS", "BLOBS", "CODE"))
    header, directory = cs[0], first(cs, "DIRECTORY")
    cases = [
        ("good", "a complete, valid recording: the base of the other cases", "ok", good),
        ("bad_magic", "second magic byte changed", "bad magic", patched(good, 1, b"X")),
        ("chunk_checksum", "one payload byte of the READS chunk flipped, directory intact",
         "checksum mismatch in stream READS thread 1 chunk 0",
         patched(good, reads[0] + 41, bytes([good[reads[0] + 41] ^ 0xff]))),
        ("chunk_len_ffffffff", "compressed length of the BLOBS chunk set to 0xffffffff",
         f"chunk length 4294967295 out of range at offset {blobs[0]}",
         patched(good, blobs[0] + 24, b"\xff\xff\xff\xff")),
        ("chunk_type_unknown", "stream type 99 in the CODE chunk frame",
         f"unknown stream type 99 at offset {code[0]}", patched(good, code[0] + 4, b"\x63")),
        ("cut_mid_chunk", "cut inside the EVENTS chunk", "truncated",
         good[:events[0] + 40 + events[2] // 2]),
        ("header_chunk_is_blobs", "the first chunk claims to be BLOBS", "checksum mismatch",
         patched(good, header[0] + 4, b"\x07")),
        ("header_cut", "file cut inside the HEADER chunk", "truncated inside the header",
         good[:header[0] + 40 + header[2] // 2]),
        ("no_directory", "directory and trailer missing", "truncated", good[:directory[0]]),
        ("no_trailer", "trailer missing: the recorder was killed while closing", "truncated",
         good[:-32]),
        ("reserved_nonzero", "reserved preamble word not zero",
         "reserved header field is not zero", patched(good, 12, b"\x01")),
        ("shared_stream_has_process", "the BLOBS chunk names process 1 (chunk bytes 5-7)",
         (f"shared stream BLOBS has process 1 at offset {blobs[0]}" if good[8] >= 3 else
          f"reserved chunk bytes not zero at offset {blobs[0]}"),
         patched(good, blobs[0] + 5, b"\x01")),
        ("too_short", "file cut inside the preamble", "too short for a recording", good[:10]),
        ("trailer_damaged", "last trailer magic byte damaged: recovered by the scan", "truncated",
         patched(good, len(good) - 2, b"X")),
        ("version_9", "format version 9", "unsupported format version 9 (this crec reads 1 to 5)",
         patched(good, 8, b"\x09\x00\x00\x00")),
        ("version_0", "format version 0", "unsupported format version 0 (this crec reads 1 to 5)",
         patched(good, 8, b"\x00\x00\x00\x00")),
        ("version_big_endian", "format version 2 written big-endian",
         "unsupported format version 33554432 (this crec reads 1 to 5)",
         patched(good, 8, b"\x00\x00\x00\x02")),
    ]
    for name, comment, expect, data in cases:
        dump(f"{out}/{name}.hex", comment, expect, data)


if __name__ == "__main__":
    main()
