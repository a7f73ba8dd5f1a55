#!/usr/bin/python3
"""Plots a kairos sweep CSV: one PNG per statistic against the first varied
parameter, with 95% confidence-interval bars, one line per combination of
the other varied parameters.

Usage: plot_sweep.py SWEEP.csv DIR      (kairos sweep --plot DIR runs it)
       plot_sweep.py --check            (exit 0 when matplotlib is there, 3 if not)

Each plot is written as DIR/STAT.png.partial and renamed once drawn. On an
error: one line on stderr, the partial files removed, exit status 2; on
SIGTERM (kairos sends it when it is interrupted) the partial files removed.
"""
import csv
import math
import os
import re
import signal
import sys


def load_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def number(text):
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def main(argv):
    if len(argv) == 2 and argv[1] == "--check":
        return 0 if load_matplotlib() else 3
    if len(argv) != 3:
        print("usage: plot_sweep.py SWEEP.csv DIR", file=sys.stderr)
        return 2
    path, out_dir = argv[1], argv[2]
    # SIGTERM ends the script through the finally below, which removes the
    # partial files.
    signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))
    plt = load_matplotlib()
    if plt is None:
        print("plot_sweep: matplotlib is missing (apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, csv.Error) as e:  # one line, never a traceback
        print(f"plot_sweep: {path}: {e}", file=sys.stderr)
        return 2
    if len(rows) < 2 or "replications" not in rows[0]:
        print(f"plot_sweep: {path}: expected a kairos sweep CSV, found {len(rows)} lines", file=sys.stderr)
        return 2
    head = rows[0]
    nparams = head.index("replications")
    if nparams == 0:
        print(f"plot_sweep: {path}: expected at least one varied parameter, found none", file=sys.stderr)
        return 2
    data = rows[1:]
    stats = [h[: -len(".mean")] for h in head[nparams + 1:] if h.endswith(".mean")]
    xs_text = [r[0] for r in data]
    numeric = all(number(x) is not None for x in xs_text)
    # Categories keep the CSV's order.
    categories = list(dict.fromkeys(xs_text))

    def x_of(text):
        return number(text) if numeric else categories.index(text)

    # One line per combination of the other parameters, in CSV order.
    lines = {}
    for r in data:
        lines.setdefault(tuple(r[1:nparams]), []).append(r)
    written = []
    names = set()
    try:
        os.makedirs(out_dir, exist_ok=True)
        for stat in stats:
            mi, ci = head.index(stat + ".mean"), head.index(stat + ".ci95")
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            for key, rs in lines.items():
                pts = [(x_of(r[0]), number(r[mi]), number(r[ci])) for r in rs if number(r[mi]) is not None]
                if not pts:
                    continue
                label = ", ".join(f"{head[1 + i]}={v}" for i, v in enumerate(key)) or None
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] or 0.0 for p in pts],
                            marker="o", capsize=3, label=label)
            if not numeric:
                ax.set_xticks(range(len(categories)))
                ax.set_xticklabels(categories, rotation=30, ha="right")
            ax.set_xlabel(head[0])
            ax.set_ylabel(stat)
            ax.set_title(f"{stat} (mean, 95% CI over {data[0][nparams]} replications)", fontsize=9)
            if len(lines) > 1:
                ax.legend(fontsize=7)
            ax.grid(True, alpha=0.3)
            fig.tight_layout()
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", stat)
            while name in names:  # two statistics must not share one file
                name += "_"
            names.add(name)
            name += ".png"
            final = os.path.join(out_dir, name)
            partial = final + ".partial"
            written.append(partial)
            fig.savefig(partial, format="png", dpi=100)
            plt.close(fig)
        for partial in written:
            os.replace(partial, partial[: -len(".partial")])
    except Exception as e:  # one line, never a traceback
        print(f"plot_sweep: {out_dir}: {e}", file=sys.stderr)
        return 2
    finally:
        for partial in written:
            if os.path.exists(partial):
                os.remove(partial)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
