# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook for Chapter 4: The CLS token and position embeddings
#
# The companion of [Chapter 4](../../04-cls-and-position/) of *Vision Transformers, Computed*. It
# recomputes the chapter's main results with the book's package, `vitbook`, on a CPU in well
# under two minutes. Download it with the button at the top of its page, or open it in Colab
# with the Colab button; the first cell installs `vitbook` at this book's version if it is
# missing.

# %%
# Install the book's package, at the version of this book, unless it is already installed.
import importlib.util
import subprocess
import sys

VITBOOK = "vitbook @ git+https://github.com/vitbook/vitbook@v0.1.0"
if importlib.util.find_spec("vitbook") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", VITBOOK], check=True)

# %% [markdown]
# ## Without positions, shuffling the patches changes nothing
#
# Three copies of ViT-Ti/16 with the same weights differ only in their position table.
# `shuffle_test` runs an image and its patch-shuffled copy and compares the outputs.

# %%
import torch

from vitbook.figures.ch04_cls_position import _three_models, shuffle_test

models = _three_models()
torch.manual_seed(0)
x = torch.randn(1, 3, 224, 224)
perm = torch.randperm(196)
for kind, model in models.items():
    r = shuffle_test(model, x, perm)
    print(f"{kind:9s} class token moves by {r['cls']:.2e}, logits by {r['logits']:.2e}")
assert shuffle_test(models["none"], x, perm)["cls"] < 1e-4
assert shuffle_test(models["learned"], x, perm)["cls"] > 1e-3

# %% [markdown]
# ## The shapes of the class token and the position table

# %%
from vitbook.model import VisionTransformer, preset

tiny = VisionTransformer(cfg=preset("tinyvit8"))
print("cls_token", tuple(tiny.cls_token.shape), "pos_embed", tuple(tiny.pos_embed.shape))
z0 = tiny.forward_intermediates(torch.randn(2, 1, 8, 8))["with_pos"]
print("z0", tuple(z0.shape))
