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
# # Notebook for Chapter 3: Patch embedding
#
# The companion of [Chapter 3](../../03-patch-embedding/) of *Vision Transformers, Computed*. It
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
# ## A strided convolution is a linear map on flattened patches

# %%
import torch

from vitbook.figures.ch03_patch_embedding import embed_linear, embed_naive, embed_wrong_order

torch.manual_seed(0)
proj = torch.nn.Conv2d(3, 192, kernel_size=16, stride=16)
images = torch.randn(2, 3, 64, 64)
with torch.no_grad():
    conv = proj(images).flatten(2).transpose(1, 2)
    linear = embed_linear(images, proj, 16)
    naive = embed_naive(images, proj.weight.reshape(192, -1), proj.bias, 16)
    wrong = embed_wrong_order(images, proj, 16)
print("conv vs linear:", (conv - linear).abs().max().item())
print("conv vs loop:  ", (conv - naive).abs().max().item())
print("conv vs wrong flattening order:", (conv - wrong).abs().max().item())
assert torch.allclose(conv, linear, atol=1e-5) and torch.allclose(conv, naive, atol=1e-5)
assert not torch.allclose(conv, wrong, atol=1e-3)

# %% [markdown]
# ## What the embedding costs in ViT-B/16

# %%
from vitbook import calc
from vitbook.model import preset

m = calc.macs(preset("vit-b/16"))
print(
    f"patch embedding: {m['patch_embed']:,} multiply-adds of {m['total']:,}"
    f" ({m['patch_embed'] / m['total']:.1%})"
)
