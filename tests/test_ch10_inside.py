"""Chapter 10's recorded measurements (figures/facts.json) and its computed cost model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vitbook.figures.ch10_attention import (
    _chance,
    _in_box,
    _peak_inside,
    _rank_corr,
    colour_saliency,
)
from vitbook.figures.ch10_inside import attention_pairs

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"
DOC = Path(__file__).resolve().parents[1] / "docs" / "10-inside-a-trained-vit.md"


def fact(name: str):
    return json.loads(FACTS.read_text())["ch10"][name]["value"]


@pytest.mark.slow
def test_rollout_localisation_against_its_baselines():
    roll, chance = fact("loc_rollout"), fact("loc_chance")
    assert roll > 2 * chance  # the maps point at the object far more often than chance
    # every verdict the text prints agrees with the intervals it was decided from
    for other, key in (("raw", "loc_rollout_vs_raw"), ("random_rollout", "loc_rollout_vs_random"),
                       ("saliency", "loc_rollout_vs_saliency")):  # fmt: skip
        lo, hi = fact("loc_rollout_lo"), fact("loc_rollout_hi")
        olo, ohi = fact(f"loc_{other}_lo"), fact(f"loc_{other}_hi")
        want = "higher" if lo > ohi else "lower" if hi < olo else "indistinguishable"
        assert fact(key) == want
        assert f"{{{{ ch10.{key} }}}}" in DOC.read_text()


def test_colour_saliency_finds_the_saturated_object():
    from vitbook.data.shapes import make_shapes

    s = make_shapes(50, seed=9)
    sal = colour_saliency(s.images, 4)
    assert sal.shape == (50, 8, 8)
    # the heuristic's peak lands in the box for most images (the trivial baseline is strong)
    assert _peak_inside(sal, s.boxes, 4).mean() > 0.8


def test_rank_correlation_and_in_box():
    rng = np.random.default_rng(0)
    a = rng.random((5, 8, 8))
    assert np.allclose(_rank_corr(a, a), 1.0)
    assert np.allclose(_rank_corr(a, -a), -1.0)
    inside = _in_box(np.array([[0, 0, 8, 8]]), (8, 8), 4)
    assert inside.shape == (1, 64) and inside.sum() == 4


def test_peak_inside_and_chance():
    maps = np.zeros((2, 8, 8))
    maps[0, 1, 1] = 1  # patch centre (6, 6)
    maps[1, 7, 7] = 1  # patch centre (30, 30)
    boxes = np.array([[2, 2, 12, 12], [2, 2, 12, 12]])
    assert _peak_inside(maps, boxes, 4).tolist() == [True, False]
    # box 0..32 covers every patch centre; box 0..8 covers 2x2 of 8x8
    assert _chance(np.array([[0, 0, 32, 32]]), (8, 8), 4) == 1.0
    assert _chance(np.array([[0, 0, 8, 8]]), (8, 8), 4) == pytest.approx(4 / 64)


def test_window_cost():
    assert attention_pairs(224, 4, None) == 3136**2
    assert attention_pairs(224, 4, 7) == 3136 * 49
    assert fact("win_ratio_224") == pytest.approx(3136 / 49)
    assert fact("win_growth_global") == pytest.approx(16)
    assert fact("win_growth_window") == pytest.approx(4)


def test_after_vit_table_is_placed_whole_and_consistent():
    """The papers' sizes, accuracies and input sizes (see REFERENCE-FACTS and the sources named
    in ch10_after_vit.py) all reach the chapter's table, are well-formed, and agree with what
    the table's rows say."""
    from vitbook.engine.registry import Recorder
    from vitbook.figures.ch10_after_vit import PAPER_ROWS, after_vit_papers

    rows = after_vit_papers(Recorder(10))
    text = DOC.read_text()
    for k in rows:
        assert f"{{{{ ch10.paper_{k}_top1 }}}}" in text, k
        if k != "deitb384":  # the same DeiT-B, fine-tuned at 384: one size in its row
            assert f"{{{{ ch10.paper_{k}_params }}}}" in text, k
    params = {k: float(p.removesuffix("M")) for k, (p, _, _) in rows.items()}
    top1 = {k: t for k, (_, t, _) in rows.items()}
    px = {k: s for k, (_, _, s) in rows.items()}
    assert all(50 < t < 100 for t in top1.values())
    # every row says its input size; the ViT row is the paper's 384-pixel fine-tuning
    assert px["vitb"] == px["deitb384"] == 384 and px["deitb"] == 224
    assert {px[k] for k in ("mvit_xxs", "mvit_xs", "mvit_s")} == {256}
    # DeiT-B is ViT-B with a better ImageNet-1k recipe: same size, higher accuracy at 384
    assert params["deitb"] == params["vitb"] and top1["deitb384"] > top1["vitb"]
    assert top1["deitb384"] > top1["deitb"]  # a larger input scores higher
    assert all(src for *_, src in PAPER_ROWS.values())  # each row names its paper
    for family in (("cvt13", "cvt21"), ("mvit_xxs", "mvit_xs", "mvit_s"),
                   ("swin_t", "swin_s", "swin_b")):  # fmt: skip
        sizes = [params[k] for k in family]
        accs = [top1[k] for k in family]
        assert sizes == sorted(sizes) and accs == sorted(accs), family  # bigger is better
        assert len({px[k] for k in family}) == 1, family  # one input size per family cell


