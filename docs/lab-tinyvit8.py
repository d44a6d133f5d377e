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
# # Lab: TinyViT8 from scratch
#
# In this lab you build a complete Vision Transformer with your own hands, one module at a
# time, and train it on scikit-learn's 8×8 handwritten digits until it classifies more than
# 95% of the held-out images correctly. The whole notebook runs on a laptop CPU in well under
# a minute.
#
# **What you need:** Chapters 2 to 8 (patches, embeddings, attention, the block, the whole
# model). **What you will have:** a model whose every tensor shape you predicted before it
# was computed, and a parameter count you can derive on paper.
#
# The model is the book's *TinyViT8*: images of $8 \times 8$ pixels with one channel, patches
# of $P = 4$ pixels, so $N = 8 \cdot 8 / 4^2 = 4$ patches; width $D = 32$; two heads; two
# encoder blocks; an MLP of width $4D$; ten classes.
#
# Every milestone has the same rhythm:
#
# 1. **Predict the shape first.** Write your answer down before running anything.
# 2. Run the code.
# 3. The **check** cell asserts the shape. If it fails, your model (or your prediction) is wrong.
#
# Download this notebook with the button at the top of the page and run it yourself.

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

# %%
import math
import time

import matplotlib.pyplot as plt
import torch
from torch import nn

from vitbook.data.digits import digits_split
from vitbook.notebook import show  # plots in the page's theme, with alt text

torch.set_num_threads(1)  # small tensors: one thread is as fast and shares the CPU
torch.manual_seed(42)
x_train, y_train, x_test, y_test = digits_split()  # 80/20 split, random_state 42
print("train:", tuple(x_train.shape), "test:", tuple(x_test.shape))

# %% [markdown]
# The images are already scaled to $[0, 1]$ and have shape $(B, C, H, W) = (B, 1, 8, 8)$.
# Here are the first twelve, with their labels.


# %%
def first_digits(theme):
    fig, axes = plt.subplots(2, 6, figsize=(5.4, 2.2), layout="constrained")
    for ax, img, label in zip(axes.flat, x_train[:12], y_train[:12], strict=True):
        ax.imshow(img[0], cmap="gray" if theme == "dark" else "gray_r")
        ax.set_title(int(label))
        ax.axis("off")
    return fig


show(
    first_digits,
    "Twelve 8-by-8 handwritten digits from the training set, each titled with its label.",
)

# %% [markdown]
# ## Milestone 1: the patch embedding
#
# A patch embedding cuts the image into $P \times P$ patches, flattens each one to
# $P^2 C$ numbers and maps it to $D$ numbers with one shared matrix $E$. A `Conv2d` whose
# kernel and stride both equal $P$ does exactly this in one call (Chapter 3).
#
# **Predict the shape first.** A batch of 4 digits, $P = 4$, $D = 32$:
#
# - the output of `Conv2d(1, 32, kernel_size=4, stride=4)`;
# - the same tensor after `.flatten(2)`;
# - after `.transpose(1, 2)`, the sequence of patch tokens.

# %%
B, C, IMG, P, D = 4, 1, 8, 4, 32


class PatchEmbed(nn.Module):
    def __init__(self, patch: int, in_chans: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, N, D)


embed = PatchEmbed(P, C, D)
x = x_train[:B]
grid = embed.proj(x)
flat = grid.flatten(2)
tokens = flat.transpose(1, 2)
print("conv output:", tuple(grid.shape))
print("flattened:  ", tuple(flat.shape))
print("tokens:     ", tuple(tokens.shape))

# %% [markdown]
# **Check.** The grid is $8/4 = 2$ patches per side, so $N = 4$, and each token has $D = 32$
# numbers.

