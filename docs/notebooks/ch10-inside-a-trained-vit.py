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
# # Notebook for Chapter 10: Inside a trained ViT
#
# The companion of [Chapter 10](../../10-inside-a-trained-vit/) of *Vision Transformers, Computed*. It
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
# ## Train a tiny ViT, then look inside
#
# A TinyViT8 trained for 25 epochs on the digits (the chapter's analyses use the book's
# cached runs); then attention rollout and the mean attention distance of each head.

# %%
import torch

from vitbook.analysis import attention_rollout, mean_attention_distance, rollout_cls_map
from vitbook.data.digits import digits_split
from vitbook.model import VisionTransformer, preset
from vitbook.train import fit

torch.set_num_threads(1)  # small tensors: one thread is as fast and shares the CPU
xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
torch.manual_seed(0)
model = VisionTransformer(cfg=preset("tinyvit8"))
fit(
    model,
    (xtr, ytr),
    (xte, yte),
    epochs=25,
    batch_size=None,
    lr=3e-3,
    optimizer="adam",
    seed=0,
    desc="digits",
)
model.eval()
with torch.no_grad():
    out = model.forward_intermediates(xte[:8], attn=True)
grid = model.cfg.image_size // model.cfg.patch_size

# %%
rollout = attention_rollout(out["attn"])
maps = rollout_cls_map(rollout, grid)
print("rollout", tuple(rollout.shape), "class-token maps", tuple(maps.shape))
assert torch.allclose(rollout.sum(-1), torch.ones(()), atol=1e-5)

# %%
for k, a in enumerate(out["attn"], 1):
    dist = mean_attention_distance(a, grid, model.cfg.patch_size)
    print(
        f"block {k}: mean attention distance per head (pixels):",
        [round(float(v), 2) for v in dist.reshape(-1)],
    )
