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
# # Notebook for Chapter 5: Self-attention
#
# The companion of [Chapter 5](../../05-self-attention/) of *Vision Transformers, Computed*. It
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
# ## The worked example, with and without the scale

# %%
import torch

from vitbook.figures.ch05_attention import four_tokens_attention, worked_attention

for scale in (False, True):
    w = worked_attention(scale=scale)
    print(
        "scaled" if scale else "unscaled",
        {k: v.round(3).tolist() for k, v in w.items() if getattr(v, "ndim", 0) <= 2},
    )

# %% [markdown]
# ## Four tokens: every row of weights sums to one

# %%
d = four_tokens_attention()
for name, t in d.items():
    print(f"{name:8s} {tuple(t.shape)}")
a = d["a"]  # the attention weights: one row per query
print("rows of A sum to", a.sum(-1).tolist())
assert torch.allclose(a.sum(-1), torch.ones((), dtype=a.dtype), atol=1e-6)
