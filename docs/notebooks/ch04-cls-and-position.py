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
# with the Colab button; the first cell installs `vitbook`, if it is missing, at the edition
# or the commit of the book this copy belongs to.

# %%
# Install the book's package unless it is installed (on Colab or a fresh machine): the edition
# this notebook belongs to, or else the commit the book's site built this copy from. A torch
# that is already installed is kept; where there is none, torch 2.13.0's CPU build comes first.
# The book's numbers were computed with that torch: with another, their last digits can differ.
import importlib.util
import os
import subprocess
import sys

EDITION = None  # this notebook's edition, written when one is released; None: none is yet
COMMIT = None  # the commit of this copy, written by the site's build
REPO = "https://github.com/vitbook/vitbook"
if importlib.util.find_spec("vitbook") is None:
    SOURCE = os.environ.get("VITBOOK_SOURCE")  # another copy of the repository: git+URL
    if EDITION is not None and SOURCE is None:
        WHEEL = f"{REPO}/releases/download/v{EDITION}/vitbook-{EDITION}-py3-none-any.whl"
        PACKAGE = f"vitbook @ {WHEEL}"
    elif EDITION is not None or COMMIT is not None:
        REF = f"v{EDITION}" if EDITION is not None else COMMIT
        PACKAGE = f"vitbook @ {SOURCE or 'git+' + REPO}@{REF}"
    else:
        raise RuntimeError(
            "This copy names no edition and no commit of the book: download the notebook from "
            f"its page of the book (or open it in Colab from there), or git clone {REPO}, "
            "then pip install -e ./vitbook"
        )
    PIP = [sys.executable, "-m", "pip", "install", "-q"]
    if importlib.util.find_spec("torch") is None:
        INDEX = os.environ.get("VITBOOK_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
        subprocess.run([*PIP, "torch==2.13.0", *(["--index-url", INDEX] if INDEX else [])],
                       check=True)
    subprocess.run([*PIP, PACKAGE], check=True)

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