def test_rings_count_the_squares_around_the_centre():
    from vitbook.figures.ch10_inside import _rings

    ring = _rings((8, 8))
    assert sorted(set(ring.tolist())) == [1, 3, 5, 7]
    assert [int((ring == r).sum()) for r in (1, 3, 5, 7)] == [4, 12, 20, 28]


def _with_table(table: np.ndarray):
    """The chapter's small ViT with its position table (patch rows) replaced by ``table``."""
    import torch

    from vitbook.experiments.pretrain import SHAPES_CFG
    from vitbook.model import VisionTransformer

    model = VisionTransformer(cfg=SHAPES_CFG)
    with torch.no_grad():
        model.pos_embed[0, 1:] = torch.from_numpy(table)
    return model


def test_position_summary_tells_a_ring_code_from_a_row_code():
    """A table that encodes only the ring around the centre makes far-apart patches on one ring
    identical and mirror images identical; one that encodes only the row makes a row identical
    and leaves columns apart. The summary must tell the two apart."""
    from vitbook.figures.ch10_inside import _rings, position_summary

    rng = np.random.default_rng(0)
    d = 64
    ring = _rings((8, 8))
    codes = {r: rng.standard_normal(d) for r in set(ring.tolist())}
    by_ring = position_summary(_with_table(np.stack([codes[r] for r in ring]).astype(np.float32)))
    assert by_ring["far_same_ring"] == pytest.approx(1.0, abs=1e-6)
    assert by_ring["mirror_lr"] == pytest.approx(1.0, abs=1e-6)
    assert by_ring["far_other_ring"] < 0.5
    rows = rng.standard_normal((8, d))
    by_row = position_summary(_with_table(np.repeat(rows, 8, axis=0).astype(np.float32)))
    assert by_row["same_row"] == pytest.approx(1.0, abs=1e-6)
    assert by_row["same_col"] < 0.5 and by_row["mirror_tb"] < 0.5


@pytest.mark.slow
def test_the_across_seeds_check_measures_seed_0_as_the_figures_do():
    """``findings`` and the figures compute each measurement by two paths from the same frozen
    model: seed 0's row of the check must equal what the figures recorded."""
    for figure_fact, check_fact in (
        ("pc1_var", "s0_pc1_var"), ("sim_neighbour", "s0_sim_neighbour"),
        ("sim_far_same_ring", "s0_sim_far_same_ring"), ("dist_l1_mean", "s0_dist_l1_mean"),
        ("patch_on_object", "s0_on_object"), ("loc_rollout", "s0_loc_rollout"),
        ("loc_raw", "s0_loc_raw"), ("rand_corr_roll_top", "s0_rand_corr_roll_top"),
        ("loc_rollout_vs_raw", "s0_rollout_vs_raw"), ("pc1_vs_random", "s0_pc1_vs_random"),
        ("del_rollout_vs_raw", "s0_del_rollout_vs_raw"), ("filter_rel_change", "s0_filter_moved"),
        ("sim_gap_ring", "s0_gap_ring"), ("sim_ring_null_hi", "s0_null_ring"),
        ("sim_neighbour_null_hi", "s0_null_neighbour"), ("dist_all_min", "s0_dist_min"),
        ("dist_low_block", "s0_dist_low_block"),
    ):  # fmt: skip
        assert fact(figure_fact) == pytest.approx(fact(check_fact)), figure_fact


