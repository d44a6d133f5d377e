"""The training loop and the CNN baseline (vitbook/train.py): determinism, schedule, clipping,
frozen backbones, divergence, early stopping, and the checkpoint loader for fine-tuning."""

from __future__ import annotations

import math

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import SmallCNN, accuracy, cnn_width_for, fit, lr_at, prepare_finetune

CFG = ViTConfig(image_size=8, patch_size=4, in_chans=1, dim=16, depth=1, heads=2, num_classes=3)


def _data(n: int = 48, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 8, 8, generator=g)
    y = torch.arange(n) % 3
    x[y == 1, :, :4] += 1.5  # a learnable signal: class 1 is bright on top
    x[y == 2, :, 4:] += 1.5  # class 2 is bright at the bottom
    return x, y


def _model(seed: int = 0) -> VisionTransformer:
    torch.manual_seed(seed)
    return VisionTransformer(cfg=CFG)


@pytest.mark.slow
def test_same_seed_same_run():
    train, test = _data(), _data(24, seed=1)
    a = fit(_model(), train, test, epochs=3, batch_size=16, lr=1e-3, seed=7, progress=False)
    b = fit(_model(), train, test, epochs=3, batch_size=16, lr=1e-3, seed=7, progress=False)
    assert a.train_loss == b.train_loss  # bit for bit
    assert a.test_acc == b.test_acc
    c = fit(_model(), train, test, epochs=3, batch_size=16, lr=1e-3, seed=8, progress=False)
    assert c.train_loss != a.train_loss  # another shuffling order


def test_fit_trains_when_called_under_no_grad():
    # A cached run computed on a cache miss inside an analysis's no_grad block must still train.
    train, test = _data(), _data(24, seed=1)
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        h = fit(model, train, test, epochs=1, batch_size=16, lr=1e-3, seed=0, progress=False)
        assert not torch.is_grad_enabled()  # the caller's mode is left as it was
    assert h.epochs == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.slow
def test_loss_falls_and_history_is_complete():
    train, test = _data(), _data(24, seed=1)
    h = fit(_model(), train, test, epochs=20, batch_size=16, lr=3e-3, seed=0, progress=False)
    assert h.epochs == 20 and len(h.test_acc) == 20 and len(h.lr) == 20
    assert h.train_loss[-1] < h.train_loss[0] - 0.5
    assert h.train_loss[0] == pytest.approx(math.log(3), abs=0.3)
    assert h.best_test_acc == max(h.test_acc)


def test_schedule_warmup_and_cosine():
    assert lr_at(0, total=100, warmup=10) == pytest.approx(0.1)
    assert lr_at(9, total=100, warmup=10) == pytest.approx(1.0)
    assert lr_at(10, total=100, warmup=10) == pytest.approx(1.0)
    assert lr_at(55, total=100, warmup=10) == pytest.approx(0.5)  # half-way down the cosine
    assert lr_at(100, total=100, warmup=10) == pytest.approx(0.0, abs=1e-12)
    assert lr_at(55, total=100, warmup=10, schedule="linear") == pytest.approx(0.5)
    assert lr_at(70, total=100, warmup=0, schedule="constant") == 1.0
    with pytest.raises(ValueError, match="unknown schedule"):
        lr_at(20, total=100, warmup=0, schedule="step")


def test_head_only_freezes_backbone():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fit(model, _data(), _data(24, 1), epochs=2, batch_size=16, lr=0.0, head_lr=1e-2,
        progress=False)  # fmt: skip
    after = model.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"head.weight", "head.bias"}


def test_head_lr_differs_from_backbone_lr():
    h = fit(_model(), _data(), _data(24, 1), epochs=1, batch_size=48, lr=1e-4, head_lr=1e-2,
            progress=False)  # fmt: skip
    assert h.lr[-1] == pytest.approx(1e-4)  # History.lr follows the backbone group


def _grad_norms_seen_by_optimizer(**fit_kwargs) -> list[float]:
    """Run ``fit`` and record, at every optimizer step, the global norm of the gradients the
    step is about to apply (a global step pre-hook: after any clipping, before the update)."""
    norms: list[float] = []

    def hook(opt, args, kwargs):
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        norms.append(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item())

    x, y = _data()
    handle = register_optimizer_step_pre_hook(hook)
    try:
        fit(_model(), (x * 100, y), _data(24, 1), epochs=2, batch_size=16, lr=1e-3,
            progress=False, **fit_kwargs)  # fmt: skip
    finally:
        handle.remove()
    return norms


def test_clipping_bounds_the_gradient():
    """``fit(clip_norm=c)`` hands the optimizer gradients of global norm at most c; without
    it the same run's gradients are several times larger at every step."""
    free = _grad_norms_seen_by_optimizer()
    clipped = _grad_norms_seen_by_optimizer(clip_norm=0.1)
    assert len(free) == len(clipped) == 2 * 3  # 48 examples, batches of 16, 2 epochs
    assert min(free) > 0.5  # the bound has work to do at every step
    assert max(clipped) <= 0.1 * (1 + 1e-5)
    assert min(clipped) > 0.1 * (1 - 1e-5)  # clipped to the bound, not below it


