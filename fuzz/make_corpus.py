#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, fuzz/corpus/<target>/ (README.md).

    fuzz/make_corpus.py [--tapevm build/src/cli/tapevm]

It also writes fuzz/tape.dict (libFuzzer's dictionary of the .tape format, from the op table).
Each corpus is a few valid files and the malformed cases the tests spell out by hand, all
small (libFuzzer's default input size limit is the largest seed). Files the project can
write come from its own writers, through the release build's `tapevm`: .tape files (`tapevm
example`), bench inputs files (`tapevm bench --write-inputs`) and one kernel-cache entry (the
compiled GPU backend on whatever Vulkan device there is; skipped without one). The rest is
spelled out here from each format's description: CSV text, ADBench BA files, safetensors
files (as the Python package writes them), hand-made tapes that use every op, guards and
parameters, and kernel-cache entries around a trimmed real one.

The script rewrites fuzz/corpus/ from scratch; run it after a format changes and commit the
result.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
sys.path.insert(0, str(ROOT / "src" / "tape"))
import op_table  # noqa: E402  (the op numbers and arities, as the .tape files store them)


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def run(tapevm, *args, env=None):
    subprocess.run([str(tapevm), *args], check=True, stdout=subprocess.DEVNULL, env=env)


# ------------------------------------------------------------------------------------------
# .tape files (src/tape/tapevm/tape_file.hpp)

def tape_image(inputs, params, instructions, constants, outputs, guards, version=1, flags=0, crc=None):
    body = b"TAPEVM\r\n" + struct.pack("<8I", version, flags, inputs, params, len(instructions),
                                       len(constants), len(outputs), len(guards))
    for ins in instructions:
        body += struct.pack("<4I", *(list(ins) + [0, 0, 0])[:4])
    body += b"".join(struct.pack("<d", c) for c in constants)
    body += b"".join(struct.pack("<I", o) for o in outputs)
    body += b"".join(struct.pack("<2I", s, e) for s, e in guards)
    return body + struct.pack("<I", zlib.crc32(body) if crc is None else crc)


def every_op_tape():
    """3 inputs, 1 parameter, 2 constants, then each op of the table once (Powi twice) on
    the leading slots; every result an output, one guard on a comparison."""
    ops = {o["name"]: o for o in op_table.OPS}
    instructions = [(ops["Input"]["number"], 0), (ops["Input"]["number"], 1), (ops["Input"]["number"], 2),
                    (ops["Param"]["number"], 0), (ops["Const"]["number"], 0), (ops["Const"]["number"], 1)]
    outputs, guards = [], []
    for o in op_table.OPS:
        if "leaf" in o["flags"]:
            continue
        if "immediate" in o["flags"]:
            for exponent in (3, -2):
                instructions.append((o["number"], 1, exponent & 0xFFFFFFFF))
                outputs.append(len(instructions) - 1)
            continue
        operands = [0, 3, 5][:o["arity"]] if o["name"] != "Select" else [len(instructions) - 1, 1, 2]
        instructions.append((o["number"], *operands))
        outputs.append(len(instructions) - 1)
        if "comparison" in o["flags"] and not guards:
            guards.append((len(instructions) - 1, 1))
    return tape_image(3, 1, instructions, [0.5, -2.0], outputs, guards)


def tape_dictionary():
    """fuzz/tape.dict: the words the format gives meaning to (ops, int32 limits, special doubles)."""
    def quoted(data):
        return '"' + "".join(f"\\x{byte:02x}" for byte in data) + '"'
    lines = ["# libFuzzer dictionary of fuzz_tape (fuzz/run.sh passes it), written by make_corpus.py:",
             "# little-endian words the .tape format gives meaning to.", "magic=" + quoted(b"TAPEVM\r\n")]
    lines += [f"op_{o['name'].lower()}={quoted(struct.pack('<I', o['number']))}" for o in op_table.OPS]
    for name, word in (("int32_min", 0x80000000), ("int32_min_plus_1", 0x80000001), ("int32_max", 0x7FFFFFFF),
                       ("minus_one", 0xFFFFFFFF), ("minus_two", 0xFFFFFFFE), ("one", 1), ("two", 2)):
        lines.append(f"{name}={quoted(struct.pack('<I', word))}")
    for name, value in (("nan", float("nan")), ("inf", float("inf")), ("minus_inf", float("-inf")),
                        ("minus_zero", -0.0), ("denormal_min", 5e-324), ("double_max", 1.7976931348623157e308),
                        ("one_f64", 1.0), ("minus_one_f64", -1.0)):
        lines.append(f"{name}={quoted(struct.pack('<d', value))}")
    (ROOT / "fuzz" / "tape.dict").write_text("\n".join(lines) + "\n")


def tape_corpus(tapevm, work):
    for name in ("ba", "ba-param", "rosenbrock16", "trig16"):
        path = work / (name + ".tape")
        run(tapevm, "example", name, "--out", str(path))
        write("tape", f"example_{name}.tape", path.read_bytes())
    write("tape", "empty.tape", tape_image(0, 0, [], [], [], []))
    write("tape", "every_op.tape", every_op_tape())
    lt, select, mul, param = (next(o["number"] for o in op_table.OPS if o["name"] == n)
                              for n in ("Lt", "Select", "Mul", "Param"))
    # f(x, y; p) = x < y ? x * p : y, recorded with x < y: one guard, one output.
    write("tape", "guarded.tape",
          tape_image(2, 1, [(0, 0), (0, 1), (param, 0), (lt, 0, 1), (mul, 0, 2), (select, 3, 4, 1)],
                     [], [5], [(3, 1)]))
    write("tape", "constants_extreme.tape",
          tape_image(1, 0, [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3), (mul, 0, 1), (mul, 2, 3)],
                     [float("inf"), float("nan"), -0.0, 5e-324], [5, 6, 4], []))
    # Hand-made bad cases of tests/test_tape_file.cpp (the target recomputes the checksum,
    # so a bad checksum alone is not among them).
    write("tape", "bad_magic.tape", b"TAPEVN\r\n" + tape_image(0, 0, [], [], [], [])[8:])
    write("tape", "bad_version.tape", tape_image(0, 0, [], [], [], [], version=2))
    write("tape", "bad_flags.tape", tape_image(0, 0, [], [], [], [], flags=1))
    write("tape", "bad_forward_operand.tape", tape_image(1, 0, [(0, 0), (2, 0, 2)], [], [1], []))
    write("tape", "bad_const_index.tape", tape_image(1, 0, [(0, 0), (1, 3)], [1.0], [1], []))
    write("tape", "bad_output_slot.tape", tape_image(1, 0, [(0, 0)], [], [7], []))
    write("tape", "bad_guard_expected.tape", tape_image(2, 0, [(0, 0), (0, 1), (lt, 0, 1)], [], [2], [(2, 2)]))
    write("tape", "truncated.tape", tape_image(1, 0, [(0, 0)], [], [0], [])[:50])


# ------------------------------------------------------------------------------------------
# bench inputs files (bench/inputs_file.hpp)

def bench_inputs_corpus(tapevm, work):
    for workload, mode, points in (("rosenbrock16", "gradient", 3), ("trig16", "forward", 2),
                                   ("ba", "jacobian", 2), ("mlp16", "forward", 1)):
        path = work / f"{workload}.bin"
        run(tapevm, "bench", "--workload", workload, "--mode", mode, "--points", str(points),
            "--write-inputs", str(path))
        write("bench_inputs", f"{workload}_{mode}_{points}.bin", path.read_bytes())
    good = (CORPUS / "bench_inputs" / "rosenbrock16_gradient_3.bin").read_bytes()
    write("bench_inputs", "bad_truncated.bin", good[:-5])
    write("bench_inputs", "bad_mode.bin", good[:24] + struct.pack("<I", 3) + good[28:])


# ------------------------------------------------------------------------------------------
# CSV (src/cli/csv.hpp). The target's first byte: columns - 1 in the low 3 bits, f32 when
# the high bit is set.

def csv_corpus():
    cases = {
        "three_columns.csv": (3, False, "1,2,3\n4.5,-6e3,+7\n"),
        "three_columns_f32.csv": (3, True, "1,2,3\n4.5,-6e3,+7\n"),
        "bom_crlf_specials.csv": (1, False, "\xef\xbb\xbf1\r\n\r\n nan \r\n-inf\n+inf\n"),
        "blanks_no_final_newline.csv": (2, False, " 1 ,\t2\n\n \t\n3,4"),
        "extremes.csv": (4, False, "1.7976931348623157e308,2.2250738585072014e-308,4.9e-324,-0\n"),
        "extremes_f32.csv": (2, True, "3.40282347e+38,1.40129846e-45\n-0,1e-38\n"),
        "eight_columns.csv": (8, False, "0,1,2,3,4,5,6,7\n0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8\n"),
        # Hand-made bad cases (tests/test_cli.cpp and csv.hpp's rules).
        "bad_count.csv": (2, False, "1,2,3\n"),
        "bad_value.csv": (1, False, "x\n"),
        "bad_range.csv": (1, False, "1e999\n"),
        "bad_range_f32.csv": (1, True, "1e39\n"),
        "bad_empty_value.csv": (2, False, "1,\n"),
        "bad_signs.csv": (2, False, "++1,+-1\n"),
    }
    for name, (columns, f32, text) in cases.items():
        write("csv", name, bytes([(columns - 1) | (0x80 if f32 else 0)]) + text.encode("latin-1"))


# ------------------------------------------------------------------------------------------
# ADBench BA files (bench/adbench_reader.hpp)

def ba_corpus():
    shutil.copy(ROOT / "bench" / "data" / "adbench" / "test.txt", CORPUS / "ba" / "ba_test.txt")
    shutil.copy(ROOT / "bench" / "data" / "adbench" / "ba1_n49_m7776_p31843.txt", CORPUS / "ba" / "ba1.txt")
    write("ba", "small.txt", "2 3 7 0.1 0.2 0.3 4 5 6 2e2 -0.25 0.5 0.01 0.02 1.5 2.5 3.5 0.75 -12.5 33.25")
    write("ba", "one.txt", "1 1 1\n0 0 0 0 0 1 1 0 0 0 0\n0 0 1\n1\n0 0\n")
    # Hand-made bad cases of tests/bench/test_adbench_reader.cpp.
    write("ba", "bad_fraction.txt", "2 3 7.5")
    write("ba", "bad_limit.txt", "2 3 67108865")
    write("ba", "bad_cameras.txt", "9 3 7")
    write("ba", "bad_value.txt", "2 3 7\n0.1 0.2 0.3 4 5 6 nan")
    write("ba", "bad_separator.txt", "2 3 7\n0.1 0.2 0.3 4 5 6 200 -0.25 0.5 0.01 0.02\n1.5 2.5,3.5")
    write("ba", "bad_bytes.txt", b"2 3 7\n\x01\x02")


# ------------------------------------------------------------------------------------------
# safetensors (src/nn/io/tapevm/nn/safetensors.hpp)

def safetensors(header, data=b"", length=None, pad=True):
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def tensors_file(tensors, metadata=None):
    """The Python package's layout: metadata first, data in the order given."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return safetensors(header, data)


def safetensors_corpus():
    write("safetensors", "reference.safetensors",
          tensors_file([("w", "F32", [2], struct.pack("<2f", 1.0, -2.5)), ("i", "I32", [], struct.pack("<i", 7))],
                       {"format": "pt"}))
    write("safetensors", "every_tapevm_dtype.safetensors", tensors_file([
        ("a.f64", "F64", [2], struct.pack("<2d", 0.5, float("-inf"))),
        ("b.f32", "F32", [1, 2], struct.pack("<2f", 3.0, float("nan"))),
        ("c.i32", "I32", [3], struct.pack("<3i", -1, 0, 2**31 - 1)),
        ("d.bf16", "BF16", [2], bytes([0x80, 0x3f, 0x00, 0xc0])),
        ("e.f16", "F16", [2, 1], bytes([0x00, 0x3c, 0x00, 0x7c]))]))
    write("safetensors", "other_dtypes.safetensors", tensors_file([
        ("i64", "I64", [1], struct.pack("<q", -5)), ("u8", "U8", [3], b"\x01\x02\x03"),
        ("bool", "BOOL", [2], b"\x00\x01"), ("c64", "C64", [1], struct.pack("<2f", 1, 2))]))
    write("safetensors", "zero_sized.safetensors",
          tensors_file([("empty", "F32", [0, 4], b""), ("scalar", "F64", [], struct.pack("<d", 1.0))]))
    write("safetensors", "empty.safetensors", safetensors({}))
    write("safetensors", "metadata_only.safetensors", safetensors({"__metadata__": {"step": "100", "é": "ü"}}))
    # Hand-made bad cases of tests/nn/io/test_nn_safetensors.cpp.
    one = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    write("safetensors", "bad_short.safetensors", bytes(5))
    write("safetensors", "bad_length.safetensors", safetensors(one, bytes(8), length=2**63))
    write("safetensors", "bad_truncated.safetensors", safetensors(one, bytes(7)))
    write("safetensors", "bad_trailing.safetensors", safetensors(one, bytes(9)))
    write("safetensors", "bad_overlap.safetensors", safetensors(
        b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        bytes(8)))
    write("safetensors", "bad_duplicate.safetensors", safetensors(
        b'{"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}', bytes(4)))
    write("safetensors", "bad_overflow.safetensors", safetensors(
        b'{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'))
    write("safetensors", "bad_nesting.safetensors", safetensors(b'{"a":[[[[[[1]]]]]]}'))
    write("safetensors", "bad_utf8.safetensors", safetensors(b'{"a\xff":1}'))


# ------------------------------------------------------------------------------------------
# kernel-cache entries (src/vm_gpu/disk_cache.hpp): 32-byte header (magic "tvcache2", key
# length, payload length, XXH64(payload, seed XXH64(key))), key, payload.

MASK = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                      0x27D4EB2F165667C5)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def xxh64(data, seed=0):
    def round64(acc, lane):
        return (rotl((acc + lane * P2) & MASK, 31) * P1) & MASK

    p, n = 0, len(data)
    if n >= 32:
        v = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed, (seed - P1) & MASK]
        while n - p >= 32:
            v = [round64(v[i], struct.unpack_from("<Q", data, p + 8 * i)[0]) for i in range(4)]
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & MASK
        for lane in v:
            h = (((h ^ round64(0, lane)) * P1) + P4) & MASK
    else:
        h = (seed + P5) & MASK
    h = (h + n) & MASK
    while n - p >= 8:
        h = (rotl(h ^ round64(0, struct.unpack_from("<Q", data, p)[0]), 27) * P1 + P4) & MASK
        p += 8
    if n - p >= 4:
        h = (rotl(h ^ ((struct.unpack_from("<I", data, p)[0] * P1) & MASK), 23) * P2 + P3) & MASK
        p += 4
    while p < n:
        h = (rotl(h ^ ((data[p] * P5) & MASK), 11) * P1) & MASK
        p += 1
    h ^= h >> 33
    h = (h * P2) & MASK
    h ^= h >> 29
    h = (h * P3) & MASK
    return h ^ (h >> 32)


def cache_entry(key, payload):
    key = key.encode()
    return b"tvcache2" + struct.pack("<3Q", len(key), len(payload), xxh64(payload, xxh64(key))) + key + payload


def check_entry(entry):
    key_bytes, payload_bytes, checksum = struct.unpack_from("<3Q", entry, 8)
    key, payload = entry[32:32 + key_bytes], entry[32 + key_bytes:]
    if len(payload) != payload_bytes or xxh64(payload, xxh64(key)) != checksum:
        sys.exit("make_corpus.py: this script's XXH64 disagrees with a cache entry tapevm wrote")


def kernel_cache_corpus(tapevm, work):
    # The entries the compiled backend writes for the ba example (lavapipe compiles kernels
    # only with its optimiser off: GALLIVM_PERF=nopt).
    cache = work / "cache"
    env = dict(os.environ, TAPEVM_CACHE_DIR=str(cache), GALLIVM_PERF="nopt")
    run(tapevm, "example", "ba", "--out", str(work / "ba.tape"))
    (work / "x.csv").write_text(",".join(["0.5"] * 15) + "\n")
    try:
        run(tapevm, "eval", str(work / "ba.tape"), "--inputs", str(work / "x.csv"), "--mode", "jacobian",
            "--backend", "compiled", env=env)
    except subprocess.CalledProcessError:
        print("make_corpus.py: no compiled GPU backend here: kernel_cache gets only hand-made entries")
    kernel = None
    for entry_file in sorted(cache.glob("*.bin")) if cache.is_dir() else []:
        entry = entry_file.read_bytes()
        check_entry(entry)
        key = entry[32:32 + struct.unpack_from("<Q", entry, 8)[0]].decode()
        if len(entry) <= 4096:
            write("kernel_cache", key.split("-")[0] + "_written_by_tapevm.bin", entry)
        elif key.startswith("kernel-"):
            kernel = (key, entry[32 + len(key):])
    if kernel is not None:  # the sizes and the first words of its SPIR-V: a short real payload
        write("kernel_cache", "kernel_trimmed.bin", cache_entry(kernel[0], kernel[1][:16 + 4 * 64]))
    spirv_head = struct.pack("<2Q", 12, 3) + struct.pack("<5I", 0x07230203, 0x00010500, 0, 64, 0)
    write("kernel_cache", "kernel_small.bin", cache_entry("kernel-0123456789abcdef0123456789abcdef-f64", spirv_head))
    write("kernel_cache", "identifier_small.bin",
          cache_entry("identifier-dev-00000001-kernel-0123456789abcdef-f32", bytes(range(32)) + bytes(16)))
    write("kernel_cache", "empty_payload.bin", cache_entry("k", b""))
    write("kernel_cache", "empty_key.bin", cache_entry("", b"payload"))
    good = cache_entry("kernel-0123456789abcdef0123456789abcdef-f64", spirv_head)
    write("kernel_cache", "bad_magic.bin", b"tvcache1" + good[8:])
    write("kernel_cache", "bad_payload_length.bin", good[:16] + struct.pack("<Q", 999) + good[24:])
    write("kernel_cache", "bad_key_length.bin", good[:8] + struct.pack("<Q", 2**64 - 1) + good[16:])
    write("kernel_cache", "bad_truncated_header.bin", good[:20])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tapevm", default=str(ROOT / "build" / "src" / "cli" / "tapevm"),
                        help="the tapevm program that writes .tape, inputs and cache files")
    tapevm = Path(parser.parse_args().tapevm)
    if not tapevm.is_file():
        sys.exit(f"make_corpus.py: {tapevm} not found: build it first (ninja -C build src/cli/tapevm)")
    shutil.rmtree(CORPUS, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        tape_corpus(tapevm, work)
        tape_dictionary()
        bench_inputs_corpus(tapevm, work)
        csv_corpus()
        (CORPUS / "ba").mkdir(parents=True)
        ba_corpus()
        safetensors_corpus()
        kernel_cache_corpus(tapevm, work)
    for folder in sorted(CORPUS.iterdir()):
        files = list(folder.iterdir())
        print(f"{folder.relative_to(ROOT)}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
