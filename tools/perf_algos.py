#!/usr/bin/env python3
"""The table of tools/perf_algos.sh: merges its tcoll-perf runs (one per
allreduce algorithm and run, each with its own MPI_Allreduce figures) into
one table, a row per size and a row for the workload, and draws the plot.

    perf_algos.py --columns LIST [--markdown] [--plot FILE.png] MANIFEST

MANIFEST: one line per run, tab-separated: column, run, kind (sweep or
workload), base (BASE.json is the run's --json file, BASE.out its output,
BASE.err its log), settings. Plain Python 3, no module outside the standard
library. It only reads the runs' figures: every ratio comes from one run's
own tcoll and MPI times, never from two different runs.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys


def fmt_size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def fmt_time(v):
    if v < 1:
        return "%.3f" % v
    if v < 10:
        return "%.2f" % v
    if v < 1000:
        return "%.1f" % v
    return "%.0f" % v


def fmt_range(values, fmt):
    """One value, or lowest-highest when the runs differ as printed."""
    if not values:
        return "-"
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else "%s-%s" % (lo, hi)


def fmt_ratio(v):
    return "%.2f" % v


def read_manifest(path):
    runs = []
    with open(path) as f:
        for line in f:
            col, run, kind, base, settings = line.rstrip("\n").split("\t")
            with open(base + ".json") as j:
                rows = json.load(j)
            with open(base + ".out", errors="replace") as o:
                out = o.read()
            with open(base + ".err", errors="replace") as e:
                err = e.read()
            ran = re.findall(r"\[0\] shm INFO: allreduce of the global set(?: \([^)]*\))?: (.*)",
                             err)
            runs.append({"col": col, "run": int(run), "kind": kind, "rows": rows,
                         "out": out, "settings": settings, "ran": ran[0] if ran else None})
    return runs


def collect(runs):
    """sizes, cells[(col, size)] -> list of row dicts, workload[col] -> list
    of (tcoll ms, per-tensor MPI ms), ran_as[col] -> set, settings[col]."""
    sizes, cells, workload, ran_as, settings = set(), {}, {}, {}, {}
    wl_info = None
    for r in runs:
        col = r["col"]
        settings[col] = " ".join(v for v in r["settings"].split()
                                 if not v.startswith("TCOLL_LOG_LEVEL="))
        ran_as.setdefault(col, set()).add(r["ran"] or "? (no log line at info level)")
        if r["kind"] == "sweep":
            for row in r["rows"]:
                sizes.add(row["size"])
                cells.setdefault((col, row["size"]), []).append(row)
        else:
            by_impl = {row["impl"]: row for row in r["rows"]}
            t = by_impl["tcoll"]
            # MPI's best: on the same buffers, or on private copies of them
            mpi_ms = min(by_impl[k]["ms_per_step"] for k in ("mpi-per-tensor", "mpi-private")
                         if k in by_impl)
            workload.setdefault(col, []).append((t["ms_per_step"], mpi_ms, t.get("reached")))
            wl_info = (t["workload"], t["tensors"], t["bytes"])
    return sorted(sizes), cells, workload, ran_as, settings, wl_info


def build_rows(columns, sizes, cells, workload, wl_info):
    """Each row: (label, [(time text, ratio text, limit text) per column],
    MPI text)."""
    rows = []
    for size in sizes:
        cols, mpi = [], []
        for col in columns:
            got = cells.get((col, size), [])
            cols.append((fmt_range([g["tcoll_time_us"] for g in got], fmt_time),
                         fmt_range([g["mpi_time_us"] / g["tcoll_time_us"] for g in got],
                                   fmt_ratio),
                         fmt_range([g["reached"] for g in got
                                    if g.get("reached") is not None], fmt_ratio)))
            mpi += [g["mpi_time_us"] for g in got]
        rows.append((fmt_size(size), cols, fmt_range(mpi, fmt_time)))
    if workload:
        name = os.path.splitext(os.path.basename(wl_info[0]))[0]
        cols, mpi = [], []
        for col in columns:
            got = workload.get(col, [])
            cols.append((fmt_range([t for t, _, _ in got], fmt_time),
                         fmt_range([m / t for t, m, _ in got], fmt_ratio),
                         fmt_range([r for _, _, r in got if r is not None], fmt_ratio)))
            mpi += [m for _, m, _ in got]
        rows.append(("%s (ms)" % name, cols, fmt_range(mpi, fmt_time)))
    return rows


def first_lines(runs):
    """The first sweep's lines naming the libraries, the ranks and the sweep."""
    for r in runs:
        if r["kind"] == "sweep":
            lines = [l[2:] for l in r["out"].splitlines() if l.startswith("# ")]
            return lines[:2]
    return []


