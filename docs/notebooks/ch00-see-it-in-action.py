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
# # Notebook for Chapter 0: See it in action
#
# The companion of [Chapter 0](../../00-see-it-in-action/) of *Vision Transformers, Computed*. It
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
# ## One image through the tiny ViT
#
# `run_face_model` builds the chapter's model (a $224 \times 224$ face, patches of 32 pixels),
# sets its weights by hand from the face and runs it once, keeping every stage.

# %%
import torch

from vitbook.figures.ch00_see_it import run_face_model

model, out, basis = run_face_model()
for name in ("patches", "with_cls", "with_pos", "encoded", "pooled", "logits"):
    print(f"{name:10s} {tuple(out[name].shape)}")
print("attention per block:", [tuple(a.shape) for a in out["attn"]])
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")
assert out["patches"].shape == (1, 49, 8) and out["with_cls"].shape == (1, 50, 8)

# %% [markdown]
# Every row of an attention matrix is a probability distribution over the 50 tokens:

# %%
for k, a in enumerate(out["attn"], 1):
    print(f"block {k}: rows sum to one:", torch.allclose(a.sum(-1), torch.ones(())))
cls_row = out["attn"][0][0, 0, 0, 1:]  # block 1, head 1, the class token's row, patches only
print("patch the class token looks at most in block 1, head 1:", int(cls_row.argmax()))
