"""The book's ViT against the reference implementation, timm, through a fixture that timm made
once (``tests/fixtures/make_timm_fixture.py``; the book does not depend on timm): the same
weights give the same logits (in float32, and in float64 to 1e-12), the position table
resamples as timm's does, and timm's mean-pooling layout is the one checkpoint kind the book
does not load."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from vitbook.analysis import interpolate_pos_embed
from vitbook.model import VisionTransformer, ViTConfig, load_pretrained

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STATE = FIXTURES / "timm_vit_ti_d2.safetensors"
OUTPUTS = FIXTURES / "timm_vit_ti_d2_outputs.safetensors"
# The same shape as the fixture's timm model (make_timm_fixture.CONFIG).
CFG = ViTConfig(image_size=32, patch_size=8, dim=192, depth=2, heads=3, num_classes=10)


@pytest.fixture(scope="module")
def outputs() -> dict[str, torch.Tensor]:
    return {k: v if k.endswith("_f64") else v.float() for k, v in load_file(str(OUTPUTS)).items()}


def _timm_weights(**overrides) -> VisionTransformer:
    model = _model(**overrides)
    load_pretrained(model, STATE, strict=True)
    return model


def _model(**overrides) -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(cfg=dataclasses.replace(CFG, **overrides)).eval()


def test_fixture_is_small() -> None:
    assert STATE.stat().st_size + OUTPUTS.stat().st_size < 1_000_000


@pytest.mark.parametrize("fused", [True, False])
def test_timm_weights_load_strictly_and_give_timm_logits(outputs, fused: bool) -> None:
    model = _model(fused_attn=fused)
    report = load_pretrained(model, STATE, strict=True)  # raises on any key or shape mismatch
    assert report.ok
    # every tensor landed: the model now holds exactly the file's values
    sd = load_file(str(STATE))
    own = model.state_dict()
    assert set(sd) == set(own)
    assert all(torch.equal(own[k], v.float()) for k, v in sd.items())
    with torch.no_grad():
        logits = model(outputs["images"])
    assert logits.shape == outputs["logits"].shape == (2, 10)
    assert (logits - outputs["logits"]).abs().max().item() < 1e-5
    # the match is not an accident of tiny outputs: logits differ between the two images
    assert (outputs["logits"][0] - outputs["logits"][1]).abs().max().item() > 0.1


@pytest.mark.parametrize("fused", [True, False])
def test_float64_logits_equal_timms_to_rounding(outputs, fused: bool) -> None:
    """In float64 (timm's float64 logits of the same weights are in the fixture) the two
    implementations agree to 1e-12: float32 rounding, about 1e-6 here, hides nothing. The
    float32 check above cannot see a final LayerNorm with eps 1e-5 instead of 1e-6 (it moves
    the logits by about 5e-6); this one fails on it, as the next test shows."""
    model = _timm_weights(fused_attn=fused).double()
    with torch.no_grad():
        logits = model(outputs["images"].double())
    assert logits.dtype == outputs["logits_f64"].dtype == torch.float64
    assert (logits - outputs["logits_f64"]).abs().max().item() < 1e-12


@pytest.mark.parametrize(
    ("module", "eps"), [("norm", 1e-5), ("norm", 1.001e-6), ("blocks.0.norm1", 1e-5)]
)
def test_float64_comparison_sees_a_wrong_layernorm_eps(outputs, module: str, eps: float) -> None:
    """The float64 comparison can fail: a LayerNorm eps of 1e-5 (PyTorch's default) instead
    of ViT's 1e-6, even in the final norm alone, or off by a tenth of a percent, moves the
    logits far beyond its 1e-12."""
    model = _timm_weights().double()
    model.get_submodule(module).eps = eps
    with torch.no_grad():
        logits = model(outputs["images"].double())
    assert (logits - outputs["logits_f64"]).abs().max().item() > 1e-11


def test_a_fresh_model_does_not_give_timm_logits(outputs) -> None:
    """The comparison above can fail: without the weights, the logits are far off."""
    with torch.no_grad():
        logits = _model()(outputs["images"])
    assert (logits - outputs["logits"]).abs().max().item() > 1e-2


@pytest.mark.parametrize(("name", "grid"), [("pos_6x6", (6, 6)), ("pos_3x5", (3, 5))])
def test_interpolate_pos_embed_matches_timm_resample(outputs, name: str, grid) -> None:
    table = load_file(str(STATE))["pos_embed"].float()  # (1, 1 + 16, 192), a 4x4 grid
    ours = interpolate_pos_embed(table, 4, grid)  # bicubic with antialias, as timm
    theirs = outputs[name]
    assert ours.shape == theirs.shape == (1, 1 + grid[0] * grid[1], 192)
    assert (ours - theirs).abs().max().item() < 1e-5
    # the plain bilinear resampling of the original JAX code is a different table
    assert (interpolate_pos_embed(table, 4, grid, mode="linear") - theirs).abs().max() > 1e-3


def test_timm_mean_pooling_checkpoints_do_not_load() -> None:
    """timm's global_pool="avg" puts the final LayerNorm after the mean (``fc_norm``) and has no
    ``norm``; the book's pool="mean" normalises every token before the mean, as its docstring
    says, so such a file is refused with both keys named."""
    with safe_open(str(OUTPUTS), "pt") as f:
        avg_keys = set(f.metadata()["avg_pool_keys"].split())
    own = set(_model(pool="mean").state_dict())
    assert avg_keys - own == {"fc_norm.weight", "fc_norm.bias"}
    assert own - avg_keys == {"norm.weight", "norm.bias"}


def test_loading_a_timm_mean_pooling_file_names_the_keys(tmp_path) -> None:
    sd = load_file(str(STATE))
    sd["fc_norm.weight"], sd["fc_norm.bias"] = sd.pop("norm.weight"), sd.pop("norm.bias")
    path = tmp_path / "avg.safetensors"
    save_file(sd, str(path))
    with pytest.raises(ValueError, match=r"fc_norm\.bias") as err:
        load_pretrained(_model(pool="mean"), path, strict=True)
    assert "norm.weight" in str(err.value)
