"""The reference ViT: exact sizes, timm layout, equivalences, errors, checkpoints."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from vitbook.model import (
    PRESETS,
    Attention,
    VisionTransformer,
    ViTConfig,
    load_pretrained,
    preset,
    scaled_dot_product,
)

SMALL = ViTConfig(image_size=32, patch_size=8, dim=24, depth=2, heads=3, num_classes=5)


def build(cfg: ViTConfig, *, seed: int = 0, dtype: torch.dtype = torch.float32):
    torch.manual_seed(seed)
    return VisionTransformer(cfg=cfg).to(dtype).eval()


def on_meta(cfg: ViTConfig) -> VisionTransformer:
    with torch.device("meta"):
        return VisionTransformer(cfg=cfg)


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "name, expected",
    [
        ("vit-ti/16", 5_717_416),
        ("vit-s/16", 22_050_664),
        ("vit-b/16", 86_567_656),
        ("vit-l/16", 304_326_632),
        ("vit-l/32", 306_535_400),
        ("vit-h/14", 632_045_800),
        ("tinyvit8", 26_538),
    ],
)
def test_exact_param_counts(name: str, expected: int) -> None:
    assert on_meta(preset(name)).num_params() == expected


def test_vit_h14_without_head() -> None:
    assert on_meta(preset("vit-h/14", num_classes=0)).num_params() == 630_764_800


def test_b16_components_from_the_model() -> None:
    m = on_meta(preset("vit-b/16"))

    def count(mod: nn.Module) -> int:
        return sum(p.numel() for p in mod.parameters())

    blk = m.blocks[0]
    assert count(m.patch_embed) == 590_592
    assert m.pos_embed.numel() == 151_296
    assert m.cls_token.numel() == 768
    assert count(blk.attn.qkv) == 1_771_776
    assert count(blk.attn.proj) == 590_592
    assert count(blk.attn) == 2_362_368
    assert count(blk.mlp) == 4_722_432
    assert count(blk.norm1) + count(blk.norm2) == 3_072
    assert count(blk) == 7_087_872
    assert count(m.norm) == 1_536
    assert count(m.head) == 769_000


def test_config_properties_and_presets() -> None:
    cfg = preset("vit-b/16")
    assert (cfg.grid, cfg.num_patches, cfg.seq_len, cfg.head_dim, cfg.mlp_dim) == (
        (14, 14),
        196,
        197,
        64,
        3072,
    )
    assert preset("vit-b/16", image_size=384).seq_len == 577
    face = preset("face")
    assert (face.grid, face.dim, face.heads, face.depth, face.in_chans) == ((7, 7), 8, 2, 2, 3)
    t8 = preset("TinyViT8")
    assert (t8.grid, t8.in_chans, t8.dim, t8.num_classes, t8.mlp_ratio) == ((2, 2), 1, 32, 10, 4)
    assert set(PRESETS) >= {"vit-ti/16", "vit-s/16", "vit-b/32", "vit-l/32", "vit-h/14"}
    ns = ViTConfig(image_size=(32, 48), patch_size=8, dim=16, depth=1, heads=2)
    assert (ns.grid, ns.num_patches) == ((4, 6), 24)


# ---------------------------------------------------------------- timm layout


def timm_layout(depth: int, D: int, C: int, P: int, T: int, M: int, K: int) -> dict:
    keys = {
        "cls_token": (1, 1, D),
        "pos_embed": (1, T, D),
        "patch_embed.proj.weight": (D, C, P, P),
        "patch_embed.proj.bias": (D,),
    }
    for i in range(depth):
        b = f"blocks.{i}."
        keys |= {
            b + "norm1.weight": (D,),
            b + "norm1.bias": (D,),
            b + "attn.qkv.weight": (3 * D, D),
            b + "attn.qkv.bias": (3 * D,),
            b + "attn.proj.weight": (D, D),
            b + "attn.proj.bias": (D,),
            b + "norm2.weight": (D,),
            b + "norm2.bias": (D,),
            b + "mlp.fc1.weight": (M, D),
            b + "mlp.fc1.bias": (M,),
            b + "mlp.fc2.weight": (D, M),
            b + "mlp.fc2.bias": (D,),
        }
    keys |= {"norm.weight": (D,), "norm.bias": (D,), "head.weight": (K, D), "head.bias": (K,)}
    return keys


def test_state_dict_matches_timm_layout_b16() -> None:
    sd = on_meta(preset("vit-b/16")).state_dict()
    got = {k: tuple(v.shape) for k, v in sd.items()}
    assert got == timm_layout(12, 768, 3, 16, 197, 3072, 1000)
    order = list(got)
    assert order[:4] == [
        "cls_token",
        "pos_embed",
        "patch_embed.proj.weight",
        "patch_embed.proj.bias",
    ]
    assert order[-4:] == ["norm.weight", "norm.bias", "head.weight", "head.bias"]


def test_sincos_table_is_a_fixed_buffer_under_timm_key() -> None:
    m = build(dataclasses.replace(SMALL, pos_embed="sincos2d"))
    assert "pos_embed" in m.state_dict() and "pos_embed" not in dict(m.named_parameters())
    assert torch.all(m.pos_embed[0, 0] == 0)  # CLS row is zero
    learned = build(SMALL)
    assert learned.num_params() - m.num_params() == SMALL.seq_len * SMALL.dim
    none = build(dataclasses.replace(SMALL, pos_embed="none"))
    assert "pos_embed" not in none.state_dict() and none.pos_embed is None


def test_init_follows_timm() -> None:
    m = build(preset("vit-s/16"))
    assert 0.018 < m.pos_embed.std().item() < 0.022
    # timm calls trunc_normal_(std=0.02) with the default cut-offs a=-2, b=2, which are
    # absolute values, not standard deviations: at std 0.02 nothing is actually cut.
    assert 0.04 < m.pos_embed.abs().max().item() < 0.2
    assert m.cls_token.std().item() < 1e-5
    w = m.blocks[0].mlp.fc1.weight
    assert 0.018 < w.std().item() < 0.022
    assert torch.all(m.blocks[0].attn.qkv.bias == 0) and torch.all(m.head.bias == 0)
    assert torch.all(m.norm.weight == 1) and torch.all(m.norm.bias == 0)


# ---------------------------------------------------------------- equivalences


def test_patch_embed_conv_equals_flatten_then_linear() -> None:
    m = build(SMALL)
    x = torch.randn(2, 3, 32, 32)
    P, D = SMALL.patch_size, SMALL.dim
    patches = x.reshape(2, 3, 4, P, 4, P).permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, P, P)
    patches = patches.reshape(2, 16, 3 * P * P)  # (B, N, C*P*P)
    lin = nn.Linear(3 * P * P, D)
    with torch.no_grad():
        lin.weight.copy_(m.patch_embed.proj.weight.reshape(D, -1))
        lin.bias.copy_(m.patch_embed.proj.bias)
        diff = (m.patch_embed(x) - lin(patches)).abs().max().item()
    assert diff < 1e-5


def shuffle_patches(x: torch.Tensor, P: int, perm: torch.Tensor) -> torch.Tensor:
    B, C, H, W = x.shape
    gh, gw = H // P, W // P
    p = x.reshape(B, C, gh, P, gw, P).permute(0, 2, 4, 1, 3, 5).reshape(B, gh * gw, C, P, P)
    p = p[:, perm]  # (B, N, C, P, P) in a new order
    return p.reshape(B, gh, gw, C, P, P).permute(0, 3, 1, 4, 2, 5).reshape(B, C, H, W)


def test_without_positions_shuffling_patches_leaves_cls_unchanged() -> None:
    torch.manual_seed(1)
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    perm = torch.randperm(SMALL.num_patches)
    bag = build(dataclasses.replace(SMALL, pos_embed="none"), dtype=torch.float64)
    with torch.no_grad():
        a, b = bag(x), bag(shuffle_patches(x, 8, perm))
    assert (a - b).abs().max().item() < 1e-6
    # The same model with a learned table: switch it off, then on.
    m = build(SMALL, dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():  # weights as far from uniform attention as a trained model's
            p.normal_(std=0.5)
        off = m(x, use_pos_embed=False) - m(shuffle_patches(x, 8, perm), use_pos_embed=False)
        on = m(x) - m(shuffle_patches(x, 8, perm))
    assert off.abs().max().item() < 1e-6
    assert on.abs().max().item() > 1e-3


def test_block_equals_torch_transformer_encoder_layer() -> None:
    m = build(SMALL)
    blk = m.blocks[0]
    D, H, M = SMALL.dim, SMALL.heads, SMALL.mlp_dim
    ref = nn.TransformerEncoderLayer(
        D, H, M, dropout=0.0, activation="gelu", batch_first=True, norm_first=True,
        layer_norm_eps=1e-6,
    )  # fmt: skip
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(blk.attn.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(blk.attn.qkv.bias)
        ref.self_attn.out_proj.weight.copy_(blk.attn.proj.weight)
        ref.self_attn.out_proj.bias.copy_(blk.attn.proj.bias)
        for ours, theirs in [(blk.mlp.fc1, ref.linear1), (blk.mlp.fc2, ref.linear2),
                             (blk.norm1, ref.norm1), (blk.norm2, ref.norm2)]:  # fmt: skip
            theirs.weight.copy_(ours.weight)
            theirs.bias.copy_(ours.bias)
    x = torch.randn(3, SMALL.seq_len, D)
    ref.train()  # the plain path (dropout is 0)
    diff_train = (blk(x)[0] - ref(x)).abs().max().item()
    ref.eval()
    with torch.no_grad():  # the fused inference fast path
        diff_eval = (blk(x)[0] - ref(x)).abs().max().item()
    assert diff_train < 1e-5 and diff_eval < 1e-5


def test_fast_and_explicit_attention_agree() -> None:
    torch.manual_seed(0)
    attn = Attention(dim=48, heads=4)
    x = torch.randn(2, 17, 48)
    with torch.no_grad():
        fast, none = attn(x)
        slow, w = attn(x, return_weights=True)
    assert none is None and w.shape == (2, 4, 17, 17)
    assert (fast - slow).abs().max().item() < 1e-6
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 17))
    # And the whole model, fused against explicit.
    m = build(SMALL)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        fused = m(x)
        m.set_fused_attn(False)
        explicit = m(x)
    assert (fused - explicit).abs().max().item() < 1e-6


def test_set_fused_attn_keeps_the_config_true() -> None:
    """After set_fused_attn, cfg names the path the blocks take, so a copy built from cfg
    (as a checkpoint's config would be) takes the same one."""
    m = build(SMALL)
    assert m.cfg.fused_attn is True
    m.set_fused_attn(False)
    assert m.cfg.fused_attn is False and m.cfg == dataclasses.replace(SMALL, fused_attn=False)
    assert all(blk.attn.fused is False for blk in m.blocks)
    copy = VisionTransformer(cfg=m.cfg)
    assert all(blk.attn.fused is False for blk in copy.blocks)
    m.set_fused_attn(True)
    assert m.cfg.fused_attn is True and all(blk.attn.fused for blk in m.blocks)


def test_forward_and_intermediates_agree_for_every_pooling_and_table() -> None:
    """forward and forward_intermediates share one embedding and pooling path: same logits,
    bit for bit, for both poolings, every position table, and with positions switched off."""
    x = torch.randn(2, 3, 32, 32)
    for pool in ("cls", "mean"):
        for pos in ("learned", "sincos2d", "none"):
            m = build(dataclasses.replace(SMALL, pool=pool, pos_embed=pos, fused_attn=False))
            for use_pos in (True, False):
                with torch.no_grad():
                    a = m(x, use_pos_embed=use_pos)
                    b = m.forward_intermediates(x, attn=False, use_pos_embed=use_pos)
                assert torch.equal(a, b["logits"]), (pool, pos, use_pos)
                pooled = b["encoded"][:, 0] if pool == "cls" else b["encoded"][:, 1:].mean(1)
                assert torch.equal(b["pooled"], pooled)


def test_worked_attention_example() -> None:
    q = torch.tensor([[1.0, 0, 1, 0]])
    k = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    v = torch.tensor([[10.0, 0], [0, 10], [5, 5]])
    out, w = scaled_dot_product(q, k, v)
    assert torch.allclose(w, torch.tensor([[0.5065, 0.1863, 0.3072]]), atol=5e-5)
    assert torch.allclose(out, torch.tensor([[6.601, 3.399]]), atol=5e-4)
    _, w_raw = scaled_dot_product(q, k, v, scale=False)
    # e^2 / (e^2 + 1 + e) = 0.665241: the seed documents print 0.6653, one off in the last digit.
    assert torch.allclose(w_raw, torch.tensor([[0.6652, 0.0900, 0.2447]]), atol=5e-5)
    assert abs(w_raw[0, 0].item() - 0.6653) < 1e-4
    # Any leading shape works.
    out4, w4 = scaled_dot_product(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8),
                                  torch.randn(2, 3, 7, 6))  # fmt: skip
    assert out4.shape == (2, 3, 5, 6) and w4.shape == (2, 3, 5, 7)


