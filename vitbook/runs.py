"""The book's training runs, frozen in ``frozen/`` by the engine: a thin layer over
``vitbook.experiments``.

The plain functions live in ``vitbook.experiments`` (importable without the engine, callable
from a notebook). Here each is wrapped with ``vitbook.engine.cached``, one frozen record per
(configuration, seed): adding a seed trains only that seed. A run's key covers its plain
function's own module and what that imports, so editing one experiment retrains no other.
The runs that start from the pre-trained model get it through ``given=``: the pre-training is
recorded as consumed when they train, and a new pre-training retrains them.

This module only declares runs (``KEYED_BY_RUNS``) and which seeds of the pre-training the book
trains: a chapter that imports it is keyed by the
runs it calls, as recorded, not by the code of every experiment declared here. Import
constants and helpers from ``vitbook.experiments`` directly.

Chapters 9 and 10 use the shapes runs; Chapter 4 draws the learned position embeddings of
``pretrained_shapes_vit``; Chapter 1 uses ``longrange_run`` and
``longrange_readout_run``.
"""

from __future__ import annotations

from vitbook.engine import cached
from vitbook.experiments import (
    digits,
    hires,
    leak,
    longrange,
    longrange_readout,
    lrsense,
    lrsweep,
    pretrain,
    transfer,
    transfer_pre,
)

KEYED_BY_RUNS = True

longrange_run = cached(longrange.longrange_run)
longrange_readout_run = cached(longrange_readout.readout_run)  # Chapter 1's read-out control
digits_run = cached(digits.digits_run)
participant_leak = cached(leak.participant_leak)
# everything in Chapters 4, 9 and 10 stands on this run: it computes alike on every machine
pretrained_shapes_vit = cached(pretrain.pretrain, portable=True)
#: The pre-training's seeds: seed 0 is the model every later run starts from and every figure
#: shows; Chapter 10 checks its findings on all of them (0 to N - 1, never picked).
PRE_SEEDS = (0, 1, 2, 3, 4)


def _pre():
    """The pre-trained model the fine-tuning runs start from (seed 0's pre-training)."""
    return pretrained_shapes_vit()["model"]


transfer_run = cached(transfer.transfer_run, given={"pre": _pre})
lr_run = cached(lrsweep.lr_run, given={"pre": _pre})
hires_run = cached(hires.hires_run, given={"pre": _pre})


def _pres():
    """Every pre-training seed's model, in the order of :data:`PRE_SEEDS`."""
    return tuple(pretrained_shapes_vit(seed=s)["model"] for s in PRE_SEEDS)


# Run 4's smallest set fine-tuned from each pre-training seed (Chapter 9)
transfer_from = cached(transfer_pre.transfer_from, given={"pres": _pres})

# the learning-rate sensitivity of a ViT from scratch and a CNN on the digits (Chapter 9)
sense_run = cached(lrsense.sense_run)
