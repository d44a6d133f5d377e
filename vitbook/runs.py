"""The book's training runs, cached on disk by the engine: a thin layer over
``vitbook.experiments``.

The plain functions live in ``vitbook.experiments`` (importable without the engine, callable
from a notebook). Here each is wrapped with ``vitbook.engine.cached``, one cache entry per
(configuration, seed): adding a seed trains only that seed. A wrapper made with
``cached(plain_function)`` is keyed on the plain function's own module and what it imports,
so a change to a chapter's drawing code, or to another experiment, retrains nothing. The runs
that start from the pre-trained model are defined here (they fetch it from the cache), so
their keys also cover this module.

A run's key binds its arguments to its parameters with the defaults filled in, so
``transfer_run(100, "cnn", 0)`` and ``transfer_run(n_train=100, arm="cnn", seed=0)`` are one
entry.
Chapters 9 and 10 use the shapes runs; Chapter 4 draws the learned position embeddings of
``pretrained_shapes_vit``; Chapter 1 uses ``longrange_run``.
"""

from __future__ import annotations

from vitbook.engine import cached
from vitbook.experiments import digits, leak, longrange, shapes
from vitbook.experiments.shapes import (  # noqa: F401  (re-exported for the chapters)
    FINETUNE_TEST_SEED,
    PRETRAIN_TEST_SEED,
    PRETRAIN_TRAIN_SEED,
    SHAPES_CFG,
    hflip,
    new_head,
)

SEEDS3 = (0, 1, 2)  # every comparison drawn from training is repeated over these seeds

longrange_run = cached(longrange.longrange_run)
# Chapter 9's verdict on the two initialisations rests on seeds whose ranges nearly touch
digits_run = cached(digits.digits_run, portable=True)
participant_leak = cached(leak.participant_leak)
# everything in Chapters 4, 9 and 10 stands on this run: it computes alike on every machine
pretrained_shapes_vit = cached(shapes.pretrain, portable=True)


def _pre():
    return pretrained_shapes_vit()["model"]


@cached
def transfer_run(n_train: int, arm: str, seed: int) -> dict:
    """``shapes.transfer_run`` from the cached pre-trained model."""
    return shapes.transfer_run(_pre(), n_train, arm, seed)


@cached
def lr_run(model: str, lr: float, seed: int, recipe: str = "plain") -> dict:
    """``shapes.lr_run`` from the cached pre-trained model."""
    return shapes.lr_run(_pre(), model, lr, seed, recipe)


@cached
def hires_run(table: str, seed: int) -> dict:
    """``shapes.hires_run`` from the cached pre-trained model."""
    return shapes.hires_run(_pre(), table, seed)