def test_intermediates_shapes_and_consistency() -> None:
    m = build(SMALL)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = m(x, return_intermediates=True)
        logits = m(x)
    B, N, T, D, H = 2, 16, 17, 24, 3
    assert out["patches"].shape == (B, N, D)
    assert out["with_cls"].shape == out["with_pos"].shape == (B, T, D)
    assert [t.shape for t in out["blocks"]] == [(B, T, D)] * 2
    assert [t.shape for t in out["attn"]] == [(B, H, T, T)] * 2
    assert out["encoded"].shape == (B, T, D) and out["pooled"].shape == (B, D)
    torch.testing.assert_close(out["with_cls"][:, 1:], out["patches"])
    torch.testing.assert_close(out["with_pos"], out["with_cls"] + m.pos_embed)
    torch.testing.assert_close(out["pooled"], out["encoded"][:, 0])
    assert (out["logits"] - logits).abs().max().item() < 1e-6
    no_attn = m.forward_intermediates(x, attn=False)
    assert no_attn["attn"] == [] and len(no_attn["blocks"]) == 2


def test_mean_pool_and_non_square_images() -> None:
    cfg = ViTConfig(image_size=(16, 32), patch_size=8, dim=16, depth=1, heads=2, num_classes=3,
                    pool="mean")  # fmt: skip
    m = build(cfg)
    with torch.no_grad():
        out = m.forward_intermediates(torch.randn(2, 3, 16, 32))
    assert out["patches"].shape == (2, 8, 16) and out["logits"].shape == (2, 3)
    torch.testing.assert_close(out["pooled"], out["encoded"][:, 1:].mean(1))


