"""Numbers the book quotes from its sources instead of computing them.

A chapter module records such a number with :func:`quote` instead of ``rec.fact``: the same
arguments, and the fact carries ``"quoted"`` in ``figures/facts.json`` (``"Table 5,
Dosovitskiy et al. 2021"``), which its card and the Numbers appendix print as "Quoted" with the
place and the source, where a computed number says "Computed". :data:`QUOTED` is the one table
of every quoted number, by chapter and fact name: its value as the source prints it, the table,
figure or section it is read from, and the source (a key of ``docs/references.bib``).
:func:`quote` refuses a name the table lacks and a value that differs from the table's, and
``tests/test_quoted.py`` checks the other way: every fact the table names is recorded as quoted,
and no fact that is not in it claims to be.

Nothing here imports torch: the site reads it too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: how a card names each source (keys of docs/references.bib)
SOURCES = {
    "dosovitskiy2021": "Dosovitskiy et al. 2021",
    "touvron2021": "Touvron et al. 2021 (DeiT)",
    "he2022": "He et al. 2022 (MAE)",
    "vitjax2020": "the paper's JAX code (google-research/vision_transformer)",
    "wightman2019": "timm (Wightman)",
    "lippe2024uvadlc": "Lippe, UvA Deep Learning Tutorials",
    "wu2021": "Wu et al. 2021 (CvT)",
    "mehta2022": "Mehta & Rastegari 2022 (MobileViT)",
    "liu2021": "Liu et al. 2021 (Swin)",
}


class Q(NamedTuple):
    """One quoted number: its value as recorded, where in the source, and the source."""

    value: Any
    where: str
    source: str

    @property
    def label(self) -> str:
        """``"Table 5, Dosovitskiy et al. 2021"``: what the card and the appendix print."""
        return f"{self.where}, {SOURCES[self.source]}"


# fmt: off
#: chapter -> fact name -> the quoted number (checked against /work/shared/REFERENCE-FACTS.md
#: and the sources each chapter module names beside it)
QUOTED: dict[str, dict[str, Q]] = {
    "ch01": {
        # Table 5, dosovitskiy2021
        "t5_in1k_b16": Q(77.91, 'Table 5', "dosovitskiy2021"),
        "t5_in1k_l16": Q(76.53, 'Table 5', "dosovitskiy2021"),
        "t5_in21k_b16": Q(83.97, 'Table 5', "dosovitskiy2021"),
        "t5_in21k_l16": Q(85.15, 'Table 5', "dosovitskiy2021"),
        "t5_in21k_h14": Q(85.13, 'Table 5', "dosovitskiy2021"),
        "t5_jft_b16": Q(84.15, 'Table 5', "dosovitskiy2021"),
        "t5_jft_l16": Q(87.12, 'Table 5', "dosovitskiy2021"),
        "t5_jft_h14": Q(88.04, 'Table 5', "dosovitskiy2021"),
        # Table 5 (fine-tuned at 384 pixels), dosovitskiy2021
        "finetune_res": Q(384, 'Table 5 (fine-tuned at 384 pixels)', "dosovitskiy2021"),
        # Table 2, dosovitskiy2021
        "t2_h14_jft": Q(88.55, 'Table 2', "dosovitskiy2021"),
        "t2_h14_jft_days": Q(2.5, 'Table 2', "dosovitskiy2021"),
        "t2_l16_jft": Q(87.76, 'Table 2', "dosovitskiy2021"),
        "t2_l16_jft_days": Q(0.68, 'Table 2', "dosovitskiy2021"),
        "t2_l16_in21k": Q(85.3, 'Table 2', "dosovitskiy2021"),
        "t2_l16_in21k_days": Q(0.23, 'Table 2', "dosovitskiy2021"),
        "t2_bit_l": Q(87.54, 'Table 2', "dosovitskiy2021"),
        "t2_bit_l_days": Q(9.9, 'Table 2', "dosovitskiy2021"),
        "t2_noisy_student": Q(88.4, 'Table 2', "dosovitskiy2021"),
        "t2_noisy_student_days": Q(12.3, 'Table 2', "dosovitskiy2021"),
        "t2_noisy_student_fixres": Q(
            88.5, "Table 2 (its footnote: the result Touvron et al. 2020 report)",
            "dosovitskiy2021"),
        # section 4.1, dosovitskiy2021
        "in1k_images": Q('1.3 million', 'section 4.1', "dosovitskiy2021"),
        "in21k_images": Q('14 million', 'section 4.1', "dosovitskiy2021"),
        "jft_images": Q('300 million', 'section 4.1', "dosovitskiy2021"),
        # Table 3, dosovitskiy2021
        "in1k_epochs": Q(300, 'Table 3', "dosovitskiy2021"),
        "vit_weight_decay": Q(0.3, 'Table 3', "dosovitskiy2021"),
        # section 4.4, Fig. 5, dosovitskiy2021
        "fig5_saving": Q('2-4', 'section 4.4, Fig. 5', "dosovitskiy2021"),
        # section 4.3, Fig. 4, dosovitskiy2021
        "jft_subset_small": Q('9 million', 'section 4.3, Fig. 4', "dosovitskiy2021"),
        "jft_subset_large": Q('90 million', 'section 4.3, Fig. 4', "dosovitskiy2021"),
        # section 4.6 and appendix B.1.2, dosovitskiy2021
        "ssl_mask_share": Q(0.5, 'section 4.6 and appendix B.1.2', "dosovitskiy2021"),
        "ssl_b16": Q(79.9, 'section 4.6 and appendix B.1.2', "dosovitskiy2021"),
        "ssl_gain_over_scratch": Q(2, 'section 4.6 and appendix B.1.2', "dosovitskiy2021"),
        "ssl_gap_to_supervised": Q(4, 'section 4.6 and appendix B.1.2', "dosovitskiy2021"),
        # the ImageNet comparison table, touvron2021
        "deit_b": Q(81.8, 'the ImageNet comparison table', "touvron2021"),
        "deit_b_distilled": Q(83.4, 'the ImageNet comparison table', "touvron2021"),
        "deit_res": Q(224, 'the ImageNet comparison table', "touvron2021"),
        # the ImageNet comparison table (DeiT-B↑384), touvron2021
        "deit_b_384": Q(83.1, 'the ImageNet comparison table (DeiT-B↑384)', "touvron2021"),
        # main.py's --weight-decay default, facebookresearch/deit, touvron2021
        "deit_weight_decay": Q(
            0.05, "main.py's --weight-decay default, facebookresearch/deit", "touvron2021"),
        # its default masking ratio, he2022
        "mae_mask_share": Q(0.75, 'its default masking ratio', "he2022"),
    },
    "ch04": {
        # appendix D.4, Table 8, dosovitskiy2021
        "t8_none": Q(0.61382, 'appendix D.4, Table 8', "dosovitskiy2021"),
        "t8_1d": Q(0.64206, 'appendix D.4, Table 8', "dosovitskiy2021"),
        "t8_2d": Q(0.64001, 'appendix D.4, Table 8', "dosovitskiy2021"),
        "t8_relative": Q(0.64032, 'appendix D.4, Table 8', "dosovitskiy2021"),
        # models_vit.py (posembed_input), vitjax2020
        "init_std": Q(0.02, 'models_vit.py (posembed_input)', "vitjax2020"),
        # vision_transformer.py and trunc_normal_'s defaults, wightman2019
        "init_cls_std": Q(
            1e-06, "vision_transformer.py and trunc_normal_'s defaults", "wightman2019"),
        "trunc_bound": Q(2.0, "vision_transformer.py and trunc_normal_'s defaults", "wightman2019"),
    },
    "ch07": {
        # Table 3, dosovitskiy2021
        "t3_dropout_jft": Q(0.0, 'Table 3', "dosovitskiy2021"),
        "t3_dropout_in21k": Q(0.1, 'Table 3', "dosovitskiy2021"),
        "t3_dropout_in1k": Q(0.1, 'Table 3', "dosovitskiy2021"),
        # models_vit.py (posembed_input), vitjax2020
        "jax_pos_std": Q(0.02, 'models_vit.py (posembed_input)', "vitjax2020"),
    },
    "ch08": {
        # Table 6, dosovitskiy2021
        "t6_b32_7_top1": Q(80.73, 'Table 6', "dosovitskiy2021"),
        "t6_b32_7_exaflops": Q(55, 'Table 6', "dosovitskiy2021"),
        "t6_b16_7_top1": Q(84.15, 'Table 6', "dosovitskiy2021"),
        "t6_b16_7_exaflops": Q(224, 'Table 6', "dosovitskiy2021"),
        "t6_l32_7_top1": Q(84.37, 'Table 6', "dosovitskiy2021"),
        "t6_l32_7_exaflops": Q(196, 'Table 6', "dosovitskiy2021"),
        "t6_l16_7_top1": Q(86.3, 'Table 6', "dosovitskiy2021"),
        "t6_l16_7_exaflops": Q(783, 'Table 6', "dosovitskiy2021"),
        "t6_l16_14_top1": Q(87.12, 'Table 6', "dosovitskiy2021"),
        "t6_l16_14_exaflops": Q(1567, 'Table 6', "dosovitskiy2021"),
        "t6_h14_14_top1": Q(88.08, 'Table 6', "dosovitskiy2021"),
        "t6_h14_14_exaflops": Q(4262, 'Table 6', "dosovitskiy2021"),
        "t6_epochs_short": Q(7, 'Table 6', "dosovitskiy2021"),
        "t6_epochs_long": Q(14, 'Table 6', "dosovitskiy2021"),
        # section 4.1, dosovitskiy2021
        "jft_images": Q(303.0, 'section 4.1', "dosovitskiy2021"),
        # Table 1, dosovitskiy2021
        "paper_large_params_m": Q(307, 'Table 1', "dosovitskiy2021"),
        # appendix D.2, dosovitskiy2021
        "d2_base_depth": Q(8, 'appendix D.2', "dosovitskiy2021"),
        "d2_base_dim": Q(1024, 'appendix D.2', "dosovitskiy2021"),
        "d2_base_mlp": Q(2048, 'appendix D.2', "dosovitskiy2021"),
        "d2_base_patch": Q(32, 'appendix D.2', "dosovitskiy2021"),
        "d2_depth_visible": Q(64, 'appendix D.2', "dosovitskiy2021"),
        "d2_depth_diminishing": Q(16, 'appendix D.2', "dosovitskiy2021"),
        # the ImageNet-21k checkpoints' class count, vitjax2020
        "in21k_classes": Q(21843, "the ImageNet-21k checkpoints' class count", "vitjax2020"),
        # Tutorial 15 (Vision Transformers), lippe2024uvadlc
        "uva_image": Q(32, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_dim": Q(256, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_heads": Q(8, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_mlp": Q(512, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_depth": Q(6, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_best_patch": Q(4, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_key_min_lo": Q(16, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_key_min_hi": Q(32, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_test_acc": Q(0.7559, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
        "uva_cnn_acc": Q(0.9, 'Tutorial 15 (Vision Transformers)', "lippe2024uvadlc"),
    },
    "ch09": {
        # section 4.1, dosovitskiy2021
        "paper_pre_batch": Q(4096, 'section 4.1', "dosovitskiy2021"),
        "paper_adam_beta1": Q(0.9, 'section 4.1', "dosovitskiy2021"),
        "paper_adam_beta2": Q(0.999, 'section 4.1', "dosovitskiy2021"),
        "paper_ft_batch": Q(512, 'section 4.1', "dosovitskiy2021"),
        "paper_ft_momentum": Q(0.9, 'section 4.1', "dosovitskiy2021"),
        "paper_ft_optimizer": Q('SGD with momentum 0.9', 'section 4.1', "dosovitskiy2021"),
        # Table 3, dosovitskiy2021
        "paper_pre_wd": Q(0.1, 'Table 3', "dosovitskiy2021"),
        "paper_pre_wd_21k": Q(0.03, 'Table 3', "dosovitskiy2021"),
        "paper_pre_warmup": Q('10k', 'Table 3', "dosovitskiy2021"),
        "paper_scratch_lr": Q('3e-3', 'Table 3', "dosovitskiy2021"),
        "paper_scratch_wd": Q(0.3, 'Table 3', "dosovitskiy2021"),
        "paper_scratch_epochs": Q(300, 'Table 3', "dosovitskiy2021"),
        "paper_scratch_clip": Q(1, 'Table 3', "dosovitskiy2021"),
        "paper_pre_lr_b": Q(0.0008, 'Table 3', "dosovitskiy2021"),
        "paper_pre_lr_h": Q(0.0003, 'Table 3', "dosovitskiy2021"),
        "paper_pre_lr_21k": Q(0.001, 'Table 3', "dosovitskiy2021"),
        "paper_pre_epochs_21k": Q(90, 'Table 3', "dosovitskiy2021"),
        "paper_pre_epochs_jft_lo": Q(7, 'Table 3', "dosovitskiy2021"),
        "paper_pre_epochs_jft_hi": Q(14, 'Table 3', "dosovitskiy2021"),
        # appendix B.1.1, Table 4, dosovitskiy2021
        "paper_ft_res": Q(384, 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_lrs": Q('0.001, 0.003, 0.01, 0.03', 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_lrs_imagenet": Q(
            '0.003, 0.01, 0.03, 0.06', 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_steps_imagenet": Q(20000, 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_steps_cifar": Q(10000, 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_steps_pets": Q(500, 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        "paper_ft_clip": Q(1, 'appendix B.1.1, Table 4', "dosovitskiy2021"),
        # section 4.1, dosovitskiy2021
        "paper_t2_res_l16": Q(512, 'section 4.1', "dosovitskiy2021"),
        "paper_t2_res_h14": Q(518, 'section 4.1', "dosovitskiy2021"),
        "paper_polyak": Q(0.9999, 'section 4.1', "dosovitskiy2021"),
        # section 4.3, Fig. 4, dosovitskiy2021
        "paper_fig4_small": Q('9M', 'section 4.3, Fig. 4', "dosovitskiy2021"),
        "paper_fig4_large": Q('90M', 'section 4.3, Fig. 4', "dosovitskiy2021"),
        "paper_fig4_largest": Q('300M', 'section 4.3, Fig. 4', "dosovitskiy2021"),
        # vit_jax/configs/common.py (warmup_steps), vitjax2020
        "code_ft_warmup": Q(500, 'vit_jax/configs/common.py (warmup_steps)', "vitjax2020"),
    },
    "ch10": {
        # Table 1, dosovitskiy2021
        "paper_vitb_params": Q('86M', 'Table 1', "dosovitskiy2021"),
        # Table 5, dosovitskiy2021
        "paper_vitb_top1": Q(77.91, 'Table 5', "dosovitskiy2021"),
        "paper_vitb_px": Q(384, 'Table 5', "dosovitskiy2021"),
        # the ImageNet comparison table, touvron2021
        "paper_deitb_params": Q('86M', 'the ImageNet comparison table', "touvron2021"),
        "paper_deitb_top1": Q(81.8, 'the ImageNet comparison table', "touvron2021"),
        "paper_deitb_px": Q(224, 'the ImageNet comparison table', "touvron2021"),
        "paper_deitb384_params": Q('86M', 'the ImageNet comparison table', "touvron2021"),
        "paper_deitb384_top1": Q(83.1, 'the ImageNet comparison table', "touvron2021"),
        "paper_deitb384_px": Q(384, 'the ImageNet comparison table', "touvron2021"),
        # ImageNet-1k results at 224 pixels, wu2021
        "paper_cvt13_params": Q('20M', 'ImageNet-1k results at 224 pixels', "wu2021"),
        "paper_cvt13_top1": Q(81.6, 'ImageNet-1k results at 224 pixels', "wu2021"),
        "paper_cvt13_px": Q(224, 'ImageNet-1k results at 224 pixels', "wu2021"),
        "paper_cvt21_params": Q('32M', 'ImageNet-1k results at 224 pixels', "wu2021"),
        "paper_cvt21_top1": Q(82.5, 'ImageNet-1k results at 224 pixels', "wu2021"),
        "paper_cvt21_px": Q(224, 'ImageNet-1k results at 224 pixels', "wu2021"),
        # section 4.1, mehta2022
        "paper_mvit_xxs_params": Q('1.3M', 'section 4.1', "mehta2022"),
        "paper_mvit_xxs_top1": Q(69.0, 'section 4.1', "mehta2022"),
        "paper_mvit_xxs_px": Q(256, 'section 4.1', "mehta2022"),
        "paper_mvit_xs_params": Q('2.3M', 'section 4.1', "mehta2022"),
        "paper_mvit_xs_top1": Q(74.8, 'section 4.1', "mehta2022"),
        "paper_mvit_xs_px": Q(256, 'section 4.1', "mehta2022"),
        "paper_mvit_s_params": Q('5.6M', 'section 4.1', "mehta2022"),
        "paper_mvit_s_top1": Q(78.4, 'section 4.1', "mehta2022"),
        "paper_mvit_s_px": Q(256, 'section 4.1', "mehta2022"),
        # Table 1(a), liu2021
        "paper_swin_t_params": Q('29M', 'Table 1(a)', "liu2021"),
        "paper_swin_t_top1": Q(81.3, 'Table 1(a)', "liu2021"),
        "paper_swin_t_px": Q(224, 'Table 1(a)', "liu2021"),
        "paper_swin_s_params": Q('50M', 'Table 1(a)', "liu2021"),
        "paper_swin_s_top1": Q(83.0, 'Table 1(a)', "liu2021"),
        "paper_swin_s_px": Q(224, 'Table 1(a)', "liu2021"),
        "paper_swin_b_params": Q('88M', 'Table 1(a)', "liu2021"),
        "paper_swin_b_top1": Q(83.5, 'Table 1(a)', "liu2021"),
        "paper_swin_b_px": Q(224, 'Table 1(a)', "liu2021"),
    },
}
# fmt: on


def lookup(chapter: int | str, name: str) -> Q | None:
    """The table's entry for fact ``name`` of ``chapter`` (``1`` or ``"ch01"``), or None."""
    key = chapter if isinstance(chapter, str) else f"ch{chapter:02d}"
    return QUOTED.get(key, {}).get(name)


def quote(rec: Any, name: str, value: Any, fmt: str | None = None, **kwargs: Any) -> Any:
    """``rec.fact(name, value, fmt, **kwargs)`` for a number quoted from a source: the fact
    is marked ``"quoted"`` with its place and source from :data:`QUOTED`, which must list it
    with this value. Returns ``value``."""
    q = lookup(rec.chapter, name)
    if q is None:
        raise KeyError(
            f"fact {name!r} of chapter {rec.chapter} is quoted but not in vitbook.quoted.QUOTED;"
            " add it there with its table or figure and its source"
        )
    if q.value != value:
        raise ValueError(
            f"fact {name!r} of chapter {rec.chapter}: {value!r} is recorded, but "
            f"vitbook.quoted.QUOTED has {q.value!r} ({q.label})"
        )
    rec.fact(name, value, fmt, **kwargs)
    rec.facts[name]["quoted"] = q.label
    return value
