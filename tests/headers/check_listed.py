#!/usr/bin/env python3
"""Fails when a header in a public header folder (src/tape/tapevm, src/vm_cpu/tapevm, ...) is
missing from its list in tests/headers/meson.build.

usage: check_listed.py HEADER_DIR LISTED...
op.hpp is generated into the build folder, so it is listed without being in HEADER_DIR.
"""
import pathlib
import sys


def main() -> int:
    header_dir = pathlib.Path(sys.argv[1])
    listed = set(sys.argv[2:])
    present = {path.name for path in header_dir.glob("*.hpp")}
    unlisted = sorted(present - listed)
    if unlisted:
        print(f"public headers in {header_dir} missing from tests/headers/meson.build: "
              + ", ".join(unlisted))
        return 1
    print(f"{len(present)} headers in {header_dir}, all listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
