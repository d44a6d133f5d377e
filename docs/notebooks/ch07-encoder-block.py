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
# with the Colab button; the first cell installs `vitbook` as the edition of the book this
# notebook belongs to, if it is missing.

# %%
# Install the book's package, at the edition this notebook belongs to, unless it is already
# installed (on Colab or a fresh machine; see the README).
import importlib.util
import subprocess
import sys

EDITION = None  # this notebook's edition, written when one is released; None: none is yet
REPO = "https://github.com/vitbook/vitbook"
if importlib.util.find_spec("vitbook") is None:
    if EDITION is None:
        raise RuntimeError(
            "No edition of the book has been released yet, so there is no vitbook package to "
            f"install by its version. Install it from the repository: git clone {REPO}, then "
            "pip install -e ./vitbook"
        )
    WHEEL = f"{REPO}/releases/download/v{EDITION}/vitbook-{EDITION}-py3-none-any.whl"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"vitbook @ {WHEEL}"], check=True)

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