def legend(runs, columns, ran_as, settings, wl_info):
    """The lines above the table, and one (column, settings, what ran) each."""
    nruns = max(r["run"] for r in runs)
    text = ["tcoll's allreduce per algorithm against MPI_Allreduce; %d run%s per column"
            % (nruns, "s" if nruns > 1 else "")]
    text += first_lines(runs)
    text += ["each column is a tcoll-perf launch per run, which times MPI_Allreduce on the "
             "same buffers in that same run:",
             "  time = tcoll's time in us (median over iterations of the slowest rank)",
             "  ratio = MPI_Allreduce's time / tcoll's time, both from that same run "
             "(= tcoll busbw / MPI busbw; > 1: tcoll is faster)",
             "  lim = the fraction of this machine's limit tcoll reached: the time the bytes "
             "the algorithm that ran must copy, reduce and read across processes take at the "
             "rates tcoll-perf measured in that same run (docs/perf.md); 1 = at the limit",
             "  MPI = MPI_Allreduce's time in us, over every run of every column"]
    if nruns > 1:
        text.append("with several runs a cell is the range over the runs, lowest-highest")
    if wl_info:
        text.append("workload row: ms per step (%s: %d float32 tensors, %d bytes, each "
                    "allreduced once per step); ratio = one MPI_Allreduce per tensor's ms "
                    "(the faster of the same buffers and private copies) / tcoll's ms, "
                    "MPI = that ms" % (os.path.basename(wl_info[0]), wl_info[1], wl_info[2]))
    text.append("columns: the settings of the run, and what rank 0's log says ran")
    cols = [(col, settings.get(col, "?"), " / ".join(sorted(ran_as.get(col, {"?"}))))
            for col in columns]
    return text, cols


def print_text(text, cols, columns, rows):
    for line in text:
        print("# " + line)
    width = max(len(c[0]) for c in cols)
    sw = max(len(c[1]) for c in cols)
    for col, settings, ran in cols:
        print("#   %-*s  %-*s  -> %s" % (width, col, sw, settings, ran))
    print("#")
    tw = [max([len("time(us)")] + [len(r[1][i][0]) for r in rows]) for i in range(len(columns))]
    rw = [max([len("ratio")] + [len(r[1][i][1]) for r in rows]) for i in range(len(columns))]
    xw = [max([len("lim")] + [len(r[1][i][2]) for r in rows]) for i in range(len(columns))]
    lw = max([len("size")] + [len(r[0]) for r in rows])
    mw = max([len("MPI(us)")] + [len(r[2]) for r in rows])
    head = " " * (lw + 1)
    for i, col in enumerate(columns):
        span = tw[i] + rw[i] + xw[i] + 4
        name = " %s " % col
        left = (span - len(name)) // 2
        head += "  " + ("-" * left + name + "-" * span)[:span]
    print("#" + head[1:])
    line = "#" + " " * (lw - len("size") - 1) + " size"
    for i in range(len(columns)):
        line += "  %*s  %*s  %*s" % (tw[i], "time(us)", rw[i], "ratio", xw[i], "lim")
    print(line + "  %*s" % (mw, "MPI(us)"))
    for label, cells, mpi in rows:
        line = "%*s" % (lw + 1, label)
        for i, (t, r, x) in enumerate(cells):
            line += "  %*s  %*s  %*s" % (tw[i], t, rw[i], r, xw[i], x)
        print(line + "  %*s" % (mw, mpi))


def print_markdown(text, cols, columns, rows):
    print(text[0] + ".")
    print()
    for line in text[1:]:  # a list, so the lines stay lines
        print("  - " + line.strip() if line.startswith("  ") else "- " + line)
    for col, settings, ran in cols:
        print("  - `%s`: `%s`, ran as %s" % (col, settings, ran))
    print()
    head = ["size"] + ["%s %s" % (c, h) for c in columns for h in ("us", "ratio", "lim")] + ["MPI us"]
    print("| " + " | ".join(head) + " |")
    print("|" + " ---: |" * len(head))
    for label, cells, mpi in rows:
        print("| " + " | ".join([label] + [x for pair in cells for x in pair] + [mpi]) + " |")


def gnuplot_quote(s):
    return "'" + s.replace("'", "''") + "'"


def busbw(row, side):
    """GB/s from the size and the time (the JSON's own figures are rounded
    to 4 decimals, too coarse for the small sizes)."""
    n = row["ranks"]
    return row["size"] / row[side + "_time_us"] / 1e3 * 2 * (n - 1) / n


