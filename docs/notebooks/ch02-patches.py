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
# # Notebook for Chapter 2: From image to sequence: patches
#
# The companion of [Chapter 2](../../02-patches/) of *Vision Transformers, Computed*. It
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
# ## Tokens and attention entries per patch size

# %%
import torch

from vitbook.figures.ch02_patches import token_table
from vitbook.patches import check_divisible, patchify

for p, row in token_table().items():
    print(
        f"P = {p:2d}: {row['tokens']:5d} tokens, {row['flat']:5d} values each,"
        f" {row['entries']:>9,} attention entries per head"
    )

# %% [markdown]
# ## Cutting a batch into patches

# %%
x = torch.randn(4, 1, 28, 28)
seq = patchify(x, 7)
print(tuple(seq.shape))  # (B, N, C P^2)
assert seq.shape == (4, 16, 49)

# %%
try:
    check_divisible(225, 225, 16)
except ValueError as err:
    print("refused:", err)

# %% [markdown]
# ## Which pixel lands where
#
# Equation 2.3 as code: the pixel of channel `c` at (`row`, `col`) is entry
# `c P^2 + u P + v` of patch `m W/P + n`. Check it against `patchify` for every pixel of a
# small image, then try a pixel of your own.

# %%
from vitbook.figures.ch02_patches import pixel_to_token

img = torch.arange(3 * 8 * 12, dtype=torch.float32).reshape(1, 3, 8, 12)  # unique values
seq = patchify(img, 4)[0]
for c in range(3):
    for row in range(8):
        for col in range(12):
            i, f = pixel_to_token(c, row, col, 4, 12)
            assert seq[i, f] == img[0, c, row, col]
print("every pixel where the formula says; e.g. green (1, 5, 9) ->", pixel_to_token(1, 5, 9, 4, 12))
