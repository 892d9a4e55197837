#!/usr/bin/env python3
"""Draws `tapevm bench --json` records with matplotlib: ns per point against points (batch size),
log-log, one chart per workload, one line per backend / precision / threads (and mode, when a
workload was measured in several), so the batch size where the GPU overtakes the CPU shows as
lines crossing. Reads any number of JSON files (tapevm's and bench/jax_bench.py's records have
the same fields). Needs matplotlib (Debian: python3-matplotlib); the format follows the output's
extension (.svg, .png, .pdf).

    tapevm bench --workload all --backend cpu,gpu,native-simd --points 1024,16384,262144,4194304 --json run.json
    python3 bench/plot.py run.json jax.json -o bench.svg

In an SVG each chart is the group <g id="chart:WORKLOAD"> and each line the group
<g id="series:WORKLOAD:LABEL"> (matplotlib's gid), holding the line's path and one marker per
record, so a test or a script can read the plot back (tests/bench/test_adbench_plot.cpp).
"""

import argparse
import json
import math
import sys


def load_records(paths):
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON array of records")
        for record in data:
            if not isinstance(record, dict):
                continue
            points, ns = record.get("points"), record.get("ns_per_point")
            if not isinstance(points, (int, float)) or not isinstance(ns, (int, float)):
                continue
            if points <= 0 or ns <= 0 or not math.isfinite(ns):
                continue
            records.append(record)
    return records


def series_label(record, modes_in_workload):
    threads = record.get("threads", 1)
    label = f"{record.get('backend', '?')} {record.get('precision', '?')} {threads}t"
    if len(modes_in_workload) > 1:
        label += f" {record.get('mode', '?')}"
    return label


def group(records):
    """{workload: {label: [(points, ns_per_point, record), ...] sorted by points}}"""
    modes = {}
    for r in records:
        modes.setdefault(r.get("workload", "?"), set()).add(r.get("mode", "?"))
    charts = {}
    for r in records:
        workload = r.get("workload", "?")
        label = series_label(r, modes[workload])
        charts.setdefault(workload, {}).setdefault(label, []).append((r["points"], r["ns_per_point"], r))
    for lines in charts.values():
        for values in lines.values():
            values.sort(key=lambda v: v[0])
    return charts


def render(records, title, output):
    """Writes the figure to `output` (format from its extension)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text stays text in an SVG, and the file is the same for the same records (no date, fixed
    # ids), so plots can be diffed and read back.
    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "tapevm"
    charts = group(records)
    rows = max(1, len(charts))
    figure, axes = plt.subplots(rows, 1, figsize=(9, 4.2 * rows), squeeze=False)
    figure.suptitle(title)
    if not charts:
        axes[0][0].text(0.5, 0.5, "no records", ha="center", va="center", transform=axes[0][0].transAxes)
        axes[0][0].set_axis_off()
    for row, workload in enumerate(sorted(charts)):
        ax = axes[row][0]
        ax.set_gid(f"chart:{workload}")
        ax.set_title(workload, fontweight="bold")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("points (batch size)")
        ax.set_ylabel("ns per point")
        ax.grid(True, which="major", color="#ddd")
        for label, values in sorted(charts[workload].items()):
            (line,) = ax.plot([p for p, _, _ in values], [ns for _, ns, _ in values], marker="o",
                              markersize=4, linewidth=2, label=label)
            line.set_gid(f"series:{workload}:{label}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    figure.tight_layout()
    figure.savefig(output, metadata={"Date": None} if output.endswith(".svg") else None)
    plt.close(figure)
    return charts


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="+", help="tapevm bench --json (or jax_bench.py) output files")
    parser.add_argument("-o", "--output", default="bench.svg",
                        help="the plot to write, SVG or PNG by extension (default bench.svg)")
    parser.add_argument("--title", default="tapevm bench: ns per point against batch size (log-log)")
    args = parser.parse_args(argv)
    try:
        records = load_records(args.json)
    except (OSError, ValueError) as error:
        print(f"plot.py: error: {error}", file=sys.stderr)
        return 2
    try:
        charts = render(records, args.title, args.output)
    except ImportError as error:
        print(f"plot.py: error: {error} (install matplotlib: apt install python3-matplotlib)", file=sys.stderr)
        return 2
    series = sum(len(lines) for lines in charts.values())
    print(f"wrote {args.output}: {len(records)} records, {series} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
