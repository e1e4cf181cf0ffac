"""perf_svg.py - a line plot as an SVG file, in plain Python (no gnuplot,
no matplotlib): busbw against size on a log2 x axis, one line per series.
perf_algos.py draws with it when --plot names a .svg file."""

import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf"]
W, H = 960, 600
LEFT, RIGHT, TOP, BOTTOM = 80, 200, 50, 60


def _esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def write(path, title, xlabel, ylabel, series, xtick_label):
    """series: [(name, [(x, y), ...], dashed)], x > 0; xtick_label(x) -> str."""
    xs = sorted({x for _, pts, _ in series for x, _ in pts})
    ys = [y for _, pts, _ in series for _, y in pts]
    if not xs or not ys:
        return
    lx0, lx1 = math.log2(xs[0]), math.log2(xs[-1])
    if lx1 == lx0:
        lx0, lx1 = lx0 - 1, lx1 + 1
    ymax = max(ys) * 1.1 or 1.0
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x):
        return LEFT + (math.log2(x) - lx0) / (lx1 - lx0) * pw

    def py(y):
        return TOP + ph - y / ymax * ph

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="25" font-size="14">%s</text>' % (LEFT, _esc(title))]
    step = max(1, (len(xs) + 13) // 14)
    for x in xs[::step]:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                   % (px(x), TOP, px(x), TOP + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (px(x), TOP + ph + 18, _esc(xtick_label(x))))
    for i in range(6):
        y = ymax * i / 5
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, py(y), LEFT + pw, py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>'
                   % (LEFT - 6, py(y) + 4, y))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>'
               % (LEFT, TOP, pw, ph))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
               % (LEFT + pw // 2, H - 15, _esc(xlabel)))
    out.append('<text transform="translate(20,%d) rotate(-90)" text-anchor="middle">%s</text>'
               % (TOP + ph // 2, _esc(ylabel)))
    for i, (name, pts, dashed) in enumerate(series):
        color = "black" if dashed else COLORS[i % len(COLORS)]
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        d = " ".join("%s%.1f,%.1f" % ("M" if k == 0 else "L", px(x), py(y))
                     for k, (x, y) in enumerate(sorted(pts)))
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                   % (d, color, dash))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), color))
        ly = TOP + 10 + 20 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                   % (LEFT + pw + 15, ly, LEFT + pw + 45, ly, color, dash))
        out.append('<text x="%d" y="%d">%s</text>' % (LEFT + pw + 52, ly + 4, _esc(name)))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
