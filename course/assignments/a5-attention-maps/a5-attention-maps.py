# %% [raw]
# # ASSIGNMENT CONFIG
# name: a5-attention-maps
# init_cell: true
# check_all_cell: true
# export_cell: false
# run_tests: false
# solutions_pdf: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Assignment 5: do attention maps point at the object? Against a null baseline
#
# Chapter 10. The small ViT the book pre-trains on synthetic shapes (Chapter 9) sees 32x32
# images with one object each, whose box is known. You compute attention rollout yourself,
# score how often its peak falls inside the object's box, and compare that score with what a
# map that knows nothing would score: a patch picked uniformly at random. A score means little
# without its baseline. The grader checks your code against `vitbook.analysis` and the
# numbers Chapter 10 prints (`figures/facts.json`). Do not call `vitbook.analysis` in your
# answers.
#
# Loading the model reads the book's frozen run (no training); the forward pass over the
# 1,000 test images takes a few seconds on a laptop.

# %%
import numpy as np
import torch

from vitbook import runs
from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.experiments.pretrain import PRETRAIN_TEST_SEED
from vitbook.experiments.stats import interval

model = runs.pretrained_shapes_vit()["model"].eval()
test = make_shapes(1000, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TEST_SEED)
x = test.tensors()[0]
GRID, PATCH = model.cfg.grid, model.cfg.patch_size
with torch.no_grad():
    ATTN = model.forward_intermediates(x, attn=True)["attn"]  # per layer (B, heads, T, T)

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 4

# %% [markdown]
# **Q1.** Write `rollout_maps(attns, grid)`: attention rollout (Abnar and Zuidema, 2020) as the
# book defines it in Chapter 10. Per layer, average the heads, mix in the residual path as
# `0.5 I + 0.5 A`, renormalise each row to sum to one; multiply the layers, first layer
# first (`R = A_L ... A_2 A_1`). Return the class token's row of `R` over the patch columns
# (drop column 0), reshaped to `(B, rows, cols)`.

# %%
def rollout_maps(attns, grid) -> torch.Tensor:
    # BEGIN SOLUTION
    r = None
    for w in attns:
        a = w.double().mean(dim=1)  # (B, T, T)
        a = 0.5 * torch.eye(a.shape[-1], dtype=a.dtype) + 0.5 * a
        a = a / a.sum(dim=-1, keepdim=True)
        r = a if r is None else a @ r
    return r[:, 0, 1:].reshape(-1, *grid)
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
assert tuple(rollout_maps([a[:4] for a in ATTN], GRID).shape) == (4, *GRID)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.analysis import attention_rollout, rollout_cls_map
sub = [a[:50] for a in ATTN]
ref = rollout_cls_map(attention_rollout(sub), GRID).double()
mine = torch.as_tensor(rollout_maps(sub, GRID)).double()
assert mine.shape == ref.shape and (mine - ref).abs().max() < 1e-5
one = [a[:3, :, :, :] for a in ATTN[:1]]
assert (torch.as_tensor(rollout_maps(one, GRID)).double() - rollout_cls_map(attention_rollout(one), GRID).double()).abs().max() < 1e-5

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Q2.** Write `peak_inside(maps, boxes, patch)`: for each map `(rows, cols)`, take its
# highest patch (the first one if several tie), its centre in pixels
# (`col * patch + patch / 2`, `row * patch + patch / 2`), and say whether that centre lies in
# the image's box `x0, y0, x1, y1` (edges included). Return a boolean numpy array, one entry
# per image.

