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
