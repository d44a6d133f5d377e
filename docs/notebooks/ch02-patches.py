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
