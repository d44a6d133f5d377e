"""Chapter 1, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import math

import torch
from torch import nn

from vitbook.engine import facts
from vitbook.figures.ch01_why import RF_SIZE, footprint, small_cnn_footprint
from vitbook.model import preset
from vitbook.train import SmallCNN


def cnn_footprint_without_second_pool(size: int = RF_SIZE - 1) -> int:
    """Exercise 1: SmallCNN's last-stage receptive field once its second max-pooling is gone."""
    torch.manual_seed(0)
    cnn = SmallCNN(in_chans=1, num_classes=2, width=4).eval()
    for m in cnn.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.uniform_(m.weight, 0.5, 1.0)  # as in small_cnn_footprint
    kept = [layer for i, layer in enumerate(cnn.features[:-2]) if i != 3]  # index 3: 2nd pool
    x = torch.rand(1, 1, size, size, requires_grad=True)
    feats = nn.Sequential(*kept)(x)  # (1, 16, size/2, size/2)
    c = feats.shape[-1] // 2
    (g,) = torch.autograd.grad(feats[0, 0, c, c], x)
    return footprint(g[0, 0])


@facts(chapter=1, id="solutions")
def solutions(rec):
    """Exercise 1: receptive field with and without the second pooling; exercise 3: 3x3
    layers needed to span a 512-pixel image against ViT-B/16's blocks."""
    with_pool, _ = small_cnn_footprint()
    without = cnn_footprint_without_second_pool()
    rec.fact("sol_ex1_rf", with_pool)
    rec.fact("sol_ex1_rf_nopool", without)
    image = 512
    d = image - 1  # the two outermost pixels of a row
    layers = math.ceil(d / 2)
    rec.fact("sol_ex3_d", d)
    rec.fact("sol_ex3_layers", layers)
    vit = preset("vit-b/16", image_size=image)
    rec.fact("sol_ex3_vit_depth", vit.depth)
    rec.fact("sol_ex3_ratio", layers / vit.depth, "{:.0f}")
    rec.fact("sol_ex3_vit_tokens", vit.num_patches, "{:,}")
    return {"rf": with_pool, "rf_nopool": without, "layers": layers}


@facts(chapter=1, id="solutions-narrow", trained=True)
def solutions_narrow(rec):
    """Exercise 2: the ViT on the narrow strip, over the chapter's seeds and plateau budget,
    against the same ViT on the wide strip and SmallCNN on both (the chapter's runs)."""
    from vitbook.experiments import stats
    from vitbook.figures.ch01_why import NARROW, SEEDS, SOLVED, _runs, scores

    acc = {
        (model, cols): [scores(r)["acc"] for r in _runs(model, cols=cols)]
        for model in ("vit", "cnn")
        for cols in (NARROW, 16)
    }
    narrow = [scores(r) for r in _runs("vit", cols=NARROW)]
    rec.fact("sol_ex2_seeds", len(SEEDS))
    stats.record(rec, "sol_ex2_vit_narrow_acc", acc["vit", NARROW])
    rec.fact("sol_ex2_vit_narrow_failed", sum(s["failed"] for s in narrow), tol=1)
    rec.fact("sol_ex2_vit_narrow_solved", sum(a >= SOLVED for a in acc["vit", NARROW]), tol=1)
    rec.fact("sol_ex2_vit_narrow_vs_wide", stats.verdict(acc["vit", NARROW], acc["vit", 16]))
    rec.fact("sol_ex2_cnn_narrow_vs_wide", stats.verdict(acc["cnn", NARROW], acc["cnn", 16]))
    rec.fact("sol_ex2_vit_vs_cnn_narrow", stats.verdict(acc["vit", NARROW], acc["cnn", NARROW]))
    return {k: v for k, v in acc.items()}
