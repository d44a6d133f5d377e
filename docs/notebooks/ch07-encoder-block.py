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
# # Notebook for Chapter 7: The encoder block
#
# The companion of [Chapter 7](../../07-encoder-block/) of *Vision Transformers, Computed*. It
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
# ## Parameters of one block: $12D^2 + 13D$

# %%
from vitbook import calc
from vitbook.model import preset

for name in ("vit-b/16", "vit-l/16", "vit-h/14"):
    cfg = preset(name)
    block = calc.param_breakdown(cfg)["block"]
    print(
        f"{name}: D = {cfg.dim}, one block has {block:,} parameters;"
        f" 12D^2 + 13D = {12 * cfg.dim**2 + 13 * cfg.dim:,}"
    )
    assert block == 12 * cfg.dim**2 + 13 * cfg.dim

# %% [markdown]
# ## GELU dips below zero, ReLU does not

# %%
from vitbook.figures.ch07_block import gelu_minimum

x_min, y_min = gelu_minimum()
print(f"GELU's minimum: {y_min:.4f} at x = {x_min:.4f}")

# %% [markdown]
# ## Pre-norm against post-norm, seed by seed
#
# The chapter averages ten seeds; three are enough to see which statements hold in every seed
# (post-norm's last block gets more gradient, pre-norm's gradient falls with depth) and which
# do not (the direction of post-norm's trend).

# %%
from vitbook.figures.ch07_block import gradient_profile

for seed in range(3):
    pre = gradient_profile("xavier", "pre", seed=seed)["grad"]
    post = gradient_profile("xavier", "post", seed=seed)["grad"]
    print(
        f"seed {seed}: last block post/pre {post[-1] / pre[-1]:.2f},"
        f" first/last pre {pre[0] / pre[-1]:.2f}, post {post[0] / post[-1]:.2f}"
    )
