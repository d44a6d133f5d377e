"""Chapter 9, numbers the prose and the quiz quote, computed or read from the recipe they
belong to (the training runs themselves live in ch09_training.py)."""

from __future__ import annotations

import math

from vitbook.engine import facts

#: The lab's recipe for TinyViT8 on digits trains 150 full-batch epochs; ch09_training.py
#: reads every run's test accuracy at this epoch (``digits_acc_150``, ``lab_acc_150``).
LAB_EPOCHS = 150


@facts(chapter=9, id="in-prose")
def in_prose(rec):
    """The lab's epoch count, and the loss of a uniform ten-class softmax (quiz 1)."""
    rec.fact("lab_epochs", LAB_EPOCHS)
    rec.fact("ln_ten", math.log(10), "{:.1f}")
    return {"lab_epochs": LAB_EPOCHS}
