"""Chapter 9's transfer from every pre-training seed: ``transfer_from`` is Run 4's call from
another model, and seed 0's runs are Run 4's own (the same record, not a second copy of it)."""

from __future__ import annotations

import inspect

from vitbook.experiments import transfer_pre
from vitbook.figures import ch09_pretraining_transfer as tp


def test_transfer_from_is_run_4_from_another_model(monkeypatch) -> None:
    """``transfer_from`` passes the chosen pre-trained model and every other argument to Run 4's
    own function unchanged."""
    seen = {}

    def fake(pre, n_train, arm, seed):
        seen.update(pre=pre, n_train=n_train, arm=arm, seed=seed)
        return {"acc": 0.5}

    monkeypatch.setattr(transfer_pre, "transfer_run", fake)
    pres = ("model 0", "model 1", "model 2")
    assert transfer_pre.transfer_from(pres, pre_seed=2, arm="vit_head", seed=3) == {"acc": 0.5}
    assert seen == {"pre": "model 2", "n_train": transfer_pre.PRE_TRANSFER_SIZE,
                    "arm": "vit_head", "seed": 3}  # fmt: skip


def test_seed_zero_reads_run_4(monkeypatch) -> None:
    assert "pre_seed" in inspect.signature(tp.runs.transfer_from).parameters
    calls = []
    monkeypatch.setattr(tp.runs, "transfer_run", lambda **kw: calls.append(("run4", kw)) or {})
    monkeypatch.setattr(tp.runs, "transfer_from", lambda **kw: calls.append(("from", kw)) or {})
    tp.transfer_run(0, "vit_full", 1)
    tp.transfer_run(3, "vit_full", 1)
    assert calls == [
        ("run4", {"n_train": transfer_pre.PRE_TRANSFER_SIZE, "arm": "vit_full", "seed": 1}),
        ("from", {"pre_seed": 3, "arm": "vit_full", "seed": 1}),
    ]
