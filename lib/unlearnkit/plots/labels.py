"""Names beside the points of a scatter, placed clear of every marker and of each other (the runs of a comparison
crowd in a few places)."""

from __future__ import annotations

from collections.abc import Sequence


def _renderer(fig):
    """A renderer of ``fig`` to measure text with (Agg's, as every backend the workbook uses draws with)."""
    canvas = fig.canvas
    if hasattr(canvas, "get_renderer"):
        return canvas.get_renderer()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return FigureCanvasAgg(fig).get_renderer()


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The area two boxes (x0, y0, x1, y1) share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def labels_apart(ax, points: Sequence[tuple[float, float, str, float]], fontsize: float = 10.0) -> None:
    """Name each point (x, y, name, marker size in points², as ``scatter``'s ``s``) beside it, clear of every
    marker and of every label placed before: right of its marker if that is free, else left, above, below, a
    diagonal, then further up or down with a thin line back to its point (the runs of a comparison crowd in a few
    places: utility near the target's, privleak near -100). Call it once the axes' limits and the figure's layout
    are final: it places the labels in display space."""
    fig = ax.figure
    renderer = _renderer(fig)
    px_per_pt = fig.dpi / 72.0
    gap = 2.0 * px_per_pt
    frame = ax.get_window_extent(renderer)
    centres = [(*ax.transData.transform((x, y)), (s ** 0.5) / 2 * px_per_pt + 1) for x, y, _, s in points]
    obstacles = [(cx - r, cy - r, cx + r, cy + r) for cx, cy, r in centres]
    order = sorted(range(len(points)), key=lambda i: (-centres[i][1], centres[i][0]))
    for i in order:
        x, y, name, _ = points[i]
        cx, cy, r = centres[i]
        probe = ax.text(x, y, name, fontsize=fontsize)
        box = probe.get_window_extent(renderer)
        probe.remove()
        w, h = box.width, box.height
        near = [(cx + r + gap, cy - h / 2), (cx - r - gap - w, cy - h / 2), (cx - w / 2, cy + r + gap),
                (cx - w / 2, cy - r - gap - h), (cx + 0.7 * r + gap, cy + 0.7 * r), (cx + 0.7 * r + gap, cy - 0.7 * r - h),
                (cx - 0.7 * r - gap - w, cy + 0.7 * r), (cx - 0.7 * r - gap - w, cy - 0.7 * r - h)]
        far = [(cx + side * (r + 4 * gap + shift * h) - (w if side < 0 else 0), cy - h / 2 + k * (h + gap))
               for k in range(-15, 16) for side in (1, -1) for shift in range(0, 12, 2) if k or shift]
        far.sort(key=lambda c: (c[0] + (w / 2) - cx) ** 2 + (c[1] + h / 2 - cy) ** 2)  # the nearest free place
        best, best_cost, best_line = (0, *near[0]), None, []
        for j, (x0, y0) in enumerate(near + far):
            candidate = (x0, y0, x0 + w, y0 + h)
            outside = (max(0.0, frame.x0 - x0) + max(0.0, x0 + w - frame.x1) + max(0.0, frame.y0 - y0)
                       + max(0.0, y0 + h - frame.y1))
            cost = sum(_overlap(candidate, o) for o in obstacles) + 50.0 * outside * h
            line = []
            if j >= len(near):  # the thin line back to the point: through no marker or label but its own
                ex, ey = (x0 if x0 > cx else x0 + w), y0 + h / 2
                line = [(cx + (ex - cx) * t, cy + (ey - cy) * t) for t in (0.2, 0.35, 0.5, 0.65, 0.8, 0.95)]
                line = [(lx - 1, ly - 1, lx + 1, ly + 1) for lx, ly in line if (lx - cx) ** 2 + (ly - cy) ** 2 > r * r]
                cost += w * h * sum(any(_overlap(b, o) > 0 for o in obstacles[:len(points)] if o != obstacles[i])
                                    or any(_overlap(b, o) > 0 for o in obstacles[len(points):]) for b in line)
            if best_cost is None or cost < best_cost:
                best, best_cost, best_line = (j, x0, y0), cost, line
            if cost == 0:
                break
        j, x0, y0 = best
        obstacles.extend(best_line)
        leader = None
        if j >= len(near):
            leader = {"arrowstyle": "-", "color": "grey", "lw": 0.6, "shrinkA": 0, "shrinkB": r / px_per_pt,
                      "relpos": (0.0, 0.5) if x0 > cx else (1.0, 0.5)}
        ax.annotate(name, (x, y), xytext=((x0 - cx) / px_per_pt, (y0 - cy) / px_per_pt), textcoords="offset points",
                    fontsize=fontsize, ha="left", va="bottom", zorder=4, arrowprops=leader)
        obstacles.append((x0, y0, x0 + w, y0 + h))
