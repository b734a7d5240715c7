"""The registered claims at a glance: one tile per claim, coloured by its verdict over the training seeds (notebook 10
and the README)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt

#: Verdict colours of the claims figure (notebook 10): unlearnkit.claims.judge's verdicts (green, red, amber, grey)
#: and, below five testable seeds, what the seeds agree on (unlearnkit.claims.render.tile), lighter.
VERDICT_COLORS = {"reproduced": "#1a9850", "contradicted": "#d73027", "inconclusive": "#f0a202",
                  "not testable here": "#bdbdbd",
                  "consistent on every testable seed": "#a6dba0", "inconsistent on every testable seed": "#f4a6a0",
                  "inconclusive or mixed": "#fde0a0"}


def findings_overview(table, seeds: Sequence[int] | None = None, ncols: int = 6,
                      title: str = "The papers' quoted claims, by their verdict{over}"):
    """Notebook 10 and the README: one tile per registered claim (``table`` from
    :func:`unlearnkit.claims.render.overview_table`), grouped by paper (at most ``ncols`` tiles a line, a paper with
    more takes several lines), coloured by its tile (its verdict over the training seeds, or what they agree on;
    ``seeds``, named in the title where ``title`` has ``{over}``) and labelled with the notebook it comes from; a
    reader sees at a glance which claims came back at this profile's scale."""
    import math
    import textwrap

    papers = list(dict.fromkeys(table["paper"]))
    parts = [table[table["paper"] == paper] for paper in papers]
    ncols = max(1, min(ncols, max(len(part) for part in parts)))
    lines = [max(1, math.ceil(len(part) / ncols)) for part in parts]
    gap = 0.25  # between two papers, in tile heights
    height = sum(lines) + gap * (len(papers) - 1)
    tile_w, tile_h = 1.4, 0.78  # inches
    fig, ax = plt.subplots(figsize=(2.7 + tile_w * ncols, tile_h * height + 1.9))
    top, ticks = 0.0, []
    for paper, part, count in zip(papers, parts, lines):
        for k, (_, row) in enumerate(part.iterrows()):
            x, y = k % ncols, top + k // ncols
            shown = row.get("tile") or row["verdict"]
            color = VERDICT_COLORS.get(shown, "#ffffff")
            ax.add_patch(plt.Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, color=color))
            short = textwrap.wrap(str(row.get("short") or ""), 13)
            name = "\n".join(short[:2] + [f"nb {row['notebook'][:2]}"])
            ax.text(x + 0.5, y + 0.5, name, ha="center", va="center", fontsize=10, linespacing=1.15,
                    color="white" if shown == "reproduced" else "black")
        name, cited, citation = str(paper).partition(" (")  # the citation on lines of its own
        ticks.append((top + count / 2, "\n".join(textwrap.wrap(name, 24) + textwrap.wrap("(" + citation, 24)
                                                 if cited else textwrap.wrap(name, 24))))
        top += count + gap
    ax.set_xlim(0, ncols)
    ax.set_ylim(height, 0)
    ax.set_yticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=11)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    tiles = table["tile"] if "tile" in table else table["verdict"]
    used = [v for v in VERDICT_COLORS if v in set(tiles)]
    handles = [plt.Rectangle((0, 0), 1, 1, color=VERDICT_COLORS[v]) for v in used]
    ax.legend(handles, used, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=min(len(used), 4), frameon=False,
              fontsize=11)
    over = f" over training seed{'s' if len(seeds or []) != 1 else ''} {', '.join(map(str, seeds))}" if seeds else ""
    ax.set_title(textwrap.fill(title.format(over=over), 80), fontsize=12)
    fig.tight_layout()
    return fig