def test_features_only_when_no_classes() -> None:
    m = build(dataclasses.replace(SMALL, num_classes=0))
    assert m(torch.randn(1, 3, 32, 32)).shape == (1, SMALL.dim)


# ---------------------------------------------------------------- errors name the fix


def test_error_image_not_divisible_by_patch() -> None:
    msg = (
        r"225x225 is not divisible by patch size 16 \(height 225 leaves 1 pixel over\); "
        r"resize to 224 or 240"
    )
    with pytest.raises(ValueError, match=msg):
        ViTConfig(image_size=225)
    with pytest.raises(ValueError, match="resize to 224x224 or 240x240"):
        ViTConfig(image_size=(225, 230))


def test_error_dim_not_divisible_by_heads() -> None:
    with pytest.raises(ValueError, match="dim 100 is not divisible by heads 3; use dim 99 or 102"):
        ViTConfig(dim=100, heads=3)


def test_error_wrong_channel_count_at_forward() -> None:
    m = build(SMALL)
    with pytest.raises(ValueError, match=r"1 channels but the model expects 3; convert grayscale"):
        m(torch.randn(1, 1, 32, 32))
    with pytest.raises(ValueError, match="build the model with in_chans=4"):
        m(torch.randn(1, 4, 32, 32))


def test_error_wrong_image_size_at_forward() -> None:
    m = build(SMALL)
    with pytest.raises(ValueError, match="resize it to 32x32.*interpolate_pos_embed"):
        m(torch.randn(1, 3, 64, 64))
    with pytest.raises(ValueError, match="not divisible by patch size 8; resize to 32x32"):
        m(torch.randn(1, 3, 30, 30))
    with pytest.raises(ValueError, match=r"add a batch dimension"):
        m(torch.randn(3, 32, 32))