# %%
N = (IMG // P) ** 2
assert grid.shape == (B, D, IMG // P, IMG // P)
assert flat.shape == (B, D, N)
assert tokens.shape == (B, N, D) == (4, 4, 32)
assert torch.equal(embed(x), tokens)
print("milestone 1 passed: patch tokens", tuple(tokens.shape))

# %% [markdown]
# ## Milestone 2: the class token and the position embeddings
#
# The transformer's input is Eq. 1 of the paper: a learned class token $x_\text{class}$ in
# front of the patch tokens, plus a learned position embedding for every position,
#
# $$ z_0 = [\,x_\text{class};\ x_p^1 E;\ \dots;\ x_p^N E\,] + E_\text{pos},
#    \qquad E_\text{pos} \in \mathbb{R}^{(N+1) \times D}. $$
#
# **Predict the shape first.** The class token is stored once, as a parameter of shape
# $(1, 1, D)$. What shape does it have after `expand` to the batch, what shape is the
# sequence after the concatenation, and what shape must the position table have so that
# the addition broadcasts?

# %%
cls_token = nn.Parameter(torch.zeros(1, 1, D))
pos_embed = nn.Parameter(torch.randn(1, N + 1, D) * 0.02)

cls = cls_token.expand(B, -1, -1)
z = torch.cat([cls, tokens], dim=1)
z0 = z + pos_embed
print("cls expanded:", tuple(cls.shape))
print("with cls:    ", tuple(z.shape))
print("z0:          ", tuple(z0.shape))

# %% [markdown]
# **Check.** One more token than patches, $N + 1 = 5$; the table has a row for the class
# token too. A table of shape $(1, N, D)$ is a classic bug: the addition fails, or worse,
# broadcasts where you did not mean it to.

# %%
assert cls.shape == (B, 1, D)
assert z.shape == z0.shape == (B, N + 1, D) == (4, 5, 32)
assert torch.equal(z0[:, 0] - pos_embed[0, 0], cls[:, 0])  # the class token sits at index 0
print("milestone 2 passed: z0", tuple(z0.shape))

# %% [markdown]
# ## Milestone 3: the full model and its parameter count
#
# Now the encoder (Eq. 2 and 3, pre-norm, with residual connections)
#
# $$ z'_\ell = \mathrm{MSA}(\mathrm{LN}(z_{\ell-1})) + z_{\ell-1}, \qquad
#    z_\ell = \mathrm{MLP}(\mathrm{LN}(z'_\ell)) + z'_\ell, $$
#
# with multi-head attention $\mathrm{softmax}(Q K^\top / \sqrt{D_h})\, V$ in each of $k = 2$
# heads of $D_h = D / k = 16$ dimensions (the book's notation: $D_h$ is the head width), and the head (Eq. 4) reading the class token after
# a final LayerNorm. The module names are the ones timm uses, so that at the end of the lab
# your weights load straight into the book's model.
#
# **Predict the shape first.** For $z_0$ of shape $(4, 5, 32)$: the output of `qkv`, the
# queries of one batch in the shape $(B, k, N+1, D_h)$, the attention weights, and the
# logits.
#
# **Predict the count first.** Work out the number of trainable parameters on paper: the
# patch embedding $P^2 C D + D$; the class token $D$; the position table $(N+1) D$; per
# block, the qkv layer $3D^2 + 3D$, the output projection $D^2 + D$, the MLP
# $2 \cdot 4D^2 + 4D + D$ and two LayerNorms $4D$; the final LayerNorm $2D$; the head
# $10 D + 10$.


# %%
class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, D = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # each (B, heads, T, dh)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(self.dh)).softmax(dim=-1)  # (B, heads, T, T)
        out = (weights @ v).transpose(1, 2).reshape(B, T, D)  # heads side by side again
        return self.proj(out), weights


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim, eps=1e-6), Attention(dim, heads)
        self.norm2, self.mlp = nn.LayerNorm(dim, eps=1e-6), Mlp(dim, 4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))[0]  # Eq. 2
        return x + self.mlp(self.norm2(x))  # Eq. 3


