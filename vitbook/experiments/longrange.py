"""Chapter 1's long-range task: a small ViT, two ablations of it and a SmallCNN of about its
size on mirrored strips.

``longrange_run`` trains one model on the strips of one width with one seed. The data of seed
``s`` are generated with seeds ``1000 + s`` (training), ``2000 + s`` (validation) and
``3000 + s`` (test); the model's weights and the data order come from ``s`` too, so the seeds
give independent repetitions of the experiment.

Two training budgets:

* ``"plateau"`` (the book's): AdamW at a constant rate after a one-epoch warm-up for
  :data:`MAX_EPOCHS` epochs, the test set scored with the weights of the epoch with the best
  validation accuracy. The rate never decays, so a run that sits at chance for a while can
  still leave it late, and the curves show each run flat well before the end. (Early stopping
  would end a run during its stretch at chance, where the validation accuracy does not move.)
* ``"short"``: the fixed budget of the book's first edition, :data:`SHORT_EPOCHS` epochs with a
  cosine decay to zero, scored at the end. It shows what a budget that decides the result
  looks like.

The models (``model=``):

* ``"vit"``: one patch per cell, learned position table, CLS read-out;
* ``"vit_nopos"``: the same without any position table, which sees the strip as a set of cells;
* ``"vit_local"``: attention limited to the cells within :data:`LOCAL_RADIUS` of each token
  (mean-pooled read-out, the class token kept out): a ViT given a CNN's reach, the ablation
  that tests whether global attention is what solves the task;
* ``"cnn"``: ``SmallCNN`` of about the ViT's parameter count.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from vitbook.data.longrange import mirror_strips
from vitbook.experiments._pin import deterministic
from vitbook.model import Attention, VisionTransformer, ViTConfig
from vitbook.train import SmallCNN, cnn_width_for, fit

TASK = {"rows": 1, "cols": 16, "cell": 4, "pairs": 1}
N_TRAIN, N_VAL, N_TEST, BATCH, LR = 4000, 1000, 1000, 64, 1e-3
MAX_EPOCHS = 60  # the plateau budget
SHORT_EPOCHS = 30  # the short budget: cosine decay to zero over these epochs
FAILED = 0.6  # a run has left chance (50%) once its validation accuracy reaches this
LOCAL_RADIUS = 2  # cells each token of vit_local sees on either side (two blocks: 4 cells)
MODELS = ("vit", "vit_nopos", "vit_local", "cnn")


def task_config(cols: int = TASK["cols"]) -> ViTConfig:
    """The small ViT of the experiment: one patch per cell, ``cols`` tokens plus CLS."""
    h, w = TASK["rows"] * TASK["cell"], cols * TASK["cell"]
    return ViTConfig(
        image_size=(h, w), patch_size=TASK["cell"], in_chans=1, dim=32, depth=2, heads=2,
        num_classes=2,
    )  # fmt: skip


def cnn_width() -> int:
    """The SmallCNN width whose parameter count is closest to the ViT's (16 columns)."""
    return cnn_width_for(VisionTransformer(cfg=task_config()).num_params(), in_chans=1,
                         num_classes=2)  # fmt: skip


class WindowedAttention(Attention):
    """``Attention`` in which each patch token sees only the patch tokens at most ``radius``
    cells from its own, and the class token only itself (the strips have one row of cells,
    so a token's index is its column). The weights and their names are ``Attention``'s."""

    def __init__(self, *, dim: int, heads: int, cols: int, radius: int) -> None:
        super().__init__(dim=dim, heads=heads)
        col = torch.arange(cols)
        allowed = torch.zeros(cols + 1, cols + 1, dtype=torch.bool)
        allowed[0, 0] = True
        allowed[1:, 1:] = (col[:, None] - col[None, :]).abs() <= radius
        self.register_buffer("allowed", allowed, persistent=False)

    def forward(self, x: torch.Tensor, *, return_weights: bool = False):
        B, T, D = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, self.head_dim)  # (B, T, 3, heads, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, heads, T, Dh)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.allowed)
        return self.proj(out.transpose(1, 2).reshape(B, T, D)), None


def build(model: str, cols: int) -> torch.nn.Module:
    """One of :data:`MODELS` for strips of ``cols`` cells (the caller seeds torch first)."""
    cfg = task_config(cols)
    if model == "cnn":
        return SmallCNN(in_chans=1, num_classes=2, width=cnn_width())
    if model == "vit":
        return VisionTransformer(cfg=cfg)
    if model == "vit_nopos":
        return VisionTransformer(cfg=dataclasses.replace(cfg, pos_embed="none"))
    if model == "vit_local":
        vit = VisionTransformer(cfg=dataclasses.replace(cfg, pool="mean"))
        for block in vit.blocks:
            local = WindowedAttention(dim=cfg.dim, heads=cfg.heads, cols=cols, radius=LOCAL_RADIUS)
            local.load_state_dict(block.attn.state_dict())  # the book's initial weights
            block.attn = local
        return vit
    raise ValueError(f"model {model!r} is unknown; use one of {', '.join(MODELS)}")


# --8<-- [start:longrange-run]
def longrange_run(
    model: str, seed: int, budget: str = "plateau", cols: int = 16, warmup: int = 1
) -> dict:
    """Train ``model`` on strips of ``cols`` cells with one seed, under one ``budget``, the
    learning rate warmed up over ``warmup`` epochs."""
    task = {**TASK, "cols": cols}
    train = mirror_strips(N_TRAIN, seed=1000 + seed, **task)
    val = mirror_strips(N_VAL, seed=2000 + seed, **task)
    test = mirror_strips(N_TEST, seed=3000 + seed, **task)
    torch.manual_seed(seed)
    net = build(model, cols)
    if budget == "plateau":  # long, and read at the best validation epoch
        kw = dict(epochs=MAX_EPOCHS, schedule="constant", patience=MAX_EPOCHS)
    elif budget == "short":  # the first edition's fixed budget
        kw = dict(epochs=SHORT_EPOCHS, schedule="cosine")
    else:
        raise ValueError(f"budget {budget!r} is unknown; use 'plateau' or 'short'")
    with deterministic():
        hist = fit(net, train[:2], val[:2], batch_size=BATCH, lr=LR, weight_decay=0.05,
                   warmup_epochs=warmup, seed=seed, progress=False, desc=model, **kw)  # fmt: skip
    with torch.no_grad():
        pred = net(test[0]).argmax(-1)
    return {
        "params": net.num_params(),
        "val_acc": hist.test_acc,  # per epoch: the curve early stopping watched
        "train_acc": hist.train_acc,
        "epochs": hist.epochs,
        "best_epoch": hist.best_epoch + 1,
        "test_acc": float((pred == test[1]).float().mean()),
        "hit": (pred == test[1]).numpy(),  # per test part: was it classified right?
        "flagged": (pred == 1).numpy(),  # per test part: called defective?
        "distance": test[2].numpy(),  # per test part: pixels to the partner, 0 if intact
        "seconds": hist.seconds,
    }
    # --8<-- [end:longrange-run]
