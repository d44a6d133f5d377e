# %% [raw]
# # ASSIGNMENT CONFIG
# name: a3-position-interpolation
# init_cell: true
# check_all_cell: true
# export_cell: false
# run_tests: false
# solutions_pdf: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Assignment 3: position embeddings at a new resolution
#
# Chapters 4 and 9. A ViT trained at one image size has one learned position embedding per
# patch of its grid. Fine-tuned at a larger size, it has more patches, and the table must be
# resampled as an image over the grid, with the class token's row left alone. You write that
# resampling, then use it to run a model at a size it was not built for. The grader checks
# your code against `vitbook.analysis.interpolate_pos_embed` and `vitbook.model`. Do not call
# `interpolate_pos_embed` in your answers.

# %%
import dataclasses

import torch
import torch.nn.functional as F

from vitbook.model import VisionTransformer, ViTConfig

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 5

# %% [markdown]
# **Q1.** Write `resize_pos_embed(pos, old_grid, new_grid)`: `pos` has shape `(1, 1 + gh*gw, D)`
# (the class token's row first, then the patches in raster order); grids are `(rows, cols)`.
# Return `(1, 1 + gh'*gw', D)`: the class row unchanged, the patch rows laid out as a
# `(1, D, gh, gw)` image, resized with `F.interpolate(..., mode="bicubic",
# align_corners=False, antialias=True)` and flattened back in raster order. For the same grid,
# return the table unchanged.

# %%
def resize_pos_embed(pos: torch.Tensor, old_grid: tuple[int, int], new_grid: tuple[int, int]) -> torch.Tensor:
    # BEGIN SOLUTION
    if tuple(old_grid) == tuple(new_grid):
        return pos
    cls, patches = pos[:, :1], pos[:, 1:]
    d = pos.shape[-1]
    img = patches.reshape(1, *old_grid, d).permute(0, 3, 1, 2)  # (1, D, gh, gw)
    img = F.interpolate(img, size=tuple(new_grid), mode="bicubic", align_corners=False, antialias=True)
    patches = img.permute(0, 2, 3, 1).reshape(1, new_grid[0] * new_grid[1], d)
    return torch.cat([cls, patches], dim=1)
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
_ = torch.manual_seed(0)
pos = torch.randn(1, 1 + 4 * 4, 8)
out = resize_pos_embed(pos, (4, 4), (6, 6))
assert out.shape == (1, 1 + 36, 8)
assert torch.equal(out[:, 0], pos[:, 0])  # the class token's row is copied

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.analysis import interpolate_pos_embed
_ = torch.manual_seed(1)
for old, new, d in [((4, 4), (6, 6), 8), ((6, 6), (4, 4), 8), ((4, 4), (3, 5), 4), ((2, 3), (4, 6), 6)]:
    pos = torch.randn(1, 1 + old[0] * old[1], d)
    ref = interpolate_pos_embed(pos, old, new)
    out = resize_pos_embed(pos, old, new)
    assert out.shape == ref.shape, (old, new)
    assert (out - ref).abs().max() < 1e-5, (old, new)
pos = torch.randn(1, 1 + 9, 4)
assert torch.equal(resize_pos_embed(pos, (3, 3), (3, 3)), pos)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 5

# %% [markdown]
# **Q2.** Write `at_new_size(model, image_size)`: a new `VisionTransformer` whose config is
# `model.cfg` with `image_size` replaced (use `dataclasses.replace`), carrying every weight of
# `model`, with its `pos_embed` resampled by your `resize_pos_embed` from the old patch grid to
# the new one (`cfg.grid` gives a config's grid). The old model must stay as it was. The book's
# model refuses an image of the wrong size (try it: the error names the fix).

# %%
def at_new_size(model: VisionTransformer, image_size: int) -> VisionTransformer:
    # BEGIN SOLUTION
    cfg = dataclasses.replace(model.cfg, image_size=image_size)
    state = dict(model.state_dict())
    with torch.no_grad():
        state["pos_embed"] = resize_pos_embed(state["pos_embed"].clone(), model.cfg.grid, cfg.grid)
    new = VisionTransformer(cfg=cfg)
    new.load_state_dict(state)
    return new.eval()
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
_ = torch.manual_seed(0)
small = VisionTransformer(cfg=ViTConfig(image_size=16, patch_size=4, dim=16, depth=1, heads=2, num_classes=3)).eval()
big = at_new_size(small, 24)
with torch.no_grad():
    assert big(torch.randn(2, 3, 24, 24)).shape == (2, 3)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.analysis import interpolate_pos_embed
_ = torch.manual_seed(2)
for size, new_size in [(16, 24), (16, 32), (24, 16)]:
    cfg = ViTConfig(image_size=size, patch_size=4, dim=16, depth=2, heads=2, num_classes=5)
    small = VisionTransformer(cfg=cfg).eval()
    before = {k: v.clone() for k, v in small.state_dict().items()}
    big = at_new_size(small, new_size)
    ref_cfg = dataclasses.replace(cfg, image_size=new_size)
    ref = VisionTransformer(cfg=ref_cfg).eval()
    state = dict(small.state_dict())
    state["pos_embed"] = interpolate_pos_embed(state["pos_embed"], cfg.grid, ref_cfg.grid)
    _ = ref.load_state_dict(state)
    x = torch.randn(3, 3, new_size, new_size)
    with torch.no_grad():
        assert (big(x) - ref(x)).abs().max() < 1e-4, (size, new_size)
    assert all(torch.equal(before[k], v) for k, v in small.state_dict().items())

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Q3.** Write `pos_table_params(image_size, patch, dim)`: the number of learned parameters in
# the position table of a ViT with square images of side `image_size`, patch `patch` and width
# `dim` (the class token's row included), as a formula.

# %%
def pos_table_params(image_size: int, patch: int, dim: int) -> int:
    # BEGIN SOLUTION
    return ((image_size // patch) ** 2 + 1) * dim
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(pos_table_params(224, 16, 768), int)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
for size, p, d in [(224, 16, 768), (384, 16, 768), (32, 4, 64), (224, 14, 1280)]:
    m = VisionTransformer(cfg=ViTConfig(image_size=size, patch_size=p, dim=d, depth=0, heads=1, num_classes=0))
    assert pos_table_params(size, p, d) == m.pos_embed.numel(), (size, p, d)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
