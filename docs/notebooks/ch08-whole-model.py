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
# # Notebook for Chapter 8: The whole model
#
# The companion of [Chapter 8](../../08-whole-model/) of *Vision Transformers, Computed*. It
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
# ## Parameters and compute of the paper's models

# %%
from vitbook import calc
from vitbook.model import preset

for name in ("vit-b/16", "vit-l/16", "vit-h/14"):
    cfg = preset(name)
    params = calc.param_breakdown(cfg)["total"]
    gmacs = calc.macs(cfg)["total"] / 1e9
    print(f"{name}: {params / 1e6:.1f} M parameters, {gmacs:.1f} GMACs at {cfg.image_size} px")

# %% [markdown]
# ## Higher resolution: more tokens, many more pairs

# %%
b16 = preset("vit-b/16")
print("token pairs at 384 px vs 224 px:", round(calc.token_pairs_ratio(b16, 384), 2))
for step, shape in calc.shape_trace(b16):
    print(f"{step:28s} {shape}")

# %% [markdown]
# ## The paper's pre-training compute, from the MAC count
#
# About 6 FLOPs per forward MAC per training image (a forward and a backward pass), times the
# 303M images of JFT-300M, times the epochs, against Table 6 of the paper.

# %%
from vitbook.figures.ch08_scaling import scaling_rows

for r in scaling_rows():
    print(
        f"{r['name']:9s} {r['epochs']:2d} epochs: estimate {r['estimate']:7,.0f} exaFLOPs,"
        f" Table 6 {r['exaflops']:5,}, ImageNet top-1 {r['top1']}%"
    )