def test_error_bad_options() -> None:
    with pytest.raises(ValueError, match="use 'cls' or 'mean'"):
        ViTConfig(pool="max")
    with pytest.raises(ValueError, match="use 'learned', 'sincos2d' or 'none'"):
        ViTConfig(pos_embed="rope")
    with pytest.raises(ValueError, match="use dim 20 or 24"):
        ViTConfig(dim=22, heads=2, pos_embed="sincos2d")
    with pytest.raises(ValueError, match="use one of face, tinyvit8"):
        preset("vit-g/14")


def test_error_pos_table_length_mismatch_when_loading(tmp_path) -> None:
    torch.save(build(SMALL).state_dict(), tmp_path / "small.pth")
    bigger = build(dataclasses.replace(SMALL, image_size=48))
    with pytest.raises(ValueError, match=r"pos_embed: file \(1, 17, 24\) vs model \(1, 37, 24\)"):
        load_pretrained(bigger, tmp_path / "small.pth")
    with pytest.raises(ValueError, match="interpolate_pos_embed"):
        load_pretrained(bigger, tmp_path / "small.pth")
    report = load_pretrained(bigger, tmp_path / "small.pth", strict=False)
    assert [k for k, _, _ in report.mismatched] == ["pos_embed"] and not report.missing


def test_error_checkpoint_keys_missing(tmp_path) -> None:
    sd = build(SMALL).state_dict()
    sd.pop("head.weight")
    sd["fc_norm.weight"] = torch.ones(24)
    torch.save(sd, tmp_path / "odd.pth")
    with pytest.raises(ValueError, match=r"(?s)missing in the file.*head\.weight.*fc_norm\.weight"):
        load_pretrained(build(SMALL), tmp_path / "odd.pth")


