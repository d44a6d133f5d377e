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

# %% [markdown]
# ## Why divide by √D<sub>h</sub>: one set of draws is not the experiment
#
# The chapter runs the experiment for seeds 0 to 9. Three seeds at two head sizes already show
# that the ratio of typical softmax gradients at $D_h = 512$ changes from seed to seed, while the
# share of saturated draws (Jacobian norm below 0.01) stays near one half.

# %%
import numpy as np

from vitbook.figures.ch05_attention import FLAT, scale_over_seeds

r = scale_over_seeds(seeds=3, head_dims=(64, 512))
for seed in range(3):
    s, u = r["scaled"]["grad"][seed, 1], r["unscaled"]["grad"][seed, 1]
    print(
        f"seed {seed}: typical gradient ratio at Dh = 512: {np.median(s) / np.median(u):6.1f}x,"
        f" saturated draws: {(u < FLAT).mean():.0%}"
    )

# %% [markdown]
# ## A softmax that cannot overflow

# %%
from vitbook.figures.ch05_attention import naive_softmax, stable_softmax

scores = torch.tensor([[2.0, 11.0, 12.0]]).half()  # float16: e^12 does not fit
print("naive :", naive_softmax(scores))
print("stable:", stable_softmax(scores))
print("torch :", scores.softmax(dim=-1))
