"""Speed of the book's ViT against the same network built from torch.nn.TransformerEncoder.

Run:  python benchmarks/bench_model.py [--quick] [--threads N]

One interleaved run (every contender once per repeat, in turn, so drifts in machine speed hit
them alike), each timing taken with ``torch.utils.benchmark.Timer``; the median over repeats
is reported, with ``torch.utils.benchmark.Compare``'s table. Ratios are ours / reference time:
below 1.0 means the book's model is faster.

1. Training throughput (forward, backward, AdamW step), at the size the book trains:
   P 4, D 64, 4 layers, 4 heads, 32x32x3 images, batch 128. Target: ratio <= 1.0.
2. Inference latency of ViT-S/16 and ViT-B/16 at 224, batch 1 and 8, under inference_mode:
   our fused SDPA path, our explicit path, and torch.nn.TransformerEncoder in eval mode with its
   fused inference fast path (and with that path switched off, for scale). Target: within 5%.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.utils.benchmark as benchmark
from torch import nn

from vitbook.model import VisionTransformer, ViTConfig, preset


class TorchViT(nn.Module):
    """The same ViT, its encoder built from torch.nn.TransformerEncoder (pre-norm, exact GELU)."""

    def __init__(self, *, cfg: ViTConfig) -> None:
        super().__init__()
        D = cfg.dim
        self.patch_embed = nn.Conv2d(cfg.in_chans, D, cfg.patch_size, stride=cfg.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos_embed = nn.Parameter(torch.zeros(1, cfg.seq_len, D))
        layer = nn.TransformerEncoderLayer(
            D, cfg.heads, cfg.mlp_dim, dropout=0.0, activation="gelu", batch_first=True,
            norm_first=True, layer_norm_eps=1e-6,
        )  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, cfg.depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D, eps=1e-6)
        self.head = nn.Linear(D, cfg.num_classes)

    @torch.no_grad()
    def copy_from(self, ours: VisionTransformer) -> TorchViT:
        self.patch_embed.load_state_dict(ours.patch_embed.proj.state_dict())
        self.cls_token.copy_(ours.cls_token)
        self.pos_embed.copy_(ours.pos_embed)
        for blk, lay in zip(ours.blocks, self.encoder.layers, strict=True):
            lay.self_attn.in_proj_weight.copy_(blk.attn.qkv.weight)
            lay.self_attn.in_proj_bias.copy_(blk.attn.qkv.bias)
            lay.self_attn.out_proj.load_state_dict(blk.attn.proj.state_dict())
            lay.linear1.load_state_dict(blk.mlp.fc1.state_dict())
            lay.linear2.load_state_dict(blk.mlp.fc2.state_dict())
            lay.norm1.load_state_dict(blk.norm1.state_dict())
            lay.norm2.load_state_dict(blk.norm2.state_dict())
        self.norm.load_state_dict(ours.norm.state_dict())
        self.head.load_state_dict(ours.head.state_dict())
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.patch_embed(x).flatten(2).transpose(1, 2)  # (B, N, D)
        z = torch.cat([self.cls_token.expand(z.shape[0], -1, -1), z], dim=1)  # (B, N+1, D)
        z = self.encoder(z + self.pos_embed)  # (B, N+1, D)
        return self.head(self.norm(z)[:, 0])  # (B, K)


def interleaved(contenders: dict[str, Callable[[], None]], *, repeats: int, iters: int,
                label: str = "") -> dict[str, float]:  # fmt: skip
    """Median seconds per call of each contender, timed in turn within every repeat.

    Each repeat times every contender once, one after the other, with
    ``torch.utils.benchmark.Timer.timeit(iters)`` (two warm-up calls, then ``iters`` timed
    calls, at this process's thread count); interleaving makes drifts in machine speed hit
    all contenders alike. The repeats of one contender are merged into one
    ``Measurement``, whose median is returned; ``torch.utils.benchmark.Compare`` prints them.
    """
    threads = torch.get_num_threads()  # Timer defaults to 1 thread; keep the process's own
    timers = {
        name: benchmark.Timer(stmt="fn()", globals={"fn": fn}, label=label, description=name,
                              sub_label=f"{iters} calls x {repeats} rounds",
                              num_threads=threads)
        for name, fn in contenders.items()
    }  # fmt: skip
    runs: dict[str, list[benchmark.Measurement]] = {k: [] for k in contenders}
    for _ in range(repeats):
        for name, timer in timers.items():
            runs[name].append(timer.timeit(iters))
    merged = {k: benchmark.Measurement.merge(v)[0] for k, v in runs.items()}
    benchmark.Compare(list(merged.values())).print()
    return {k: m.median for k, m in merged.items()}


def bench_training(*, repeats: int, iters: int) -> None:
    cfg = ViTConfig(image_size=32, patch_size=4, dim=64, depth=4, heads=4, num_classes=6)
    torch.manual_seed(0)
    ours = VisionTransformer(cfg=cfg).train()
    ref = TorchViT(cfg=cfg).copy_from(ours).train()
    x, y = torch.randn(128, 3, 32, 32), torch.randint(0, 6, (128,))
    with torch.no_grad():
        diff = (ours(x) - ref(x)).abs().max().item()
    print(f"training, {cfg.dim=} {cfg.depth=} P={cfg.patch_size} batch 128, "
          f"{ours.num_params():,} params; logits differ by {diff:.1e}")  # fmt: skip

    def step_fn(model: nn.Module) -> Callable[[], None]:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step() -> None:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        return step

    t = interleaved({"ours": step_fn(ours), "torch.nn": step_fn(ref)}, repeats=repeats,
                    iters=iters, label="training step, batch 128")  # fmt: skip
    for k, v in t.items():
        print(f"  {k:<10} {128 / v:8.0f} images/s")
    print(f"  ratio ours/torch.nn time: {t['ours'] / t['torch.nn']:.3f}  (target <= 1.0)")


def bench_inference(name: str, batch: int, *, repeats: int, iters: int) -> None:
    cfg = preset(name)
    torch.manual_seed(0)
    ours = VisionTransformer(cfg=cfg).eval()
    explicit = VisionTransformer(cfg=cfg).eval()
    explicit.load_state_dict(ours.state_dict())
    explicit.set_fused_attn(False)
    ref = TorchViT(cfg=cfg).copy_from(ours).eval()
    x = torch.randn(batch, 3, 224, 224)

    def run(model: nn.Module, fastpath: bool = True) -> Callable[[], None]:
        def call() -> None:
            torch.backends.mha.set_fastpath_enabled(fastpath)
            with torch.inference_mode():
                model(x)
            torch.backends.mha.set_fastpath_enabled(True)

        return call

    with torch.inference_mode():
        diff = (ours(x) - ref(x)).abs().max().item()
    t = interleaved(
        {"ours (SDPA)": run(ours), "ours (explicit)": run(explicit),
         "torch.nn fast path": run(ref), "torch.nn, no fast path": run(ref, fastpath=False)},
        repeats=repeats, iters=iters, label=f"inference {name}, batch {batch}",
    )  # fmt: skip
    print(f"inference {name} batch {batch} (logits differ by {diff:.1e})")
    for k, v in t.items():
        print(f"  {k:<24} {1000 * v:8.1f} ms")
    fast = t["torch.nn fast path"]
    print(f"  ratio ours/torch.nn fast path:     {t['ours (SDPA)'] / fast:.3f}  (target <= 1.05)")
    print(f"  ratio explicit/ours:               {t['ours (explicit)'] / t['ours (SDPA)']:.3f}")
    print(f"  ratio torch.nn no-fast/fast path:  {t['torch.nn, no fast path'] / fast:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    q = args.quick
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, quick={q}")
    bench_training(repeats=3 if q else 7, iters=2 if q else 5)
    for name in ("vit-s/16", "vit-b/16"):
        for batch in (1, 8):
            iters = (1 if q else 3) if batch == 8 or name == "vit-b/16" else (2 if q else 10)
            bench_inference(name, batch, repeats=3 if q else 7, iters=iters)


if __name__ == "__main__":
    main()