# ---------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_checkpoint_round_trip(tmp_path, suffix: str) -> None:
    a, b = build(SMALL, seed=1), build(SMALL, seed=2)
    path = tmp_path / f"vit{suffix}"
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(a.state_dict(), str(path))
    else:
        torch.save({"model": a.state_dict()}, path)  # wrapped, as many checkpoints are
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert not torch.equal(a(x), b(x))
        report = load_pretrained(b, path)
        assert report.ok
        assert torch.equal(a(x), b(x))


# ---------------------------------------------------------------- dropout, pre-logits, MHA


def test_dropout_defaults_leave_layout_and_counts_unchanged() -> None:
    from vitbook.calc import param_breakdown

    cfg = preset("vit-b/16")
    assert (cfg.pos_drop_rate, cfg.attn_drop_rate, cfg.proj_drop_rate, cfg.drop_rate) == (0,) * 4
    plain = on_meta(cfg)
    dropped = on_meta(
        dataclasses.replace(
            cfg, pos_drop_rate=0.1, attn_drop_rate=0.1, proj_drop_rate=0.1, drop_rate=0.1
        )
    )
    assert list(plain.state_dict()) == list(dropped.state_dict())  # timm's keys, nothing added
    assert dropped.num_params() == plain.num_params() == param_breakdown(cfg)["total"]
    names = dict(dropped.named_modules())
    for key in ("pos_drop", "blocks.0.attn.attn_drop", "blocks.0.attn.proj_drop",
                "blocks.0.mlp.drop1", "blocks.0.mlp.drop2", "head_drop"):  # fmt: skip
        assert isinstance(names[key], nn.Dropout) and names[key].p == 0.1, key


def test_dropout_acts_in_training_only() -> None:
    cfg = dataclasses.replace(SMALL, pos_drop_rate=0.3, attn_drop_rate=0.3, proj_drop_rate=0.3)
    m = build(cfg)
    ref = build(SMALL)  # same seed, same weights, no dropout
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(m(x), ref(x))  # eval: dropout is the identity
        m.train()
        torch.manual_seed(1)
        fused = m(x)
        m.set_fused_attn(False)
        torch.manual_seed(1)
        explicit = m(x)
    assert (fused - ref(x)).abs().max().item() > 1e-3  # training: outputs move
    assert (explicit - ref(x)).abs().max().item() > 1e-3
    with pytest.raises(ValueError, match="drop_rate"):
        dataclasses.replace(SMALL, attn_drop_rate=1.0)