@pytest.mark.slow
def test_the_counts_over_seeds_agree_with_the_per_seed_facts():
    """Every "in k of N" the text prints is the count of the per-seed facts it summarises."""
    n = fact("pre_seeds")
    for name in ("neighbour", "ring", "row"):
        want = sum(fact(f"s{s}_gap_{name}") > fact(f"s{s}_null_{name}") for s in range(n))
        assert fact(f"n_gap_{name}_above_null") == want, name
    depth = fact("depth")
    want = sum(1 < fact(f"s{s}_dist_low_block") < depth for s in range(n))
    assert fact("n_dist_low_middle") == want
    for verdict in ("higher", "lower", "indistinguishable"):
        want = sum(fact(f"s{s}_del_rollout_vs_raw") == verdict for s in range(n))
        assert fact(f"n_del_rollout_vs_raw_is_{verdict}") == want
    # one random last block against another: every pair of draws
    lo, mean, hi = (fact(f"rand_corr_roll_top_pairs{x}") for x in ("_lo", "", "_hi"))
    assert -1 <= lo <= mean <= hi <= 1
    # the fully random models' correlations are read draw by draw against the random pairs'
    for key in ("roll", "raw"):
        lo, hi, nlo, nhi = (fact(f"rand_corr_{key}_{x}")
                            for x in ("all_lo", "all_hi", "null_lo", "null_hi"))  # fmt: skip
        want = "above" if lo > nhi else "below" if hi < nlo else "within"
        assert fact(f"rand_corr_{key}_all_vs_null") == want
    for verdict in ("higher", "lower", "indistinguishable"):
        want = sum(fact(f"s{s}_on_object_vs_shuffled") == verdict for s in range(n))
        assert fact(f"n_on_object_vs_shuffled_is_{verdict}") == want
    want = sum(fact(f"s{s}_gap_ring") > max(fact(f"s{s}_gap_neighbour"), fact(f"s{s}_gap_row"))
               for s in range(n))  # fmt: skip
    assert fact("n_gap_ring_largest") == want
    accs = [fact(f"s{s}_acc") for s in range(n)]
    assert fact("weakest_seed") == int(np.argmin(accs))
    # the printed bounds are bounds: never below the largest deviation they bound
    uniform = fact("dist_uniform")
    for s in range(n):
        for k in ("dist_l1_mean", "dist_last_mean"):
            assert abs(fact(f"s{s}_{k}") - uniform) <= fact("dist_max_dev")
        for k in ("dist_min", "dist_max"):
            assert abs(fact(f"s{s}_{k}") - uniform) <= fact("dist_head_max_dev")


def test_uniform_attention_gives_the_recorded_uniform_distance():
    """mean_attention_distance of uniform attention is the recorded dashed line, and of
    attention to oneself is zero."""
    import torch

    from vitbook.analysis import mean_attention_distance

    grid, patch = 8, 4
    t = 1 + grid * grid
    uniform = torch.full((1, 2, t, t), 1.0 / t, dtype=torch.float64)
    d = mean_attention_distance(uniform, grid, patch)
    assert d.tolist() == pytest.approx([fact("dist_uniform")] * 2, abs=1e-9)
    assert fact("image_px") == grid * patch
    self_only = torch.eye(t, dtype=torch.float64)[None, None]
    assert mean_attention_distance(self_only, grid, patch).item() == 0.0


def test_random_model_is_the_weights_pretraining_started_from():
    """``_random_model(seed)`` is what ``pretrain`` builds right after ``torch.manual_seed(seed)``,
    whatever drew from torch's generator before; the randomisation check's fresh draws are
    none of the pre-trainings' starting points."""
    import torch

    from vitbook.experiments.pretrain import SHAPES_CFG
    from vitbook.figures.ch10_attention import FRESH_DRAWS, _fresh_model, _random_model
    from vitbook.model import VisionTransformer
    from vitbook.runs import PRE_SEEDS

    for seed in (0, 3):
        torch.rand(7)  # whatever came before must not matter
        got = _random_model(seed).state_dict()
        torch.manual_seed(seed)
        want = VisionTransformer(cfg=SHAPES_CFG).state_dict()
        assert got.keys() == want.keys()
        assert all(torch.equal(got[k], want[k]) for k in want)
    starts = [_random_model(s).patch_embed.proj.weight for s in PRE_SEEDS]
    for i in range(FRESH_DRAWS):
        w = _fresh_model(i).patch_embed.proj.weight
        assert not any(torch.equal(w, s) for s in starts)


