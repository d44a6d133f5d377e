"""Chapter 9's participant leak: one classifier, two ways of splitting the data."""

from __future__ import annotations

import time

import numpy as np

from vitbook.data.participants import make_participants


# --8<-- [start:leak-run]
def participant_leak(n_people: int = 60, frames: int = 30, folds: int = 5) -> dict:
    """The same classifier scored two ways: a frame-level random K-fold split and a
    participant-level GroupKFold. The label belongs to the person, as in a study where each
    participant has one diagnosis."""
    from sklearn.model_selection import GroupKFold, KFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    d = make_participants(n_people=n_people, frames=frames, seed=0)
    clf = KNeighborsClassifier(n_neighbors=5)
    start = time.perf_counter()
    frame = cross_val_score(clf, d.x, d.y, cv=KFold(folds, shuffle=True, random_state=0))
    person = cross_val_score(clf, d.x, d.y, cv=GroupKFold(folds), groups=d.person)
    return {
        "frame_split": frame, "person_split": person,
        "n_people": n_people, "frames": frames, "folds": folds,
        "chance": float(np.bincount(d.y).max() / len(d.y)),
        "seconds": time.perf_counter() - start,
    }  # fmt: skip
    # --8<-- [end:leak-run]
