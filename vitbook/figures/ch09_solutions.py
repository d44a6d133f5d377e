"""Chapter 9, numbers the prose and the quiz quote, computed or read from the recipe they
belong to (the training runs themselves live in ch09_training.py)."""

from __future__ import annotations

import math

from vitbook.engine import facts
from vitbook.experiments import hires, pretrain

#: The lesson this book grew from quotes TinyViT8's digits accuracy after 150 full-batch epochs
#: (REFERENCE-FACTS.md); ch09_training.py reads every run's test accuracy at that epoch
#: (``digits_acc_150``, ``lab_acc_150``) and draws it as the dotted line of ``digits-curves``.
LESSON_EPOCHS = 150


@facts(chapter=9, id="in-prose")
def in_prose(rec):
    """The lesson's epoch count, the loss of a uniform ten-class softmax (quiz 1), and how much
    larger run 5's images are than the pre-training images."""
    rec.fact("lesson_epochs", LESSON_EPOCHS)
    rec.fact("ln_ten", math.log(10), "{:.1f}")
    rec.fact("hires_scale", hires.HIRES / pretrain.SHAPES_CFG.image_size, "{:g}")
    return {"lesson_epochs": LESSON_EPOCHS}