def test_divergence_is_detected():
    """A loss that turns NaN stops the run in that epoch, before any step on it."""
    x, y = _data()
    model = _model()
    h = fit(model, (x * 1e30, y), _data(24, 1), epochs=3, lr=1e6, optimizer="adam",
            progress=False)  # fmt: skip
    assert h.diverged
    # the first loss is already NaN (LayerNorm's variance overflows): one epoch, not three
    assert h.epochs == len(h.test_acc) == 1
    assert math.isnan(h.train_loss[-1])
    # and no step was taken on it: the weights are still the initial ones, not NaN
    start = _model().state_dict()
    assert all(torch.equal(v, start[k]) for k, v in model.state_dict().items())


def test_divergence_later_in_a_run_stops_it():
    """With sane inputs and an absurd rate the loss explodes after a few steps; the run ends
    at the epoch where it turned NaN instead of training on for all five."""
    model = _model()
    h = fit(model, _data(), _data(24, 1), epochs=5, lr=1e6, optimizer="adam", progress=False)
    assert h.diverged
    assert 1 < h.epochs < 5
    assert all(math.isfinite(v) for v in h.train_loss[:-1]) and math.isnan(h.train_loss[-1])
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.slow
def test_early_stopping_restores_best():
    train, test = _data(), _data(24, 1)
    model = _model()
    h = fit(model, train, test, epochs=60, batch_size=16, lr=3e-3, patience=3, progress=False)
    assert h.stopped_early
    assert h.epochs - 1 - h.best_epoch == 3
    assert accuracy(model, test) == pytest.approx(h.best_test_acc)


def test_small_cnn_width_matches_params():
    target = VisionTransformer(cfg=ViTConfig(image_size=32, patch_size=4, dim=64, depth=4,
                                             heads=4, num_classes=4)).num_params()  # fmt: skip
    w = cnn_width_for(target, in_chans=3, num_classes=4)
    p = SmallCNN(in_chans=3, num_classes=4, width=w).num_params()
    assert abs(p - target) / target < 0.05
    for other in (w - 1, w + 1):  # the chosen width is the closest
        q = SmallCNN(in_chans=3, num_classes=4, width=other).num_params()
        assert abs(q - target) >= abs(p - target)
    assert SmallCNN(in_chans=3, num_classes=4, width=w)(torch.zeros(2, 3, 32, 32)).shape == (2, 4)


def test_prepare_finetune_loads_a_written_checkpoint(tmp_path):
    src_cfg = ViTConfig(image_size=16, patch_size=4, in_chans=3, dim=16, depth=2, heads=2,
                        num_classes=10)  # fmt: skip
    torch.manual_seed(3)
    src = VisionTransformer(cfg=src_cfg)
    path = tmp_path / "tiny.pth"
    torch.save(src.state_dict(), path)
    model, recipe = prepare_finetune(src_cfg, str(path), num_classes=2, image_size=24, mode="full")
    assert model.cfg.num_classes == 2 and model.cfg.grid == (6, 6)
    assert model.pos_embed.shape == (1, 37, 16)
    assert torch.equal(model.pos_embed[0, 0], src.pos_embed[0, 0])  # CLS row untouched
    assert torch.equal(model.blocks[1].mlp.fc1.weight, src.blocks[1].mlp.fc1.weight)
    assert torch.count_nonzero(model.head.weight) == 0  # zero-initialised head
    assert recipe["lr"] < recipe["head_lr"] and recipe["clip_norm"] == 1.0
    head_model, head_recipe = prepare_finetune(src_cfg, str(path), num_classes=2, mode="head")
    assert head_recipe["lr"] == 0.0
    assert torch.equal(head_model.pos_embed, src.pos_embed)  # same grid: table unchanged
    x = torch.randn(6, 3, 16, 16)
    h = fit(head_model, (x, torch.tensor([0, 1] * 3)), (x, torch.tensor([0, 1] * 3)), epochs=1,
            progress=False, **head_recipe)  # fmt: skip
    assert h.epochs == 1
    with pytest.raises(ValueError, match="mode"):
        prepare_finetune(src_cfg, str(path), num_classes=2, mode="half")


def test_eval_every_measures_only_the_asked_epochs():
    torch.manual_seed(0)
    x, y = torch.randn(40, 1, 8, 8), torch.randint(0, 2, (40,))
    model = SmallCNN(in_chans=1, num_classes=2, width=2)
    h = fit(model, (x, y), (x, y), epochs=5, batch_size=20, lr=1e-2, eval_every=2)
    measured = [not math.isnan(a) for a in h.test_acc]
    assert measured == [False, True, False, True, True]  # epochs 2, 4 and the last
    assert h.final_test_acc == h.test_acc[-1] and not math.isnan(h.final_test_acc)


@pytest.mark.slow
def test_early_stopping_ends_on_the_weights_of_its_best_epoch():
    """Not only an accuracy equal to the best (ties count as no better, so the last epochs may
    score the same): the very weights of the best epoch, as the same run stopped there has."""
    train, test = _data(), _data(24, 1)
    model = _model()
    h = fit(model, train, test, epochs=60, batch_size=16, lr=3e-3, patience=3, progress=False)
    assert h.stopped_early and h.best_epoch < h.epochs - 1
    again = _model()
    fit(again, train, test, epochs=h.best_epoch + 1, batch_size=16, lr=3e-3, progress=False)
    for (name, v), w in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(v, w), name