def test_pre_logits_hidden_tanh_layer() -> None:
    from vitbook.calc import param_breakdown

    cfg = dataclasses.replace(SMALL, representation_size=16)
    m = build(cfg)
    sd = m.state_dict()
    assert tuple(sd["pre_logits.fc.weight"].shape) == (16, SMALL.dim)
    assert tuple(sd["head.weight"].shape) == (SMALL.num_classes, 16)
    assert m.num_params() == param_breakdown(cfg)["total"]
    assert param_breakdown(cfg)["pre_logits"] == SMALL.dim * 16 + 16
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = m(x, return_intermediates=True)
        hidden = torch.tanh(m.pre_logits.fc(out["pooled"]))
        assert torch.allclose(out["logits"], m.head(hidden), atol=1e-6)
        assert torch.allclose(m(x), out["logits"], atol=1e-6)


def test_explicit_path_is_scaled_dot_product() -> None:
    """Attention.forward's explicit path is the chapter 5 function, bit for bit."""
    torch.manual_seed(0)
    for dim, heads in [(48, 4), (64, 4), (40, 5)]:  # Dh = 12, 16, 8
        attn = Attention(dim=dim, heads=heads, fused=False).eval()
        x = torch.randn(2, 7, dim)
        with torch.no_grad():
            out, w = attn(x, return_weights=True)
            q, k, v = attn.qkv(x).reshape(2, 7, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            o, w2 = scaled_dot_product(q, k, v)
            by_hand = attn.proj(o.transpose(1, 2).reshape(2, 7, dim))
        assert torch.equal(w, w2) and torch.equal(out, by_hand)


def test_scaling_queries_first_is_exact_for_power_of_four_widths() -> None:
    torch.manual_seed(0)
    for dk, exact in [(4, True), (16, True), (64, True), (32, False)]:
        q, k = torch.randn(5, dk), torch.randn(6, dk)
        a = (q * dk**-0.5) @ k.T
        b = (q @ k.T) / dk**0.5
        assert torch.equal(a, b) == exact or (not exact and (a - b).abs().max() < 1e-5)


# --8<-- [start:mha]
def test_equals_torch_multihead_attention() -> None:
    """nn.MultiheadAttention with the same weights: batch_first=True, and with
    need_weights=True it returns the weights averaged over heads unless
    average_attn_weights=False."""
    torch.manual_seed(0)
    D, H, T = 48, 4, 9
    ours = Attention(dim=D, heads=H).eval()
    mha = nn.MultiheadAttention(D, H, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(ours.qkv.weight)  # rows: W_Q, W_K, W_V, as in timm's qkv
        mha.in_proj_bias.copy_(ours.qkv.bias)
        mha.out_proj.weight.copy_(ours.proj.weight)
        mha.out_proj.bias.copy_(ours.proj.bias)
        x = torch.randn(2, T, D)
        out, w = ours(x, return_weights=True)  # (B, T, D), (B, heads, T, T)
        out_t, w_avg = mha(x, x, x, need_weights=True)  # averaged over heads: (B, T, T)
        _, w_all = mha(x, x, x, need_weights=True, average_attn_weights=False)
        out_fast, none = mha(x, x, x, need_weights=False)
    assert (out - out_t).abs().max() < 1e-6 and (out - out_fast).abs().max() < 1e-6
    assert none is None
    assert w_avg.shape == (2, T, T) and (w.mean(dim=1) - w_avg).abs().max() < 1e-6
    assert w_all.shape == (2, H, T, T) and (w - w_all).abs().max() < 1e-6
    # without batch_first, (B, T, D) is read as (T, B, D): the result is wrong, and silently so
    seq_first = nn.MultiheadAttention(D, H).eval()
    seq_first.load_state_dict(mha.state_dict())
    with torch.no_grad():
        wrong, _ = seq_first(x, x, x)
    assert wrong.shape == out.shape and (wrong - out).abs().max() > 1e-2
    # --8<-- [end:mha]
