#!/usr/bin/env python3
"""Draws `tapevm adbench gmm --json` results with matplotlib: ADBench's figure, the gradient /
objective time ratio of each instance (d, K, n, threads), one series per implementation
(tapevm's ReducedTape, the hand-written gradient, ADOL-C), log scale, with issue 22's target
(ratio 3) as a line. Reads any number of JSON files (one instance each); the format follows
the output's extension (.svg, .png, .pdf). Needs matplotlib (Debian: python3-matplotlib).

    for s in 2,5,1000 10,25,1000 20,50,1000; do
        tapevm adbench gmm $s --threads 1 --json gmm_$s.json; done
    python3 bench/plot_gmm.py gmm_*.json -o gmm.svg

In an SVG each series is the group <g id="series:NAME"> (matplotlib's gid).
"""

import argparse
import json
import sys

SERIES = (("tapevm", "tapevm (ReducedTape)"), ("hand_written", "hand-written f64"), ("adolc", "ADOL-C"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="JSON files of tapevm adbench gmm --json")
    parser.add_argument("-o", "--output", required=True, help="the plot (.svg, .png or .pdf)")
    args = parser.parse_args()
    results = []
    for path in args.inputs:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        if not isinstance(record, dict) or record.get("problem") != "gmm":
            print(f"{path}: not a tapevm adbench gmm result", file=sys.stderr)
            return 1
        results.append(record)
    results.sort(key=lambda r: (r["threads"], r["d"], r["k"], r["n"]))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"d{r['d']} K{r['k']} n{r['n']}\n{r['threads']} thr" for r in results]
    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(results) + 2), 4.5))
    for key, name in SERIES:
        xs = [i for i, r in enumerate(results) if isinstance(r.get(key), dict) and "ratio" in r[key]]
        ys = [results[i][key]["ratio"] for i in xs]
        if xs:
            (line,) = axes.plot(xs, ys, marker="o", linestyle="none", label=name)
            line.set_gid(f"series:{name}")
    axes.axhline(3.0, color="grey", linestyle="--", linewidth=1, label="target (3)")
    axes.set_yscale("log")
    axes.set_xticks(range(len(results)))
    axes.set_xticklabels(labels, fontsize=7)
    axes.set_ylabel("gradient time / objective time")
    axes.set_title("ADBench GMM: gradient / objective")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
