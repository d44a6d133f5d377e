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
# # Notebook for Chapter 10: Inside a trained ViT
#
# The companion of [Chapter 10](../../10-inside-a-trained-vit/) of *Vision Transformers, Computed*. It
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
# ## Train a tiny ViT, then look inside
#
# A TinyViT8 trained for 25 epochs on the digits (the chapter's analyses use the book's
# cached runs); then attention rollout and the mean attention distance of each head.

# %%
import torch

from vitbook.analysis import attention_rollout, mean_attention_distance, rollout_cls_map
from vitbook.data.digits import digits_split
from vitbook.model import VisionTransformer, preset
from vitbook.train import fit

torch.set_num_threads(1)  # small tensors: one thread is as fast and shares the CPU
xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
torch.manual_seed(0)
model = VisionTransformer(cfg=preset("tinyvit8"))
fit(
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
model.eval()
with torch.no_grad():
    out = model.forward_intermediates(xte[:8], attn=True)
grid = model.cfg.image_size // model.cfg.patch_size

# %%
rollout = attention_rollout(out["attn"])
maps = rollout_cls_map(rollout, grid)
print("rollout", tuple(rollout.shape), "class-token maps", tuple(maps.shape))
assert torch.allclose(rollout.sum(-1), torch.ones(()), atol=1e-5)

# %%
for k, a in enumerate(out["attn"], 1):
    dist = mean_attention_distance(a, grid, model.cfg.patch_size)
    print(
        f"block {k}: mean attention distance per head (pixels):",
        [round(float(v), 2) for v in dist.reshape(-1)],
    )