def test_relative_change():
    import torch

    from vitbook.figures.ch10_inside import _rel_change

    w0 = torch.randn(4, 3, 2, 2)
    assert _rel_change(w0, w0) == 0.0
    assert _rel_change(3 * w0, w0) == pytest.approx(2.0)
    assert _rel_change(torch.zeros_like(w0), w0) == pytest.approx(1.0)


def test_position_null_separates_a_ring_code_from_a_random_table():
    """A ring-coded table's ring gap lies far above its shuffled null; a table of independent
    random vectors has no gap beyond its null's upper end."""
    from vitbook.figures.ch10_inside import _rings, position_null, position_summary

    rng = np.random.default_rng(1)
    ring = _rings((8, 8))
    codes = {r: rng.standard_normal(64) for r in set(ring.tolist())}
    table = np.stack([codes[r] for r in ring]) + 0.5 * rng.standard_normal((64, 64))
    model = _with_table(table.astype(np.float32))
    null = position_null(model, draws=500)
    gap, hi = null["ring"]
    summary = position_summary(model)
    assert gap == pytest.approx(summary["far_same_ring"] - summary["far_other_ring"])
    assert gap > 0.5 and hi < 0.2
    flat = position_null(_with_table(rng.standard_normal((64, 64)).astype(np.float32)), draws=500)
    for gap, hi in flat.values():
        assert gap < hi


def test_paired_verdict_and_low_block():
    from vitbook.figures.ch10_attention import _low_block, _paired

    rng = np.random.default_rng(0)
    b = rng.random(200)
    assert _paired(b - 0.1, b) == "lower"
    assert _paired(b + 0.1, b) == "higher"
    assert _paired(b + np.tile([0.1, -0.1], 100), b) == "indistinguishable"  # mean change 0
    dist = np.array([[16.5, 16.4], [15.7, 15.9], [16.0, 16.1], [16.3, 16.4]])
    assert _low_block(dist) == 2


def test_deletion_gives_one_curve_per_image_and_a_fully_random_model_matches_itself():
    import torch

    from vitbook.figures.ch10_attention import (
        DELETE_STEPS,
        FRESH_DRAWS,
        _deletion,
        _fresh_model,
        _fully_random,
        _maps,
    )

    x = torch.randn(6, 3, 32, 32)
    model = _fresh_model(0)
    order = np.stack([np.random.default_rng(i).permutation(64) for i in range(6)])
    p = _deletion(model, x, order, DELETE_STEPS, (8, 8), 4)
    assert p.shape == (6, len(DELETE_STEPS)) and ((p >= 0) & (p <= 1)).all()
    raw, roll, _ = _maps(model, x, (8, 8))
    full, null = _fully_random((raw, roll), x, (8, 8))
    assert full["roll"][0] == pytest.approx(1.0) and full["raw"][0] == pytest.approx(1.0)
    assert len(full["roll"]) == FRESH_DRAWS
    assert len(null["roll"]) == FRESH_DRAWS * (FRESH_DRAWS - 1) // 2
    assert all(-1 <= c <= 1 for c in null["roll"] + null["raw"])


def test_bounds_round_up_and_the_verdicts_read_values_not_means():
    from vitbook.figures.ch10_attention import _draws_vs_pairs
    from vitbook.figures.ch10_inside import _binomial_tail, _round_up

    assert _round_up(0.2458) == 0.25 and _round_up(1.1493) == 1.15 and _round_up(0.25) == 0.25
    assert _round_up(0.2401) == 0.25 and _round_up(0.2401) >= 0.2401
    # a mean inside the pairs' range is not enough: the draws must lie among the pairs
    assert _draws_vs_pairs([0.6, 0.7], [-0.2, 0.5]) == "above"
    assert _draws_vs_pairs([-0.6, -0.5], [-0.2, 0.5]) == "below"
    assert _draws_vs_pairs([-0.3, 0.6], [-0.2, 0.5]) == "within"
    assert _binomial_tail(4, 5, 0.5) == pytest.approx(6 / 32)
    assert _binomial_tail(0, 5, 0.3) == pytest.approx(1.0)


