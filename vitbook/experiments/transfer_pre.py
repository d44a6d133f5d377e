"""Chapter 9, Run 4 from every pre-training: the head-only and the full fine-tuning of Run 4 on
the smallest set, started from each of the pre-training's seeds instead of seed 0's model alone,
so that the chapter can say how much of what transfers depends on how well the pre-training went.

A module of its own, so that adding it leaves the keys, and the frozen runs, of Run 4 alone.
"""

from __future__ import annotations

from vitbook.experiments.transfer import transfer_run
from vitbook.model import VisionTransformer

PRE_TRANSFER_SIZE = 100  # training images: the smallest set, where Run 4's transfer helps most
PRE_TRANSFER_ARMS = ("vit_head", "vit_full")


# --8<-- [start:transfer-from]
def transfer_from(
    pres: tuple[VisionTransformer, ...],
    pre_seed: int,
    arm: str,
    seed: int,
    n_train: int = PRE_TRANSFER_SIZE,
) -> dict:
    """Run 4's ``arm`` on ``n_train`` images, fine-tuned from pre-training seed ``pre_seed``
    (``pres[pre_seed]``) with fine-tuning seed ``seed``: the same call as
    :func:`vitbook.experiments.transfer.transfer_run`, from another starting model."""
    return transfer_run(pres[pre_seed], n_train, arm, seed)
    # --8<-- [end:transfer-from]
