#!/usr/bin/env python3
"""Draws `tapevm bench --json` records as an SVG: ns per point against points (batch size),
log-log, one chart per workload, one line per backend / precision / threads (and mode, when a
workload was measured in several), so the batch size where the GPU overtakes the CPU shows as
lines crossing. Reads any number of JSON files (tapevm's and bench/jax_bench.py's records have
the same fields). Python 3 standard library only: the SVG is written by hand.

    tapevm bench --workload all --backend cpu,gpu,native-simd --points 1024,16384,262144,4194304 --json run.json
    python3 bench/plot.py run.json jax.json -o bench.svg

Each line is an SVG group <g class="series" data-workload=W data-series=LABEL> holding a
polyline and one circle per record (its <title> gives the values), so a test or a script can
read the plot back.
"""

import argparse
import json
import math
import sys
from html import escape

CHART_WIDTH, CHART_HEIGHT = 560, 340
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 70, 230, 40, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]


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


def decade_range(values):
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    return low, max(high, low + 1)


def number_label(exponent):
    value = 10.0 ** exponent
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def chart(workload, lines, top):
    """The SVG elements of one chart whose frame starts at y = top."""
    xs = [v[0] for values in lines.values() for v in values]
    ys = [v[1] for values in lines.values() for v in values]
    x_low, x_high = decade_range(xs)
    y_low, y_high = decade_range(ys)
    left, width = MARGIN_LEFT, CHART_WIDTH
    plot_top, height = top + MARGIN_TOP, CHART_HEIGHT

    def x_of(v):
        return left + (math.log10(v) - x_low) / (x_high - x_low) * width

    def y_of(v):
        return plot_top + height - (math.log10(v) - y_low) / (y_high - y_low) * height

    out = [f'<g class="chart" data-workload="{escape(workload)}">',
           f'<text x="{left + width / 2}" y="{top + 24}" text-anchor="middle" font-size="16" '
           f'font-weight="bold">{escape(workload)}</text>',
           f'<rect x="{left}" y="{plot_top}" width="{width}" height="{height}" fill="none" stroke="#000"/>']
    for e in range(x_low, x_high + 1):
        x = x_of(10.0 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{plot_top}" x2="{x:.1f}" y2="{plot_top + height}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{plot_top + height + 18}" text-anchor="middle" '
                   f'font-size="12">{number_label(e)}</text>')
    for e in range(y_low, y_high + 1):
        y = y_of(10.0 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="12">'
                   f'{number_label(e)}</text>')
    out.append(f'<text x="{left + width / 2}" y="{plot_top + height + 40}" text-anchor="middle" '
               f'font-size="13">points (batch size)</text>')
    out.append(f'<text x="{left - 52}" y="{plot_top + height / 2}" text-anchor="middle" font-size="13" '
               f'transform="rotate(-90 {left - 52} {plot_top + height / 2})">ns per point</text>')
    for index, (label, values) in enumerate(sorted(lines.items())):
        color = COLORS[index % len(COLORS)]
        coordinates = " ".join(f"{x_of(p):.1f},{y_of(ns):.1f}" for p, ns, _ in values)
        out.append(f'<g class="series" data-workload="{escape(workload)}" data-series="{escape(label)}">')
        out.append(f'<polyline points="{coordinates}" fill="none" stroke="{color}" stroke-width="2"/>')
        for p, ns, record in values:
            ratio = record.get("ratio_to_native_simd")
            tip = f"{label}: {p:g} points, {ns:.4g} ns/point"
            if isinstance(ratio, (int, float)):
                tip += f", {ratio:.3g}x native-simd"
            out.append(f'<circle cx="{x_of(p):.1f}" cy="{y_of(ns):.1f}" r="3.5" fill="{color}">'
                       f'<title>{escape(tip)}</title></circle>')
        out.append("</g>")
        legend_y = plot_top + 14 + 20 * index
        legend_x = left + width + 16
        out.append(f'<line x1="{legend_x}" y1="{legend_y - 4}" x2="{legend_x + 24}" y2="{legend_y - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{legend_x + 30}" y="{legend_y}" font-size="12">{escape(label)}</text>')
    out.append("</g>")
    return out


def render(records, title):
    charts = group(records)
    chart_block = MARGIN_TOP + CHART_HEIGHT + MARGIN_BOTTOM
    width = MARGIN_LEFT + CHART_WIDTH + MARGIN_RIGHT
    height = 40 + chart_block * max(1, len(charts))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#fff"/>',
           f'<text x="{width / 2}" y="26" text-anchor="middle" font-size="18">{escape(title)}</text>']
    if not charts:
        out.append(f'<text x="{width / 2}" y="80" text-anchor="middle">no records</text>')
    for index, workload in enumerate(sorted(charts)):
        out.extend(chart(workload, charts[workload], 40 + index * chart_block))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="+", help="tapevm bench --json (or jax_bench.py) output files")
    parser.add_argument("-o", "--output", default="bench.svg", help="the SVG to write (default bench.svg)")
    parser.add_argument("--title", default="tapevm bench: ns per point against batch size (log-log)")
    args = parser.parse_args(argv)
    try:
        records = load_records(args.json)
    except (OSError, ValueError) as error:
        print(f"plot.py: error: {error}", file=sys.stderr)
        return 2
    svg = render(records, args.title)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)
    series = sum(len(lines) for lines in group(records).values())
    print(f"wrote {args.output}: {len(records)} records, {series} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