def test_other_image_never_picks_itself_and_dist_dip():
    from vitbook.figures.ch10_attention import _dist_dip, _other_image

    rng = np.random.default_rng(0)
    for n in (2, 7, 256):
        other = _other_image(rng, n)
        assert sorted(other.tolist()) == list(range(n))  # every box used once
        assert (other != np.arange(n)).all()
    dist = np.array([[16.5, 16.4], [15.7, 15.9], [16.0, 16.1], [16.3, 16.4]])
    assert _dist_dip(dist) == pytest.approx((16.45 + 16.35) / 2 - 15.8)
    flat = np.array([[16.0], [16.2], [16.3], [16.0]])
    assert _dist_dip(flat) == pytest.approx(-0.2)  # no dip: every middle block lies above


def test_weakness_names_the_weakest_model_and_its_shortfalls():
    from vitbook.figures.ch10_inside import POS_GAPS, _seed_list, weakness

    def row(acc, ok, pc1="within"):
        r = {"acc": acc, "pc1_vs_random": pc1, "rollout_vs_raw": "higher",
             "on_object_vs_uniform": "higher", "on_object_vs_shuffled": "higher",
             "dist_low_block": 2 if ok else 1, "dist_last_mean": 16.3, "dist_l1_mean": 16.4,
             "sim_neighbour": 0.2, "sim_far": 0.1, "sim_far_same_ring": 0.2,
             "sim_far_other_ring": 0.0, "gap_neighbour": 0.1, "gap_row": 0.05,
             "gap_ring": 0.2, "del_rollout_vs_raw": "lower"}  # fmt: skip
        for k in POS_GAPS:
            r.setdefault(f"gap_{k}", 0.2)
            r[f"null_{k}"] = 0.03
        return r

    rows = {0: row(0.7, True), 1: row(0.5, True, "above"), 2: row(0.3, False, "above")}
    w = weakness(rows, depth=4)
    assert w["weakest_seed"] == 2 and w["weakest_acc"] == 0.3
    assert w["n_shortfalls"] == 1 and w["n_shortfalls_weakest"] == 1
    assert not w["all_findings_shared"]
    assert w["pc1_above_seeds"] == "1 and 2" and w["pc1_above_are_weakest"]
    rows[0]["pc1_vs_random"] = "above"
    rows[1]["pc1_vs_random"] = "within"
    assert not weakness(rows, depth=4)["pc1_above_are_weakest"]
    shared = {s: row(0.5, True) for s in range(3)}
    assert weakness(shared, depth=4)["all_findings_shared"]
    assert _seed_list([3]) == "3" and _seed_list([3, 0, 1]) == "0, 1 and 3"


def test_a_gap_and_its_null_print_with_three_decimals():
    from vitbook.figures.ch10_inside import _finding_format

    # 0.0439 against 0.0392 would both print 0.04 at two decimals
    assert _finding_format("gap_ring").format(0.0439) != _finding_format("null_ring").format(0.0392)
    assert _finding_format("acc") == "{:.1%}" and _finding_format("sim_far") == "{:.2f}"


def test_every_block_of_every_model_is_read_against_its_own_initialisation() -> None:
    """The per-block facts of ``attention_distance_seeds``: one row per block, each model's
    initialisation on uniform attention, and the counts the text prints add up."""
    depth, models = fact("depth"), fact("dseed_models")
    assert models == fact("pre_seeds")
    below = [fact(f"dseed_b{b}_below_init") for b in range(1, depth + 1)]
    assert sum(below) == fact("dseed_all_below_init") <= fact("dseed_all_pairs") == models * depth
    assert sum(below[1:-1]) == fact("dseed_middle_below_init")
    assert fact("dseed_middle_pairs") == models * (depth - 2)
    uniform = fact("dist_uniform")
    for b in range(1, depth + 1):
        assert fact(f"dseed_b{b}_lo") <= fact(f"dseed_b{b}_hi")
        assert abs(fact(f"dseed_b{b}_init_lo") - uniform) <= fact("dseed_init_max_dev") + 0.05
    # the table of the chapter has a row for every block
    text = DOC.read_text(encoding="utf-8")
    assert all(f"ch10.dseed_b{b}_lo" in text for b in range(1, depth + 1))
    assert f"ch10.dseed_b{depth + 1}_lo" not in text
    assert len(fact("dseed_low_blocks").split(", ")) + 1 == models  # "2, 2, 3, 1 and 3"


def test_block_list_names_every_block_in_order() -> None:
    from vitbook.figures.ch10_attention import _block_list

    assert _block_list([2]) == "2"
    assert _block_list([2, 3, 1]) == "2, 3 and 1"
