"""The face the book follows from Chapter 0 on.

The photograph is scikit-image's ``astronaut`` sample: NASA astronaut Eileen Collins,
official portrait, NASA (public domain). It ships inside scikit-image, so nothing is
downloaded. We crop a square around the head and collar and resize it to 224x224.
"""

from __future__ import annotations

from functools import cache

import numpy as np

CREDIT = "Photograph: NASA, astronaut Eileen Collins (public domain), from scikit-image's data"
#: Rows and columns of the crop in the 512x512 original: head, shoulders and collar.
CROP = (slice(0, 280), slice(86, 366))


@cache
def face(size: int = 224) -> np.ndarray:
    """The face as a float32 array of shape (size, size, 3) with values in [0, 1].

    Args:
        size: the side of the square output, in pixels (the book uses 224).
    """
    from PIL import Image
    from skimage import data

    crop = data.astronaut()[CROP]  # (280, 280, 3) uint8
    img = Image.fromarray(crop).resize((size, size), Image.Resampling.BICUBIC)
    out = np.asarray(img, dtype=np.float32) / 255.0
    out.setflags(write=False)
    return out


def face_tensor(size: int = 224):
    """The face as a torch tensor of shape (1, 3, size, size), ready for a ViT."""
    import torch

    return torch.from_numpy(face(size).copy()).permute(2, 0, 1).unsqueeze(0)
