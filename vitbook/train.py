"""The book's training loop and its small CNN baseline.

One function, ``fit``, trains any classifier that maps images (B, C, H, W) to logits (B, K):
seeded shuffling, Adam or AdamW, a linear warm-up followed by a cosine or linear decay,
gradient clipping, separate learning rates for the backbone and the head (or a frozen
backbone), early stopping, and a progress bar that can be switched off. It runs on the CPU by
default and on CUDA when one is present. It returns a ``History`` of per-epoch numbers.

``SmallCNN`` is the convolutional baseline of Chapter 9: three stages of 3x3 convolutions with
a width you choose, so that its parameter count can be matched to a ViT's.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "History",
    "SmallCNN",
    "accuracy",
    "cnn_width_for",
    "fit",
    "lr_at",
    "pick_device",
    "prepare_finetune",
]

Data = tuple[torch.Tensor, torch.Tensor]  # (images (n, C, H, W), labels (n,))


@dataclass
class History:
    """What happened during ``fit``, one entry per finished epoch."""

    train_loss: list[float] = field(default_factory=list)  # mean cross-entropy over the epoch
    train_acc: list[float] = field(default_factory=list)  # accuracy on the batches as trained
    test_acc: list[float] = field(default_factory=list)  # held-out accuracy after the epoch
    lr: list[float] = field(default_factory=list)  # backbone learning rate at the epoch's end
    best_epoch: int = -1  # 0-based epoch with the best held-out accuracy
    best_test_acc: float = 0.0
    stopped_early: bool = False  # patience ran out
    diverged: bool = False  # the loss became NaN or infinite; training stopped there
    seconds: float = 0.0  # wall-clock time of the whole run

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    @property
    def final_test_acc(self) -> float:
        return self.test_acc[-1] if self.test_acc else float("nan")


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else CUDA when present, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@torch.no_grad()
def accuracy(model: nn.Module, data: Data, *, batch_size: int = 1024) -> float:
    """Fraction of ``data`` the model classifies correctly (evaluated in eval mode)."""
    x, y = data
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    correct = 0
    for i in range(0, len(x), batch_size):
        logits = model(x[i : i + batch_size].to(device))
        correct += (logits.argmax(-1).cpu() == y[i : i + batch_size]).sum().item()
    model.train(was_training)
    return correct / max(1, len(x))


# --8<-- [start:schedule]
def lr_at(step: int, *, total: int, warmup: int, schedule: str = "cosine") -> float:
    """The learning-rate multiplier at optimiser step ``step`` (0-based), between 0 and 1.

    Linear warm-up from 1/warmup to 1 over ``warmup`` steps, then ``"cosine"`` decay to 0,
    ``"linear"`` decay to 0, or ``"constant"``.
    """
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)  # 0 -> 1 after the warm-up
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "linear":
        return 1.0 - progress
    raise ValueError(f"unknown schedule {schedule!r}; use 'cosine', 'linear' or 'constant'")
    # --8<-- [end:schedule]


# --8<-- [start:param-groups]
def _param_groups(
    model: nn.Module,
    *,
    lr: float,
    head_lr: float | None,
    head_prefix: str,
    weight_decay: float,
    layer_decay: float | None = None,
) -> list[dict]:
    """Parameter groups: the backbone at ``lr`` and the head at ``head_lr`` (default: ``lr``),
    each split into weights that decay and those that do not.

    As timm does, biases, other one-dimensional parameters (LayerNorm's scale and shift) and
    the names in the model's ``no_weight_decay()`` (the ViT's ``pos_embed`` and ``cls_token``)
    get no weight decay: shrinking them toward zero is no regulariser, only a bias.

    A backbone ``lr`` of 0 freezes it: its parameters get ``requires_grad=False`` and are left
    out of the optimiser, which is "head-only" fine-tuning (a linear probe on frozen features).

    With ``layer_decay`` (0 < d < 1; BEiT's layer-wise learning-rate decay, in timm as
    ``param_groups_layer_decay``), block ``i`` of ``L`` learns at ``lr * d ** (L - i)``: the
    embeddings (``patch_embed``, ``cls_token``, ``pos_embed``) at ``d ** (L + 1)``, the final
    ``norm`` at ``lr``, so the layers nearest the input, whose features transfer best, move
    least.
    """
    skip = set(model.no_weight_decay()) if hasattr(model, "no_weight_decay") else set()
    depth = len(getattr(model, "blocks", ()))
    groups: dict[tuple[bool, float, bool], list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        in_head = name.startswith(head_prefix)
        if not in_head and lr == 0:
            p.requires_grad_(False)
            continue
        scale = 1.0
        if layer_decay is not None and not in_head:
            scale = layer_decay ** (depth + 1 - _layer_of(name, depth))
        decays = not (p.ndim <= 1 or name.endswith(".bias") or name in skip)
        groups.setdefault((in_head, scale, decays), []).append(p)
    if not any(head for head, _, _ in groups):
        raise ValueError(f"no parameter name starts with {head_prefix!r}; pass head_prefix=")
    out = []
    for (head, scale, decays), params in sorted(groups.items(), key=lambda kv: kv[0]):
        base = (head_lr if head_lr is not None else lr) if head else lr * scale
        out.append({"params": params, "lr": base, "base_lr": base,
                    "weight_decay": weight_decay if decays else 0.0})  # fmt: skip
    return out
    # --8<-- [end:param-groups]


def _layer_of(name: str, depth: int) -> int:
    """The layer of a backbone parameter for layer-wise decay: 0 for the embeddings, ``i + 1``
    for ``blocks.i``, ``depth + 1`` for what comes after the blocks (the final norm)."""
    if name.startswith("blocks."):
        return int(name.split(".")[1]) + 1
    if name.startswith(("patch_embed", "cls_token", "pos_embed")):
        return 0
    return depth + 1


def _progress(iterable, enabled: bool | None, desc: str):
    if enabled is None:  # on for a person at a terminal, off in builds and tests
        enabled = sys.stderr.isatty()
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, leave=False)


# --8<-- [start:fit]
@torch.enable_grad()  # trains even when called under no_grad (say, by a cached run)
def fit(
    model: nn.Module,
    train: Data,
    test: Data,
    *,
    epochs: int,
    batch_size: int | None = None,
    lr: float,
    optimizer: str = "adamw",
    weight_decay: float = 0.0,
    schedule: str = "constant",
    warmup_epochs: float = 0.0,
    clip_norm: float | None = None,
    head_lr: float | None = None,
    head_prefix: str = "head",
    layer_decay: float | None = None,
    patience: int | None = None,
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None,
    label_smoothing: float = 0.0,
    eval_every: int = 1,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: bool | None = None,
    desc: str = "train",
) -> History:
    """Train ``model`` in place on ``train`` and measure it on ``test`` after every epoch.

    Args:
        model: maps images (B, C, H, W) to logits (B, K); its head's parameter names start
            with ``head_prefix``.
        train, test: (images, labels) tensors on the CPU.
        epochs: passes over ``train``.
        batch_size: examples per step; ``None`` means the whole set (full-batch).
        lr: peak learning rate of the backbone; 0 freezes the backbone (head-only).
        optimizer: ``"adamw"`` (decoupled weight decay) or ``"adam"``.
        weight_decay: AdamW's decay (the paper pre-trains with large decay); biases, norms,
            ``pos_embed`` and ``cls_token`` get none (see ``_param_groups``).
        schedule: ``"constant"``, ``"cosine"`` or ``"linear"`` after the warm-up.
        warmup_epochs: length of the linear warm-up, in epochs (fractions allowed).
        clip_norm: clip the global gradient norm to this value (the paper: 1).
        head_lr: learning rate of the head, if different from ``lr``.
        layer_decay: layer-wise learning-rate decay of the backbone (see ``_param_groups``).
        patience: stop after this many epochs without a better held-out accuracy and restore
            the best weights. The held-out set is ``test``: pass a validation split there if
            the test set must stay untouched.
        augment: ``f(x, generator) -> x`` applied to each training batch.
        label_smoothing: passed to the cross-entropy.
        eval_every: measure ``test`` every this many epochs (and after the last one); the
            epochs in between get NaN in ``History.test_acc``.
        seed: seeds the shuffling, the augmentation and dropout; same seed, same run.
        device: where to train; default CUDA when present, else the CPU.
        progress: show a tqdm bar; default only when stderr is a terminal.
        desc: the bar's label.

    Returns:
        a ``History``. The model ends on the CPU in eval mode (with the best weights if
        ``patience`` was given); a run whose loss turns NaN stops and sets ``diverged``.
    """
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)  # shuffling and augmentation only
    dev = pick_device(device)
    model.to(dev)
    x_train, y_train = train
    n = len(x_train)
    bs = n if batch_size is None else min(batch_size, n)
    steps_per_epoch = math.ceil(n / bs)
    total = epochs * steps_per_epoch
    warmup = round(warmup_epochs * steps_per_epoch)

    groups = _param_groups(
        model, lr=lr, head_lr=head_lr, head_prefix=head_prefix, weight_decay=weight_decay,
        layer_decay=layer_decay,
    )  # fmt: skip
    opt_cls = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}[optimizer]
    opt = opt_cls(groups)

    hist = History()
    best_state, bad_epochs, step, mult = None, 0, 0, 0.0
    start = time.perf_counter()
    for epoch in _progress(range(epochs), progress, desc):
        model.train()
        order = torch.randperm(n, generator=gen)
        loss_sum, correct = 0.0, 0
        for i in range(0, n, bs):
            idx = order[i : i + bs]
            xb, yb = x_train[idx], y_train[idx]
            if augment is not None:
                xb = augment(xb, gen)
            xb, yb = xb.to(dev), yb.to(dev)
            mult = lr_at(step, total=total, warmup=warmup, schedule=schedule)
            for g in opt.param_groups:  # the schedule scales every group's own base rate
                g["lr"] = g["base_lr"] * mult
            logits = model(xb)  # (B, K)
            loss = F.cross_entropy(logits, yb, label_smoothing=label_smoothing)
            if not torch.isfinite(loss):
                hist.diverged = True
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            opt.step()
            step += 1
            loss_sum += loss.item() * len(yb)
            correct += (logits.argmax(-1) == yb).sum().item()
        if hist.diverged:
            hist.train_loss.append(float("nan"))
            hist.train_acc.append(correct / n)
            hist.test_acc.append(accuracy(model, test))
            hist.lr.append(lr * mult)
            break
        hist.train_loss.append(loss_sum / n)
        hist.train_acc.append(correct / n)
        hist.lr.append(lr * mult)
        if (epoch + 1) % eval_every and epoch + 1 < epochs:
            hist.test_acc.append(float("nan"))
            continue
        hist.test_acc.append(accuracy(model, test))
        if hist.test_acc[-1] > hist.best_test_acc:
            hist.best_test_acc, hist.best_epoch, bad_epochs = hist.test_acc[-1], epoch, 0
            if patience is not None:
                best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if patience is not None and bad_epochs >= patience:
                hist.stopped_early = True
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    hist.seconds = time.perf_counter() - start
    model.to("cpu").eval()
    return hist
    # --8<-- [end:fit]


# --8<-- [start:small-cnn]
class SmallCNN(nn.Module):
    """A small convolutional baseline: three stages of two 3x3 convolutions, each stage
    halving the resolution and doubling the width, then global average pooling and a head.

    Its built-in assumptions are exactly what a ViT lacks: locality (3x3 kernels) and
    translation equivariance (shared kernels), plus BatchNorm.
    """

    def __init__(self, *, in_chans: int = 3, num_classes: int = 10, width: int = 16) -> None:
        """
        Args:
            in_chans: input channels.
            num_classes: outputs of the head.
            width: channels of the first stage (then 2x and 4x); sets the parameter count.
        """
        super().__init__()

        def stage(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
                nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
                nn.BatchNorm2d(c_out),
                nn.ReLU(inplace=True),
            )

        w = width
        self.features = nn.Sequential(
            stage(in_chans, w),  # (B, w, H, W)
            nn.MaxPool2d(2),  # (B, w, H/2, W/2)
            stage(w, 2 * w),  # (B, 2w, H/2, W/2)
            nn.MaxPool2d(2),  # (B, 2w, H/4, W/4)
            stage(2 * w, 4 * w),  # (B, 4w, H/4, W/4)
            nn.AdaptiveAvgPool2d(1),  # (B, 4w, 1, 1)
            nn.Flatten(),  # (B, 4w)
        )
        self.head = nn.Linear(4 * w, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))  # (B, K)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
        # --8<-- [end:small-cnn]


def cnn_width_for(target_params: int, *, in_chans: int = 3, num_classes: int = 10) -> int:
    """The ``SmallCNN`` width whose parameter count is closest to ``target_params``."""
    best, best_err = 1, float("inf")
    for w in range(1, 257):
        p = SmallCNN(in_chans=in_chans, num_classes=num_classes, width=w).num_params()
        if abs(p - target_params) < best_err:
            best, best_err = w, abs(p - target_params)
        if p > target_params:
            break
    return best


# --8<-- [start:finetune-recipe]
def prepare_finetune(
    cfg, checkpoint: str, *, num_classes: int, image_size: int | None = None, mode: str = "full"
) -> tuple[nn.Module, dict]:
    """Load a timm-layout checkpoint for fine-tuning, and the ``fit`` settings to use.

    Args:
        cfg: the checkpoint's ``ViTConfig`` (e.g. ``preset("vit-b/16")``).
        checkpoint: a downloaded ``.safetensors`` or ``.pth`` file in timm's layout.
        num_classes: classes of the new task; the old head is replaced by a zero-initialised
            one (the paper's fine-tuning head).
        image_size: fine-tune at this resolution; the position table is resampled bicubically
            to the new grid, the CLS row untouched.
        mode: ``"head"`` (frozen backbone, a linear probe) or ``"full"`` (everything learns,
            the backbone ten times slower than the head).

    Returns:
        (model, keyword arguments for ``fit``): AdamW, warm-up then cosine, clipping at 1.
    """
    import dataclasses

    from vitbook.analysis import interpolate_pos_embed
    from vitbook.model import VisionTransformer, load_pretrained

    model = VisionTransformer(cfg=cfg)
    load_pretrained(model, checkpoint, strict=True)  # every key and shape must match
    new_cfg = dataclasses.replace(
        cfg, num_classes=num_classes, image_size=image_size or cfg.image_size
    )
    tuned = VisionTransformer(cfg=new_cfg)
    sd = {k: v for k, v in model.state_dict().items() if not k.startswith("head.")}
    if new_cfg.grid != cfg.grid:
        sd["pos_embed"] = interpolate_pos_embed(sd["pos_embed"], cfg.grid, new_cfg.grid)
    tuned.load_state_dict(sd, strict=False)  # everything but the new head
    nn.init.zeros_(tuned.head.weight)
    nn.init.zeros_(tuned.head.bias)
    if mode == "head":
        recipe = dict(lr=0.0, head_lr=1e-3, weight_decay=0.0)
    elif mode == "full":
        recipe = dict(lr=1e-5, head_lr=1e-4, weight_decay=0.05)
    else:
        raise ValueError(f"mode {mode!r} is unknown; use 'head' or 'full'")
    recipe.update(optimizer="adamw", schedule="cosine", warmup_epochs=1, clip_norm=1.0)
    return tuned, recipe
    # --8<-- [end:finetune-recipe]
