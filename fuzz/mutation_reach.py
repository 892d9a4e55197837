#!/usr/bin/env python3
"""Where random one-byte mutations of a .tape file stop in the loader, with the stored CRC-32
left as it is and with it recomputed (what fuzz_tape does), counted by the field `tapevm
inspect` names in its error (issue 24's figure: 400 mutations, 367 stopped at the checksum).

    fuzz/mutation_reach.py [--tapevm build/src/cli/tapevm] [--count 400] [TAPE]
"""
import argparse
import collections
import random
import re
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stage(tapevm, image, scratch):
    path = Path(scratch) / "mutated.tape"
    path.write_bytes(image)
    run = subprocess.run([str(tapevm), "inspect", str(path)], capture_output=True, text=True)
    if run.returncode == 0:
        return "loads (a valid tape)"
    field = re.search(r"byte \d+: ([a-z_]+)", run.stderr)
    return {"header": "header checks", "checksum": "checksum", "trailing": "size check"}.get(
        field.group(1) if field else "?", "tape checks (instructions, constants, outputs, guards)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tapevm", default=str(ROOT / "build" / "src" / "cli" / "tapevm"))
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("tape", nargs="?", default=str(ROOT / "fuzz" / "corpus" / "tape" / "example_trig16.tape"))
    args = parser.parse_args()
    original = Path(args.tape).read_bytes()
    rng = random.Random(1)
    counts = {"CRC kept": collections.Counter(), "CRC recomputed": collections.Counter()}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.count):
            image = bytearray(original)
            at = rng.randrange(len(image))
            image[at] = (image[at] + rng.randrange(1, 256)) % 256
            counts["CRC kept"][stage(args.tapevm, bytes(image), scratch)] += 1
            image[-4:] = struct.pack("<I", zlib.crc32(bytes(image[:-4])))
            counts["CRC recomputed"][stage(args.tapevm, bytes(image), scratch)] += 1
    print(f"{args.count} one-byte mutations of {Path(args.tape).name} ({len(original)} bytes):")
    for name, counter in counts.items():
        print(f"  {name}: " + ", ".join(f"{n} stop at the {stage}" if not stage.startswith("loads") else f"{n} {stage}"
                                        for stage, n in counter.most_common()))


if __name__ == "__main__":
    main()
