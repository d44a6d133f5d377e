"""Chapter 8 explorer: the cost calculator, a JavaScript port of ``vitbook.calc``.

The figure (what print and readers without JavaScript see) plots every preset's compute at
three image sizes; the explorer data carries the presets, the reference size and the book's
refusal messages as templates cut from the real error messages, so that the page words a
refusal exactly as ``vitbook.model.ViTConfig`` does.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from vitbook import plot
from vitbook.calc import macs, param_breakdown
from vitbook.engine import ExplorerData, figure
from vitbook.model import PRESETS, ViTConfig, preset

#: The image size every ratio is taken against, and the sizes of the static figure.
REFERENCE_SIZE = 224
SIZES = (224, 384, 512)
#: Fields the reader sets, in the order the page shows them.
FIELDS = ("image_size", "patch_size", "in_chans", "dim", "depth", "heads", "mlp_ratio",
          "num_classes")  # fmt: skip
#: The smallest value each field accepts (ViTConfig refuses anything below).
MINIMUM = {"image_size": 1, "patch_size": 1, "in_chans": 1, "dim": 1, "depth": 0, "heads": 1,
           "mlp_ratio": 0.25, "num_classes": 0}  # fmt: skip
#: Probe values whose numbers are all different, so that a message can be cut into a template.
PROBE_SIDE, PROBE_P = 7000, 7


def _message(**fields) -> str:
    try:
        ViTConfig(**fields)
    except ValueError as exc:
        return str(exc)
    raise AssertionError(f"{fields} was accepted")


def _template(message: str, names: dict[int, str]) -> str:
    """``message`` with each whole number replaced by ``{name}``; every number must be named,
    so that a change of wording in the model fails here rather than on the page."""

    def name(m: re.Match) -> str:
        value = int(m.group())
        if value not in names:
            raise ValueError(f"{message!r}: no name for {value}")
        return "{" + names[value] + "}"

    return re.sub(r"\d+", name, message)


def refusal_templates() -> dict[str, str]:
    """The model's messages for a size that P does not divide (one and several pixels over)
    and for a width that the heads do not divide, with ``{size}``, ``{P}``... placeholders."""
    lo, hi = PROBE_SIDE, PROBE_SIDE + PROBE_P
    out = {}
    for key, over in (("size_one", 1), ("size_many", 3)):
        side = PROBE_SIDE + over
        msg = _message(image_size=side, patch_size=PROBE_P)
        out[key] = _template(msg, {side: "size", PROBE_P: "P", over: "over", lo: "lo", hi: "hi"})
    side = PROBE_SIDE + 3
    msg = _message(dim=side, heads=PROBE_P, patch_size=16)
    out["heads"] = _template(msg, {side: "dim", PROBE_P: "heads", lo: "lo", hi: "hi"})
    return out


def config_fields(cfg: ViTConfig) -> dict:
    return {k: getattr(cfg, k) for k in FIELDS} | {
        "pos_embed": cfg.pos_embed,
        "qkv_bias": cfg.qkv_bias,
        "representation_size": cfg.representation_size,
    }


@figure(chapter=8, id="cost-calculator", size=(7.2, 4.0), phone_size=5.4)
def cost_calculator(rec):
    """Every preset's multiply-accumulates (attention matmuls counted) at three image sizes."""
    gmacs = {}
    for name, cfg in PRESETS.items():
        if cfg.in_chans != 3:
            continue
        row = []
        for size in SIZES:
            try:
                row.append(macs(dataclasses.replace(cfg, image_size=size))["total"] / 1e9)
            except ValueError:
                row.append(float("nan"))  # the patch size does not divide this size
        gmacs[name] = row
    return {"gmacs": gmacs}


def _label(name: str) -> str:
    """``"vit-ti/16"`` -> ``"ViT-Ti/16"``; other presets keep their names."""
    if name.startswith("vit-"):
        rest = name.removeprefix("vit-")
        return "ViT-" + rest[0].upper() + rest[1:]
    return name


@cost_calculator.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    names = list(d["gmacs"])
    width = 0.8 / len(SIZES)
    refused = {}
    for j, size in enumerate(SIZES):
        x = np.arange(len(names)) + (j - (len(SIZES) - 1) / 2) * width
        vals = [d["gmacs"][n][j] for n in names]
        ax.bar(x, vals, width * 0.95, color=c[plot.CYCLE[j]], label=f"{size}×{size} px")
        for i, val in enumerate(vals):
            if np.isnan(val):
                refused.setdefault(i, []).append(str(size))
    notes = []
    for i, sizes in refused.items():
        P = PRESETS[names[i]].patch_size
        if plot.is_phone(v):  # no room beside the bars: said below the axis instead
            notes.append(f"{_label(names[i])}: no bar at {' and '.join(sizes)} px\n"
                         f"(not multiples of P = {P})")  # fmt: skip
            continue
        ax.text(i + width / 2, 2e-3, f"{', '.join(sizes)}: not\nmultiples of P = {P}",
                rotation=90, fontsize=7, ha="center", va="bottom", color=c["muted"])  # fmt: skip
    if notes:
        ax.set_xlabel("\n".join(notes), fontsize=8, color=c["muted"])
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), labels=[_label(n) for n in names], fontsize=8,
                  rotation=plot.pick(v, 0, 90))  # fmt: skip
    ax.set_ylabel("GMACs per image (log scale)")
    ax.set_title(
        plot.pick(
            v,
            "Compute of each preset at three image sizes (vitbook.calc.macs)",
            "Compute of each preset\nat three image sizes",
        ),
        fontsize=10,
    )
    ax.legend(loc="upper left")
    ax.grid(axis="y", which="major")
    return fig


@cost_calculator.export
def _(d):
    presets = {}
    for name, cfg in PRESETS.items():
        fields = config_fields(cfg)
        fields["params_total"] = str(param_breakdown(cfg)["total"])  # a check for the page
        presets[name] = fields
    return ExplorerData(
        meta={
            "presets": presets,
            "order": list(PRESETS),
            "initial": "vit-b/16",
            "fields": list(FIELDS),
            "minimum": MINIMUM,
            "reference_size": REFERENCE_SIZE,
            "sizes": list(SIZES),
            "refusals": refusal_templates(),
            "palette": plot.THEMES,
        }
    )


__all__ = ["cost_calculator", "refusal_templates", "preset"]
