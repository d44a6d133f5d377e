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
# # Notebook for Chapter 6: Multi-head attention
#
# The companion of [Chapter 6](../../06-multi-head-attention/) of *Vision Transformers, Computed*. It
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
# ## Splitting into heads: the shape of every step

# %%
from vitbook.figures.ch06_multi_head import fused_vs_separate, split_heads_trace

steps, module_diff = split_heads_trace()  # ViT-B/16: D = 768, 12 heads, T = 197
for name, t in steps:
    print(f"{name:40s} {tuple(t.shape)}")
print("the module's own output differs by", module_diff)
assert module_diff < 1e-5

# %% [markdown]
# ## One fused projection equals twelve separate heads

# %%
r = fused_vs_separate()
print(
    f"fused vs separate projections: q, k, v differ by {r['qkv_diff']:.1e},"
    f" outputs by {r['msa_diff']:.1e}"
)
assert r["msa_diff"] < 1e-5
