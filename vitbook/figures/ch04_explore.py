"""Chapter 4's explorer: pick a position, see the cosine similarity of its embedding with every
other position's; switch between fixed 2D sin-cos tables and the learned table of the small ViT
pre-trained in Chapter 9 (``vitbook.runs.pretrained_shapes_vit``, as the chapter's
``learned-pos`` figure)."""

from __future__ import annotations

import numpy as np

from vitbook import plot
from vitbook.analysis import cosine_similarity_map, sincos_2d
from vitbook.engine import figure
from vitbook.explore import explorer_data
from vitbook.figures.ch04_cls_position import GRID, PE_DIM


def _flat(sim) -> np.ndarray:
    """(gh, gw, gh, gw) similarity maps as (gh*gw, gh*gw) float32."""
    gh, gw = sim.shape[:2]
    return sim.reshape(gh * gw, gh * gw).float().numpy()


def similarity_tables() -> list[dict]:
    """Each table's name, grid, width and all-pairs cosine similarity (float32)."""
    from vitbook.runs import pretrained_shapes_vit

    run = pretrained_shapes_vit()
    model, cfg = run["model"], run["cfg"]
    gh, gw = cfg.grid
    learned = cosine_similarity_map(model.pos_embed.detach(), (gh, gw))
    return [
        {
            "name": f"2D sin-cos, {GRID}×{GRID}, D = {PE_DIM}",
            "grid": [GRID, GRID],
            "dim": PE_DIM,
            "sim": _flat(
                cosine_similarity_map(sincos_2d(GRID, GRID, PE_DIM), GRID, num_prefix_tokens=0)
            ),
        },
        {
            "name": f"2D sin-cos, {gh}×{gw}, D = {cfg.dim}",
            "grid": [gh, gw],
            "dim": cfg.dim,
            "sim": _flat(
                cosine_similarity_map(sincos_2d(gh, gw, cfg.dim), (gh, gw), num_prefix_tokens=0)
            ),
        },
        {
            "name": f"learned (Chapter 9), {gh}×{gw}, D = {cfg.dim}",
            "grid": [gh, gw],
            "dim": cfg.dim,
            "sim": _flat(learned),
        },
    ]


@figure(chapter=4, id="position-similarity", size=(7.2, 2.6), trained=True, phone_size=5.4)
def position_similarity(rec):
    """The centre position's similarity map in each table (the explorer's fallback)."""
    return {"tables": similarity_tables()}


@position_similarity.draw
def _(d, v):
    # the chosen patch's outline on the viridis map: the light theme's strong orange in both
    # themes (the dark page's pale orange all but vanished on the map's yellow end)
    mark = plot.colors("light")["highlight"]
    tables = d["tables"]
    fig, axes = plot.subplots(v, 1, len(tables), phone_cols=2)
    im = None
    for ax, t in zip(axes, tables, strict=True):
        gh, gw = t["grid"]
        i = (gh // 2) * gw + gw // 2
        im = ax.imshow(t["sim"][i].reshape(gh, gw), cmap="viridis", vmin=-1, vmax=1)
        ax.plot(gw // 2, gh // 2, marker="s", ms=7, mfc="none", mec=mark, mew=2)
        ax.set_xticks([0, gw - 1])
        ax.set_yticks([0, gh - 1])
        ax.tick_params(labelsize=8, length=2)
        ax.set_title(t["name"].replace(", ", "\n", 1), fontsize=8.5, loc="center")
    cb = fig.colorbar(im, ax=axes, shrink=0.9, pad=0.02)
    cb.set_label("cosine similarity")
    cb.outline.set_visible(False)
    return fig


@position_similarity.export
def _(d):
    tables = d["tables"]
    return explorer_data(
        {
            "tables": [{"name": t["name"], "grid": t["grid"], "dim": t["dim"]} for t in tables],
            "vmin": -1.0,
            "vmax": 1.0,
            "digits": 3,
        },
        {f"sim{i}": t["sim"] for i, t in enumerate(tables)},
    )
