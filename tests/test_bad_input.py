"""Bad input everywhere a reader or author types: the CLI, the model, and a page.

Each case gets a clear message that names the problem (and, where there is one, the fix), and a
non-zero exit or an exception raised where the input enters, never a traceback from deep inside
torch or Jinja. The test names list the cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from vitbook.analysis import interpolate_pos_embed, sincos_2d
from vitbook.model import VisionTransformer, ViTConfig, preset

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the CLI


def vitbook_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vitbook", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["figures", "--chapter", "99"], "error: unknown chapter 99; chapters with figures: "),
        (["list", "--chapter", "99"], "error: unknown chapter 99; chapters with figures: "),
        (
            ["figures", "--chapter", "2", "--only", "no-such-figure"],
            "error: unknown figure 'no-such-figure'; valid ids:",
        ),
        (
            ["figures", "--only", "ch02/no-such-figure"],
            "error: unknown figure 'ch02/no-such-figure'; valid ids:",
        ),
        (["figures", "--jobs", "0"], "error: argument --jobs: must be at least 1, got 0"),
        (["figures", "--jobs", "-3"], "error: argument --jobs: must be at least 1, got -3"),
        (
            ["figures", "--jobs", "two"],
            "error: argument --jobs: expected a whole number, got 'two'",
        ),
        (["figures", "--chapter", "two"], "error: argument --chapter: invalid int value: 'two'"),
        (["frobnicate"], "error: argument command: invalid choice: 'frobnicate'"),
    ],
    ids=[
        "unknown-chapter",
        "list-unknown-chapter",
        "unknown-figure-in-chapter",
        "unknown-figure-key",
        "jobs-zero",
        "jobs-negative",
        "jobs-not-a-number",
        "chapter-not-a-number",
        "unknown-command",
    ],
)
def test_cli_bad_input_exits_2_with_one_clear_line(args: list[str], message: str) -> None:
    proc = vitbook_cli(*args)
    err = proc.stderr
    assert proc.returncode == 2, f"exit {proc.returncode}; stderr:\n{err}"
    assert "Traceback" not in err and "Traceback" not in proc.stdout
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and message in lines[0], f"expected one line with {message!r}:\n{err}"
    assert proc.stdout == "", "a refused command printed to stdout"


@pytest.mark.slow
def test_cli_unknown_figure_lists_the_valid_ids() -> None:
    proc = vitbook_cli("figures", "--chapter", "2", "--only", "no-such-figure")
    listed = [line.strip() for line in proc.stderr.splitlines()[1:]]
    assert "ch02/patch-grids" in listed
    assert all(line.startswith("ch02/") for line in listed), listed


# ----------------------------------------------------------------------------- the model


def test_model_image_size_not_divisible_by_patch_names_the_nearest_sizes() -> None:
    with pytest.raises(
        ValueError,
        match=r"image 225x225 is not divisible by patch size 16.*; "
        r"resize to 224 or 240",
    ):
        ViTConfig(image_size=225, patch_size=16)


def test_model_non_square_size_not_divisible_names_both_sides() -> None:
    with pytest.raises(
        ValueError, match=r"image 224x250 .*width 250.* resize to 224x240 or 224x256"
    ):
        ViTConfig(image_size=(224, 250), patch_size=16)


def test_model_input_of_wrong_size_is_refused_before_the_conv() -> None:
    model = VisionTransformer(cfg=preset("tinyvit8"))
    with pytest.raises(
        ValueError,
        match=r"image 10x10 is not divisible by patch size 4; "
        r"resize to 8x8",
    ):
        model(torch.zeros(1, 1, 10, 10))
    with pytest.raises(
        ValueError,
        match=r"image 12x12 does not match the model's 8x8; .*"
        r"interpolate_pos_embed",
    ):
        model(torch.zeros(1, 1, 12, 12))


def test_model_wrong_channels_grayscale_into_rgb_says_expand() -> None:
    cfg = ViTConfig(image_size=32, patch_size=8, dim=24, depth=1, heads=3, num_classes=2)
    model = VisionTransformer(cfg=cfg)
    with pytest.raises(
        ValueError,
        match=r"image has 1 channels but the model expects 3; "
        r"convert grayscale to RGB, e\.g\. x\.expand",
    ):
        model(torch.zeros(2, 1, 32, 32))
    with pytest.raises(ValueError, match=r"image has 4 channels .* in_chans=4"):
        model(torch.zeros(2, 4, 32, 32))


def test_model_missing_batch_dimension_says_unsqueeze() -> None:
    model = VisionTransformer(cfg=preset("tinyvit8"))
    with pytest.raises(ValueError, match=r"\(B, C, H, W\), got shape \(1, 8, 8\); .*unsqueeze"):
        model(torch.zeros(1, 8, 8))


def test_model_heads_not_dividing_width_names_the_nearest_widths() -> None:
    with pytest.raises(ValueError, match=r"dim 100 is not divisible by heads 3; use dim 99 or 102"):
        ViTConfig(dim=100, heads=3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("patch_size", 0, "patch size 0 must be a positive integer"),
        ("in_chans", 0, "in_chans 0 must be at least 1"),
        ("heads", 0, "heads 0 must be at least 1"),
        ("depth", -1, "depth -1 must be 0 or more"),
        ("pool", "max", "pool 'max' is unknown; use 'cls' or 'mean'"),
        ("pos_embed", "rope", "pos_embed 'rope' is unknown"),
    ],
    ids=[
        "patch-zero",
        "channels-zero",
        "heads-zero",
        "depth-negative",
        "pool-unknown",
        "pos-embed-unknown",
    ],
)
def test_model_config_field_out_of_range(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ViTConfig(**{field: value})


def test_model_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(ValueError, match=r"unknown preset 'vit-z/16'; use one of .*vit-b/16"):
        preset("vit-z/16")


def test_interpolation_to_a_zero_grid_is_refused() -> None:
    table = torch.zeros(1, 1 + 14 * 14, 8)
    with pytest.raises(ValueError, match=r"new grid 0x0 must have at least one patch per side"):
        interpolate_pos_embed(table, 14, 0)
    with pytest.raises(ValueError, match=r"new grid 24x0 must have at least one patch per side"):
        interpolate_pos_embed(table, 14, (24, 0))


def test_interpolation_with_a_position_table_length_mismatch_names_the_right_grid() -> None:
    table = torch.zeros(1, 1 + 14 * 14, 8)  # made for a 14x14 grid
    with pytest.raises(
        ValueError,
        match=r"position table has 197 tokens but grid 16x16 .* needs "
        r"257; .* 196 patch positions \(a 14x14 grid\)",
    ):
        interpolate_pos_embed(table, 16, 24)


def test_sincos_width_not_divisible_by_4_names_the_nearest_widths() -> None:
    with pytest.raises(ValueError, match=r"width 30 must be divisible by 4; use 28 or 32"):
        sincos_2d(4, 4, 30)


# ----------------------------------------------------------------------------- a page


def mini_book(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """Build a one-chapter MkDocs project that uses the book's macros module."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: mini\nsite_url: https://example.org/mini/\nplugins:\n  - macros:\n"
        "      modules: [vitbook.site.macros]\n      on_undefined: strict\n"
        "      on_error_fail: true\n      include_yaml: []\n"
    )
    (tmp_path / "figures" / "facts.json").write_text(
        json.dumps({"ch02": {"tokens": {"value": 196, "text": "196"}}})
    )
    (tmp_path / "docs" / "references.bib").write_text(
        "@article{known2020,\n  author = {Doe, Jane},\n  title = {Known},\n  year = {2020},\n"
        "  url = {https://example.org}\n}\n"
    )
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "02-mini.md").write_text(f"# 2. Mini\n\n{page}\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_page_mini_book_builds_when_every_name_is_known(tmp_path: Path) -> None:
    """The control: the same tiny project builds, so the failures below are the bad names."""
    proc = mini_book(tmp_path, 'Tokens: {{ ch02.tokens }} {{ cite("known2020") }}')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (tmp_path / "site" / "02-mini" / "index.html").read_text()
    assert "Tokens: 196" in html and "Doe, 2020" in html


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("{{ ch02.no_such_fact }}", "unknown fact ch02.no_such_fact"),
        ("{{ ch07.tokens }}", "'ch07' is undefined"),
        (
            '{{ cite("nobody1999") }}',
            "unknown citation 'nobody1999'; add it to docs/references.bib",
        ),
        ('{{ ref("no-such-figure") }}', "unknown figure or equation 'no-such-figure'"),
    ],
    ids=["unknown-fact", "unknown-chapter-facts", "unknown-citation", "unknown-figure-ref"],
)
def test_page_naming_an_unknown_name_fails_the_build(
    tmp_path: Path, page: str, message: str
) -> None:
    proc = mini_book(tmp_path, page)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"the build passed with {page!r}"
    assert message in out, f"expected {message!r} in the build output:\n{out[-3000:]}"
    assert not (tmp_path / "site" / "02-mini" / "index.html").exists()


@pytest.mark.slow
def test_page_build_without_facts_says_run_the_figures(tmp_path: Path) -> None:
    proc = mini_book(tmp_path, "{{ ch02.tokens }}")
    assert proc.returncode == 0
    (tmp_path / "figures" / "facts.json").unlink()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site2")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "facts.json is missing: run `python -m vitbook figures` first" in out, out[-3000:]
