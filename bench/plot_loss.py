#!/usr/bin/env python3
"""Loss curves from tapevm's JSON-lines training logs (src/nn/io/tapevm/nn/log.hpp), drawn with
matplotlib (Debian: python3-matplotlib) on its Agg backend: no display needed.

Each log line is one object: {"step": 120, "loss": 2.34, "val_loss": 2.41, "lr": 0.001,
"tokens_per_s": 412000.5, "elapsed": 31.2}; fields not measured are absent, and a loss that
was not finite is null. Training losses are drawn as a line per log, validation losses as
markers joined by a dashed line, against the step (or the elapsed seconds with --x elapsed).
Several logs (tapevm and bench/gpt_torch.py's, which writes the same format) share one plot.

usage:
  bench/plot_loss.py run.jsonl                       # writes run.png and run.svg
  bench/plot_loss.py tapevm.jsonl torch.jsonl --label tapevm --label PyTorch \\
      --out bench/loss_kjv --title "char GPT, KJV" --log-y --smooth 50
"""
import argparse
import json
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import matplotlib.ticker  # noqa: E402


def read_log(path):
    """The records of a JSON-lines log; blank lines skipped. Exits naming the line when one is
    not an object with an integer step."""
    records = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"plot_loss: {path}:{number}: not JSON: {error}")
            if not isinstance(record, dict) or not isinstance(record.get("step"), int):
                sys.exit(f"plot_loss: {path}:{number}: expected an object with an integer 'step'")
            records.append(record)
    return records


def series(records, field, x_field):
    """(x, y) of the records that hold a finite `field`."""
    xs, ys = [], []
    for record in records:
        value = record.get(field)
        if isinstance(value, (int, float)) and math.isfinite(value) and x_field in record:
            xs.append(record[x_field])
            ys.append(value)
    return xs, ys


def smoothed(values, window):
    """Trailing mean over `window` points (1: unchanged)."""
    if window <= 1:
        return values
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+", type=pathlib.Path, help="JSON-lines logs")
    parser.add_argument("--label", action="append", default=[],
                        help="legend name of each log, in order (default: the file name)")
    parser.add_argument("--out", type=pathlib.Path,
                        help="output path without suffix (default: the first log's, without .jsonl)")
    parser.add_argument("--format", action="append", choices=["png", "svg"],
                        help="formats to write (default: png and svg)")
    parser.add_argument("--x", choices=["step", "elapsed"], default="step", help="horizontal axis")
    parser.add_argument("--title", default="training loss")
    parser.add_argument("--log-y", action="store_true", help="logarithmic loss axis")
    parser.add_argument("--smooth", type=int, default=1, help="trailing mean of the training loss over N points")
    parser.add_argument("--dpi", type=int, default=150)
    args = parser.parse_args()
    if len(args.label) > len(args.logs):
        parser.error("more --label than logs")

    figure, axes = plt.subplots(figsize=(8, 5))
    drawn = 0
    for index, path in enumerate(args.logs):
        records = read_log(path)
        label = args.label[index] if index < len(args.label) else path.stem
        colour = f"C{index % 10}"
        xs, ys = series(records, "loss", args.x)
        if xs:
            axes.plot(xs, smoothed(ys, args.smooth), color=colour, linewidth=1.2, label=f"{label} train")
            drawn += 1
        xs, ys = series(records, "val_loss", args.x)
        if xs:
            axes.plot(xs, ys, color=colour, linestyle="--", marker="o", markersize=3, linewidth=1,
                      label=f"{label} validation")
            drawn += 1
    if drawn == 0:
        sys.exit("plot_loss: no finite loss or val_loss in " + ", ".join(map(str, args.logs)))

    axes.set_xlabel("step" if args.x == "step" else "elapsed (s)")
    axes.set_ylabel("loss (nats per token)")
    axes.set_title(args.title)
    if args.log_y:
        axes.set_yscale("log")
        axes.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axes.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()

    out = args.out or args.logs[0].with_suffix("")
    for suffix in args.format or ["png", "svg"]:
        target = out.with_name(out.name + "." + suffix)
        figure.savefig(target, dpi=args.dpi)
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
