"""The portable code paths (vitbook.engine.portable) give the same training bits whatever SIMD
the CPU offers, where PyTorch's own dispatch does not."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
import torch

from vitbook.engine import portable
from vitbook.experiments import pretrain

#: A short pre-training: enough steps for a last-bit difference to reach every weight.
SHORT = {"n_train": 256, "epochs": 2, "seed": 0}
#: What a machine without AVX, AVX2, FMA or AVX-512 would offer each library.
HIDDEN = {
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,-AVX512F",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
}


def weights_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, value in sorted(model.state_dict().items()):
        h.update(name.encode() + value.numpy().tobytes())
    return h.hexdigest()


def test_the_child_computes_on_the_portable_paths() -> None:
    seen = portable.call(portable.conditions, {})
    assert seen == {
        "capability": "DEFAULT",
        "mkldnn": False,
        "MKL_CBWR": "COMPATIBLE",
        "OPENBLAS_CORETYPE": "Nehalem",
        "numpy_disabled": portable.env()["NPY_DISABLE_CPU_FEATURES"],
        "threads": 1,
    }
    assert seen["numpy_disabled"], "numpy's SIMD dispatch is left on"


@pytest.mark.slow
def test_training_bits_do_not_depend_on_the_cpu_features_offered() -> None:
    full = portable.call(pretrain.pretrain, SHORT)
    hidden = portable.call(pretrain.pretrain, SHORT, extra_env=HIDDEN)
    assert weights_digest(full["model"]) == weights_digest(hidden["model"])
    assert full["history"].train_loss == hidden["history"].train_loss


CHILD = """
import hashlib, sys
from vitbook.engine import runtime
runtime.pin_environment()
import torch
from vitbook.experiments import pretrain
with runtime.book_conditions():
    model = pretrain.pretrain(n_train=256, epochs=2, seed=0)["model"]
h = hashlib.sha256()
for name, value in sorted(model.state_dict().items()):
    h.update(name.encode() + value.numpy().tobytes())
print(torch.backends.cpu.get_cpu_capability(), h.hexdigest())
"""


@pytest.mark.slow
@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() == "DEFAULT", reason="this CPU has no vector paths"
)
def test_without_the_portable_paths_the_bits_follow_the_cpu() -> None:
    """Why the pre-training needs portable.call: PyTorch's dispatch alone moves the bits."""

    def run(capability: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in portable.ENV}
        env["ATEN_CPU_CAPABILITY"] = capability
        out = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.split()[-1]

    assert run("default") != run(torch.backends.cpu.get_cpu_capability().lower())