# %%
def peak_inside(maps, boxes, patch) -> np.ndarray:
    # BEGIN SOLUTION
    maps = np.asarray(maps)
    n, gh, gw = maps.shape
    flat = maps.reshape(n, -1).argmax(1)
    cy, cx = (flat // gw) * patch + patch / 2, (flat % gw) * patch + patch / 2
    x0, y0, x1, y1 = np.asarray(boxes).T
    return (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
m = np.zeros((1, 2, 2)); m[0, 1, 0] = 1.0  # peak at row 1, col 0: centre (x, y) = (2, 6)
assert list(peak_inside(m, np.array([[0, 4, 4, 8]]), 4)) == [True]

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
rng = np.random.default_rng(0)
maps = rng.random((200, *GRID))
boxes = np.sort(rng.integers(0, 33, size=(200, 2, 2)), axis=1).transpose(0, 2, 1).reshape(200, 4)[:, [0, 2, 1, 3]]
want = []
for mp, (x0, y0, x1, y1) in zip(maps, boxes):
    r, c = np.unravel_index(np.argmax(mp), mp.shape)
    cx, cy = c * PATCH + PATCH / 2, r * PATCH + PATCH / 2
    want.append(bool(x0 <= cx <= x1 and y0 <= cy <= y1))
got = np.asarray(peak_inside(maps, boxes, PATCH))
assert got.dtype == bool and list(got) == want

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Q3.** The null baseline. Write `chance_rate(boxes, grid, patch)`: the hit rate a map would
# score whose peak is a patch drawn uniformly at random, that is, for each image the share of
# patch centres inside its box, averaged over the images. Compute it exactly (no sampling).

# %%
def chance_rate(boxes, grid, patch) -> float:
    # BEGIN SOLUTION
    gh, gw = grid
    cy = np.arange(gh) * patch + patch / 2
    cx = np.arange(gw) * patch + patch / 2
    b = np.asarray(boxes)
    iy = (cy[None] >= b[:, 1:2]) & (cy[None] <= b[:, 3:4])
    ix = (cx[None] >= b[:, 0:1]) & (cx[None] <= b[:, 2:3])
    return float((iy.sum(1) * ix.sum(1) / (gh * gw)).mean())
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
assert 0.0 < chance_rate(test.boxes, GRID, PATCH) < 1.0

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
import json
import vitbook
from pathlib import Path
gh, gw = GRID
share = []
for x0, y0, x1, y1 in test.boxes[:300]:
    inside = sum(x0 <= c * PATCH + PATCH / 2 <= x1 and y0 <= r * PATCH + PATCH / 2 <= y1 for r in range(gh) for c in range(gw))
    share.append(inside / (gh * gw))
assert abs(chance_rate(test.boxes[:300], GRID, PATCH) - np.mean(share)) < 1e-12
facts = json.loads((Path(vitbook.__file__).resolve().parent.parent / "figures" / "facts.json").read_text())["ch10"]
assert abs(chance_rate(test.boxes, GRID, PATCH) - facts["loc_chance"]["value"]) < 1e-9

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 3

# %% [markdown]
# **Q4.** Put it together: `HITS`, the boolean array of Q2 for your rollout maps of all 1,000
# test images; `HIT_RATE`, its mean; `CHANCE`, the null baseline of Q3; and `ABOVE_CHANCE`,
# `True` only if the lower end of the 95% bootstrap interval of the hit rate
# (`interval(HITS)`, given above) is above `CHANCE`.

# %%
# BEGIN SOLUTION
HITS = peak_inside(rollout_maps(ATTN, GRID), test.boxes, PATCH)
HIT_RATE = float(HITS.mean())
CHANCE = chance_rate(test.boxes, GRID, PATCH)
ABOVE_CHANCE = interval(HITS)[0] > CHANCE
# END SOLUTION
print(f"rollout's peak on the object: {HIT_RATE:.1%} (chance {CHANCE:.1%})")

# %% [raw]
# # BEGIN TESTS

# %%
assert len(HITS) == 1000 and isinstance(ABOVE_CHANCE, (bool, np.bool_))

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
import json
import vitbook
from pathlib import Path
from vitbook.analysis import attention_rollout, rollout_cls_map
facts = json.loads((Path(vitbook.__file__).resolve().parent.parent / "figures" / "facts.json").read_text())["ch10"]
ref_maps = rollout_cls_map(attention_rollout(ATTN), GRID).numpy()
flat = ref_maps.reshape(len(ref_maps), -1).argmax(1)
cy, cx = (flat // GRID[1]) * PATCH + PATCH / 2, (flat % GRID[1]) * PATCH + PATCH / 2
x0, y0, x1, y1 = test.boxes.T
ref_hits = (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)
assert abs(HIT_RATE - ref_hits.mean()) < 1e-12
assert abs(HIT_RATE - facts["loc_rollout"]["value"]) <= facts["loc_rollout"]["tol"] + 1e-9
assert bool(ABOVE_CHANCE) == bool(interval(ref_hits)[0] > facts["loc_chance"]["value"])

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# *What the score does not tell you (two or three sentences, not graded automatically):* a map
# can peak on the object because the object is the most colourful thing in the image, which a
# heuristic with no model finds too. Chapter 10 compares rollout with such a heuristic and
# with the same model's random weights; say what each of those baselines rules out.