def plot_script(path, text, columns, sizes, cells):
    sizes = [s for s in sizes if s > 0]  # a log axis has no 0
    lines = ["if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {",
             "  set terminal pngcairo size 960,600 noenhanced font 'sans,10'",
             "} else {",
             "  set terminal png size 960,600 noenhanced",
             "}",
             "set output " + gnuplot_quote(path),
             "set title " + gnuplot_quote("allreduce per algorithm: %s" % (
                 text[1].replace("tcoll-perf: ", "") if len(text) > 1 else "")),
             "set xlabel 'size (bytes)'",
             "set ylabel 'busbw (GB/s), algbw x 2(n-1)/n; medians over the runs'",
             "set logscale x 2",
             "set grid",
             "set key top left",
             "set yrange [0:*]",
             "set xrange [%g:%g]" % (sizes[0] / 1.5, sizes[-1] * 1.5)]
    step = (len(sizes) + 13) // 14
    lines.append("set xtics (" + ", ".join("'%s' %d" % (fmt_size(s).replace(" ", ""), s)
                                           for s in sizes[::step]) + ")")
    plots = ["'-' using 1:2 with linespoints lw 2 pt %d title %s" % (4 + 2 * i, gnuplot_quote(c))
             for i, c in enumerate(columns)]
    plots.append("'-' using 1:2 with linespoints lw 2 dt 2 pt 5 lc rgb 'black' "
                 "title 'MPI_Allreduce'")
    lines.append("plot " + ", \\\n     ".join(plots))
    for col in columns:
        for s in sizes:
            got = cells.get((col, s), [])
            if got:
                lines.append("%d %.6f" % (s, statistics.median(busbw(g, "tcoll") for g in got)))
        lines.append("e")
    for s in sizes:
        got = [g for col in columns for g in cells.get((col, s), [])]
        if got:
            lines.append("%d %.6f" % (s, statistics.median(busbw(g, "mpi") for g in got)))
    lines.append("e")
    return "\n".join(lines) + "\n"


def draw_svg(path, text, columns, sizes, cells):
    """The same plot as an SVG file, drawn here (perf_svg.py): no gnuplot."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import perf_svg
    sizes = [s for s in sizes if s > 0]
    series = []
    for col in columns:
        pts = [(s, statistics.median(busbw(g, "tcoll") for g in cells[(col, s)]))
               for s in sizes if cells.get((col, s))]
        series.append((col, pts, False))
    mpi = [(s, statistics.median(busbw(g, "mpi") for col in columns
                                 for g in cells.get((col, s), [])))
           for s in sizes if any(cells.get((col, s)) for col in columns)]
    series.append(("MPI_Allreduce", mpi, True))
    perf_svg.write(path, "allreduce per algorithm: %s" % (
        text[1].replace("tcoll-perf: ", "") if len(text) > 1 else ""), "size (bytes)",
        "busbw (GB/s), algbw x 2(n-1)/n; medians over the runs", series,
        lambda x: fmt_size(x).replace(" ", ""))
    print("perf_algos: plot written to %s" % path, file=sys.stderr)


def draw(path, script):
    if shutil.which("gnuplot") is None:
        gp = os.path.splitext(path)[0] + ".gp"
        with open(gp, "w") as f:
            f.write(script)
        print("perf_algos: note: gnuplot is not on PATH, so no plot was drawn (Debian: "
              "apt-get install gnuplot-nox); its script is in %s (gnuplot %s draws it)"
              % (gp, gp), file=sys.stderr)
        return 0
    done = subprocess.run(["gnuplot"], input=script, text=True)
    if done.returncode != 0:
        print("perf_algos: gnuplot failed (status %d, its messages are above); no plot in %s"
              % (done.returncode, path), file=sys.stderr)
        return 1
    print("perf_algos: plot written to %s" % path, file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--columns", required=True, help="comma-separated, in table order")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--plot", metavar="FILE.png|FILE.svg")
    ap.add_argument("manifest")
    args = ap.parse_args()
    columns = args.columns.split(",")
    runs = read_manifest(args.manifest)
    if not runs:
        print("perf_algos: no runs in %s" % args.manifest, file=sys.stderr)
        return 1
    sizes, cells, workload, ran_as, settings, wl_info = collect(runs)
    text, cols = legend(runs, columns, ran_as, settings, wl_info)
    rows = build_rows(columns, sizes, cells, workload, wl_info)
    wrong = [(k[0], k[1]) for k, got in cells.items()
             for g in got if g["tcoll_wrong"] or g["mpi_wrong"]]
    if args.markdown:
        print_markdown(text, cols, columns, rows)
    else:
        print_text(text, cols, columns, rows)
    for col, size in wrong:
        print("perf_algos: wrong elements in %s at %s" % (col, fmt_size(size)), file=sys.stderr)
    if args.plot and sizes and any(s > 0 for s in sizes):
        if args.plot.endswith(".svg"):
            draw_svg(args.plot, text, columns, sizes, cells)
        elif draw(args.plot, plot_script(args.plot, text, columns, sizes, cells)):
            return 1
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