class TinyViT(nn.Module):
    def __init__(self, image=8, patch=4, in_chans=1, dim=32, depth=2, heads=2, classes=10):
        super().__init__()
        n = (image // patch) ** 2
        self.patch_embed = PatchEmbed(patch, in_chans, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.patch_embed(x)  # (B, N, D)
        z = torch.cat([self.cls_token.expand(len(z), -1, -1), z], dim=1) + self.pos_embed
        for block in self.blocks:
            z = block(z)  # (B, N+1, D)
        return self.head(self.norm(z)[:, 0])  # Eq. 4: read the class token, (B, classes)


torch.manual_seed(42)
model = TinyViT()
qkv_out = model.blocks[0].attn.qkv(z0)
_, weights = model.blocks[0].attn(z0)
logits = model(x)
n_params = sum(p.numel() for p in model.parameters())
print("qkv output:       ", tuple(qkv_out.shape))
print("attention weights:", tuple(weights.shape))
print("logits:           ", tuple(logits.shape))
print(f"parameters:        {n_params:,}")

# %% [markdown]
# **Check.** The shapes, then your count on paper against the model's count.

# %%
H, T, M = 2, N + 1, 4 * D
assert qkv_out.shape == (B, T, 3 * D)
assert weights.shape == (B, H, T, T) == (4, 2, 5, 5)
assert torch.allclose(weights.sum(-1), torch.ones(B, H, T))  # every row is a distribution
assert logits.shape == (B, 10)
per_block = (3 * D * D + 3 * D) + (D * D + D) + (D * M + M + M * D + D) + 4 * D
on_paper = (P * P * C * D + D) + D + T * D + 2 * per_block + 2 * D + (10 * D + 10)
assert n_params == on_paper == 26_538
print(f"milestone 3 passed: {n_params:,} parameters, as counted on paper")

# %% [markdown]
# ## Milestone 4: train it past 95%
#
# The recipe of the lesson this book grew from: Adam with learning rate $3 \times 10^{-4}$,
# the whole training set as one batch, cross-entropy loss, and 150 passes over it. This lab
# runs twice as many, `EPOCHS = 300`. The training set is small (80% of the digits, 64 pixels
# each), so one step takes a few milliseconds.
#
# **Predict first.** Before running: what is the shape of the logits for the whole test set,
# and of the predicted labels? What is the loss of an untrained ten-class model (hint:
# $\ln 10$)? Roughly what accuracy do you expect after training?

# %%
torch.manual_seed(42)
model = TinyViT()
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
loss_fn = nn.CrossEntropyLoss()
EPOCHS = 300
history = []
start = time.perf_counter()
for epoch in range(EPOCHS):
    model.train()
    loss = loss_fn(model(x_train), y_train)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 10 == 9 or epoch == 0:
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        history.append((epoch + 1, loss.item(), acc))
seconds = time.perf_counter() - start
first_loss = history[0][1]
test_acc = history[-1][2]
print(f"first loss {first_loss:.3f} (ln 10 = {math.log(10):.3f})")
print(f"test accuracy after {EPOCHS} epochs: {test_acc:.1%} in {seconds:.1f} s")

# %%
epochs, losses, accs = zip(*history, strict=True)


def loss_and_accuracy(theme):
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(5.4, 5.0), layout="constrained", sharex=True)
    a1.plot(epochs, losses)
    a1.set(ylabel="training loss", title="Loss")
    a2.plot(epochs, [100 * a for a in accs], color="C1")
    a2.axhline(95, color="gray", lw=1, ls="--")
    a2.text(epochs[-1], 95, "95%", va="bottom", ha="right", color="gray")
    a2.set(xlabel="epoch (full-batch step)", ylabel="test accuracy (%)", title="Accuracy")
    return fig


show(
    loss_and_accuracy,
    "Two line plots over the training epochs: the training loss falls steeply and then flattens;"
    " the test accuracy climbs past the dashed 95 percent line and stays near it.",
)

# %% [markdown]
# **Check.** One row of ten scores per test digit; the loss started near $\ln 10$; and the
# model now beats 95%.

# %%
model.eval()
with torch.no_grad():
    test_logits = model(x_test)
predicted = test_logits.argmax(dim=1)
assert test_logits.shape == (len(y_test), 10) and predicted.shape == y_test.shape
assert abs(first_loss - math.log(10)) < 0.25
assert test_acc > 0.95
assert (predicted == y_test).float().mean().item() == test_acc
print(f"milestone 4 passed: {test_acc:.1%} on {len(y_test)} test digits")

# %% [markdown]
# ## Your model is the book's model
#
# The book's `vitbook.model.VisionTransformer` has the same layout as your `TinyViT`, under
# the same names, and the preset `"tinyvit8"` has the same shape. So it has the same number
# of parameters, your trained weights load into it without a single renamed key, and it
# gives the same logits.

# %%
from vitbook.model import VisionTransformer, preset  # noqa: E402

book_model = VisionTransformer(cfg=preset("tinyvit8")).eval()
book_model.load_state_dict(model.state_dict())  # strict: every key and shape must match
with torch.no_grad():
    gap = (book_model(x_test) - model(x_test)).abs().max().item()
print(f"book model: {book_model.num_params():,} parameters; largest logit difference {gap:.1e}")
assert book_model.num_params() == n_params
assert gap < 1e-4

# %% [markdown]
# The same layout does not mean the same starting point. Your `TinyViT` keeps PyTorch's
# default initialisation (each `nn.Linear` draws Kaiming-uniform weights); the book's model
# follows timm and draws its weights with standard deviation $0.02$. Chapter 9 trains both
# with the same seeds for the same 300 epochs and shows how far apart they end, and how far
# apart they are at epoch 150.
#
# ## Where to go from here
#
# - **Break it on purpose.** Give the position table the shape $(1, N, D)$ and read the
#   error. Then delete the position embeddings altogether and train again: how much accuracy
#   do four patches lose without positions?
# - **Estimate the cost.** Change `patch` to 2. How many tokens, how many attention
#   entries per head, and how many parameters? Predict, then run.
# - **Explain it back.** In three sentences: what the class token is for, why the position
#   table has $N + 1$ rows, and why a `Conv2d` can do the patch embedding.
#
# The [practice notebook](../practice/) continues with five short experiments on this model.
