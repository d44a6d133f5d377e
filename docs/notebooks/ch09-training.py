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
# # Notebook for Chapter 9: Training, fine-tuning and higher resolution
#
# The companion of [Chapter 9](../../09-training/) of *Vision Transformers, Computed*. It
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
# ## A small training run
#
# The chapter's runs take minutes (the book caches them). Here the same `fit` trains the
# lab's TinyViT8 on scikit-learn's digits for 25 full-batch epochs: enough to see the curve.

# %%
import torch

from vitbook.analysis import interpolate_pos_embed
from vitbook.data.digits import digits_split
from vitbook.model import VisionTransformer, preset
from vitbook.train import fit

torch.set_num_threads(1)  # small tensors: one thread is as fast and shares the CPU
xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
torch.manual_seed(0)
model = VisionTransformer(cfg=preset("tinyvit8"))
hist = fit(
    model,
    (xtr, ytr),
    (xte, yte),
    epochs=25,
    batch_size=None,
    lr=3e-3,
    optimizer="adam",
    seed=0,
    desc="digits",
)
print(
    f"held-out accuracy after {len(hist.test_acc)} epochs: {hist.test_acc[-1]:.1%}"
    f" (best {hist.best_test_acc:.1%})"
)
assert hist.best_test_acc > 0.5

# %% [markdown]
# ## Fine-tuning at a higher resolution: interpolate the position table
#
# A ViT-B/16 trained at 224 pixels has a $14 \times 14$ table; at 384 pixels it needs
# $24 \times 24$. The table is resized as an image, the class token's row kept.

# %%
table = torch.randn(1, 1 + 14 * 14, 768)
new = interpolate_pos_embed(table, (14, 14), (24, 24))
print(tuple(table.shape), "->", tuple(new.shape))
assert new.shape == (1, 1 + 24 * 24, 768) and torch.equal(new[:, 0], table[:, 0])
