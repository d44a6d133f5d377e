# %% [raw]
# # ASSIGNMENT CONFIG
# name: a1-patch-embedding
# init_cell: true
# check_all_cell: true
# export_cell: false
# run_tests: false
# solutions_pdf: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Assignment 1: patch embedding by hand
#
# Chapters 2 and 3. You write the patch cut and the patch embedding yourself, with plain tensor
# operations, and the grader checks them against the book's package (`vitbook.patches` and
# `vitbook.model.PatchEmbed`). Do not call `vitbook.patches.patchify` or a `Conv2d` in your
# answers: the point is to see that a strided convolution is one shared linear map per patch.
#
# Run `grader.check("q1")` (and so on) after each answer to run the visible checks. The
# instructor's grader also runs hidden checks on other shapes.

# %%
import torch

from vitbook.model import PatchEmbed

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 4

# %% [markdown]
# **Q1.** Write `my_patchify(images, patch)`: a batch `(B, C, H, W)` becomes `(B, N, C*P*P)`
# with `N = (H/P)(W/P)`, patches in raster order (left to right, then top to bottom), each patch
# flattened channel first (all of channel 0's `P*P` pixels, row by row, then channel 1's...).
# If `patch` does not divide `H` or `W`, raise a `ValueError` whose message says so.

# %%
def my_patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    # BEGIN SOLUTION
    b, c, h, w = images.shape
    if h % patch or w % patch:
        raise ValueError(f"image {h}x{w} is not divisible by patch size {patch}")
    rows, cols = h // patch, w // patch
    x = images.reshape(b, c, rows, patch, cols, patch).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(b, rows * cols, c * patch * patch)
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
assert my_patchify(x, 4).shape == (2, 4, 48)

# %%
# the first patch of the first image starts with channel 0's top-left 4 x 4 block
x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
assert torch.equal(my_patchify(x, 4)[0, 0, :4], x[0, 0, 0, :4])

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
from vitbook.patches import patchify
g = torch.Generator().manual_seed(1)
for shape, p in [((2, 3, 8, 8), 4), ((1, 3, 12, 8), 4), ((3, 1, 6, 9), 3), ((1, 2, 10, 10), 5)]:
    imgs = torch.randn(*shape, generator=g)
    assert torch.equal(my_patchify(imgs, p), patchify(imgs, p)), (shape, p)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
try:
    my_patchify(torch.zeros(1, 3, 10, 8), 4)
except ValueError as e:
    assert "divisible" in str(e) or "divide" in str(e)
else:
    raise AssertionError("a 10x8 image with patch 4 must raise ValueError")

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 4

# %% [markdown]
# **Q2.** Write `embed_by_hand(images, embed)`: given a `PatchEmbed` module `embed` (its
# `embed.proj` is a `Conv2d` with kernel = stride = P), return exactly what `embed(images)`
# returns, `(B, N, D)`, using only `my_patchify`, the convolution's `weight` and `bias`, and a
# matrix product. Hint: the weight has shape `(D, C, P, P)`; what shape must it take to multiply
# a flattened patch?

# %%
def embed_by_hand(images: torch.Tensor, embed: PatchEmbed) -> torch.Tensor:
    # BEGIN SOLUTION
    w = embed.proj.weight  # (D, C, P, P)
    p = w.shape[-1]
    e = w.reshape(w.shape[0], -1).T  # (C*P*P, D): the shared linear map E
    return my_patchify(images, p) @ e + embed.proj.bias
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
_ = torch.manual_seed(0)
emb = PatchEmbed(patch_size=4, in_chans=3, dim=5)
imgs = torch.randn(2, 3, 8, 8)
with torch.no_grad():
    assert embed_by_hand(imgs, emb).shape == (2, 4, 5)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
_ = torch.manual_seed(3)
for p, c, d, hw in [(4, 3, 5, (8, 8)), (2, 1, 7, (6, 4)), (8, 3, 16, (16, 24))]:
    emb = PatchEmbed(patch_size=p, in_chans=c, dim=d)
    imgs = torch.randn(2, c, *hw)
    with torch.no_grad():
        diff = (embed_by_hand(imgs, emb) - emb(imgs)).abs().max().item()
    assert diff < 1e-5, (p, c, d, diff)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Q3.** Write `patch_embed_params(patch, channels, dim)`: the number of trainable
# parameters of the patch embedding, as a formula (no module built). Check it against
# `sum(p.numel() for p in PatchEmbed(...).parameters())`.

# %%
def patch_embed_params(patch: int, channels: int, dim: int) -> int:
    # BEGIN SOLUTION
    return patch * patch * channels * dim + dim
    # END SOLUTION


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(patch_embed_params(4, 3, 5), int)

# %%
""" # BEGIN TEST CONFIG
hidden: true
""" # END TEST CONFIG
for p, c, d in [(16, 3, 768), (4, 1, 32), (14, 3, 1280), (7, 2, 9)]:
    want = sum(q.numel() for q in PatchEmbed(patch_size=p, in_chans=c, dim=d).parameters())
    assert patch_embed_params(p, c, d) == want, (p, c, d)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
