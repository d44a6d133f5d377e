"""Synthetic "participants": many frames per person, one label per person.

A stand-in for a face-video study where every participant contributes many frames and carries
one label (say, a diagnosis). Each frame's feature vector is the sum of

- a weak class signal shared by everyone with that label,
- a strong personal signature, fixed for the person (face shape, lighting, camera),
- a little frame-to-frame noise.

A model can score well by recognising the person instead of the class. It is rewarded for that
only when frames of the same person land on both sides of a train/test split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Participants:
    x: np.ndarray  # (people * frames, dim) features
    y: np.ndarray  # (people * frames,) the person's label, 0 or 1
    person: np.ndarray  # (people * frames,) participant id, the group for GroupKFold


# --8<-- [start:participants]
def make_participants(
    *,
    n_people: int = 60,
    frames: int = 30,
    dim: int = 32,
    signal: float = 0.25,
    signature: float = 1.0,
    noise: float = 0.3,
    seed: int = 0,
) -> Participants:
    """Frames of ``n_people`` people, half of them with label 1.

    Args:
        n_people: participants.
        frames: frames per participant.
        dim: features per frame.
        signal: shift of the class mean along each of the first four features.
        signature: spread of the per-person offsets (the identity a model can memorise).
        noise: spread of the frame-to-frame noise.
        seed: everything follows from it.
    """
    rng = np.random.default_rng(seed)
    label = rng.permutation(np.arange(n_people) % 2)  # one label per person
    offset = signature * rng.standard_normal((n_people, dim))  # personal signatures
    person = np.repeat(np.arange(n_people), frames)
    x = offset[person] + noise * rng.standard_normal((n_people * frames, dim))
    x[:, :4] += signal * (2 * label[person, None] - 1)  # the weak real signal
    return Participants(x=x, y=label[person], person=person)
    # --8<-- [end:participants]
