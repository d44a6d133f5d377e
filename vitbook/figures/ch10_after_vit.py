"""Chapter 10, "What came next": the sizes and ImageNet-1k top-1 accuracies of the models that
followed ViT, each as its own paper reports it, with the input size it was measured at.

Every row is the number of the paper named beside it (no model-zoo figures): a model's
repository or timm may list a retrained or re-evaluated number (Swin's model zoo lists Swin-S
at 83.2, the paper 83.0; see PAPER_ROWS), so quoting the papers keeps the rows comparable.
"""

from __future__ import annotations

from vitbook.engine import facts
from vitbook.quoted import quote

#: key: (model, params as reported, top-1 %, input pixels, source)
PAPER_ROWS = {
    # Dosovitskiy et al. 2021: Table 1 (86M); Table 5, pre-trained on ImageNet-1k only and
    # fine-tuned at 384 pixels (DeiT's comparison quotes the same run as 77.9).
    "vitb": ("ViT-B/16", "86M", 77.91, 384, "dosovitskiy2021, Tables 1 and 5"),
    # Touvron et al. 2021, main comparison table: DeiT-B at 224, DeiT-B↑384 fine-tuned at 384.
    "deitb": ("DeiT-B", "86M", 81.8, 224, "touvron2021"),
    "deitb384": ("DeiT-B↑384", "86M", 83.1, 384, "touvron2021"),
    # Wu et al. 2021: ImageNet-1k only, 224 pixels (their ↑384 rows are higher).
    "cvt13": ("CvT-13", "20M", 81.6, 224, "wu2021"),
    "cvt21": ("CvT-21", "32M", 82.5, 224, "wu2021"),
    # Mehta & Rastegari 2022, section 4.1 (params, top-1): trained with a multi-scale sampler;
    # classification runs at 256x256 (section 4.3, the input of their Table 4).
    "mvit_xxs": ("MobileViT-XXS", "1.3M", 69.0, 256, "mehta2022"),
    "mvit_xs": ("MobileViT-XS", "2.3M", 74.8, 256, "mehta2022"),
    "mvit_s": ("MobileViT-S", "5.6M", 78.4, 256, "mehta2022"),
    # Liu et al. 2021, Table 1(a): regular ImageNet-1k training, 224 pixels. The paper prints
    # Swin-T at 29M (its model zoo: 28M) and Swin-S at 83.0 (zoo: 83.2); its appendix gives
    # Swin-B at 224 as 83.3 where Table 1(a) has 83.5: the table's number is used.
    "swin_t": ("Swin-T", "29M", 81.3, 224, "liu2021, Table 1(a)"),
    "swin_s": ("Swin-S", "50M", 83.0, 224, "liu2021, Table 1(a)"),
    "swin_b": ("Swin-B", "88M", 83.5, 224, "liu2021, Table 1(a)"),
}


@facts(chapter=10, id="after-vit-papers")
def after_vit_papers(rec):
    """Each row's size, top-1 and input size, as ``paper_<key>_params`` / ``_top1`` / ``_px``;
    DeiT-B's gain over ViT-B/16 at the same input size."""
    for key, (_, params, top1, px, _source) in PAPER_ROWS.items():
        quote(rec, f"paper_{key}_params", params)
        quote(rec, f"paper_{key}_top1", top1, "{:.1f}")
        quote(rec, f"paper_{key}_px", px)
    # the same input size, two training recipes: DeiT's gain over the paper's own ViT-B/16
    gain = PAPER_ROWS["deitb384"][2] - PAPER_ROWS["vitb"][2]
    rec.fact("paper_deitb384_gain", gain, "{:.1f}")
    return {k: row[1:4] for k, row in PAPER_ROWS.items()}
