"""Glossary links: the first use of every glossary term in each chapter links to its entry with
``{{ term("text", "slug") }}``. ``link`` is the tool that placed them; on a linked chapter it
finds nothing left to link. Run it on a chapter to link new terms:
``python -c "import tests.test_glossary_links as t; ..."``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHAPTERS = sorted(DOCS.glob("[01][0-9]-*.md"))

TERMS = {
    "multi-head-self-attention": ["multi-head self-attention", "multi-head attention"],
    "mean-attention-distance": ["mean attention distance"],
    "attention-rollout": ["attention rollout"],
    "attention-head": ["attention heads", "attention head"],
    "windowed-attention": ["windowed attention"],
    "self-attention": ["self-attention"],
    "class-token": ["class tokens", "class token"],
    "data-leakage": ["data leakage", "leakage"],
    "encoder-block": ["encoder blocks", "encoder block"],
    "fine-tuning": ["fine-tuning", "fine-tuned", "fine-tune"],
    "flops": ["FLOPs", "MACs"],
    "gelu": ["GELU"],
    "gradient-clipping": ["gradient clipping"],
    "head": ["classification head", "linear head"],
    "inductive-bias": ["inductive bias"],
    "layernorm": ["LayerNorm"],
    "logits": ["logits"],
    "mlp": ["MLP"],
    "patch-embedding": ["patch embeddings", "patch embedding"],
    "permutation-equivariance": ["permutation equivariance", "permutation-equivariant"],
    "position-embedding": ["position embeddings", "position embedding"],
    "pre-norm": ["pre-norm"],
    "pre-training": ["pre-training", "pre-trained"],
    "raster-order": ["raster order"],
    "receptive-field": ["receptive fields", "receptive field"],
    "residual-connection": ["residual connections", "residual connection"],
    "softmax": ["softmax"],
    "translation-equivariance": ["translation equivariance", "translation-equivariant"],
    "warm-up": ["warm-up"],
    "dropout": ["dropout"],
    "attention": ["attention"],
    "patch": ["patches", "patch"],
    "token": ["tokens", "token"],
}
PROTECT = re.compile(
    r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\{\{.*?\}\}|\{%.*?%\}|\[[^\]]*\]\([^)]*\)|<[^>]+>"
)
# headings, tables, code, macros, admonition titles, snippets, exercise titles and quiz options
SKIP_LINE = re.compile(r"^\s*(#|\||```|\{\{|\{%|!!!|\?\?\?|--8<--|<|\d+\. \*\*|- \[[ x=]\] )")


def link(text: str) -> tuple[str, list[str]]:
    lines = text.split("\n")
    done = set(re.findall(r'term\("[^"]*", "([a-z0-9-]+)"\)', text))
    in_code = in_front = in_math = False
    added = []
    for n, line in enumerate(lines):
        if n == 0 and line == "---":
            in_front = True
            continue
        if in_front:
            in_front = line != "---"
            continue
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if "{% filter equation" in line:
            in_math = True
        if in_math:
            in_math = "{% endfilter %}" not in line
            continue
        if in_code or SKIP_LINE.match(line) or line.strip().startswith("$$"):
            continue
        for slug, forms in TERMS.items():
            if slug in done:
                continue
            mask = [False] * len(line)
            for m in PROTECT.finditer(line):
                for i in range(m.start(), m.end()):
                    mask[i] = True
            for form in forms:
                pat = re.compile(r"(?<![\w-])" + re.escape(form) + r"(?![\w-])", re.I)
                hit = next(
                    (m for m in pat.finditer(line) if not any(mask[m.start() : m.end()])), None
                )
                if hit:
                    word = hit.group(0)
                    macro = '{{ term("' + word + '", "' + slug + '") }}'
                    line = line[: hit.start()] + macro + line[hit.end() :]
                    done.add(slug)
                    added.append(f"{slug}: {word}")
                    break
        lines[n] = line
    return "\n".join(lines), added


def test_every_term_has_a_glossary_entry() -> None:
    ids = set(re.findall(r"\{\s*#([a-z0-9-]+)\s*\}", (DOCS / "glossary.md").read_text()))
    assert set(TERMS) <= ids, sorted(set(TERMS) - ids)


def test_link_finds_a_first_use() -> None:
    text = "A patch becomes a token.\n\nThe token and the `patch` again."
    new, added = link(text)
    assert added == ["patch: patch", "token: token"]
    assert new.count("{{ term(") == 2 and link(new)[1] == []


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.name)
def test_chapter_links_the_first_use_of_its_terms(page: Path) -> None:
    _, missing = link(page.read_text())
    assert not missing, f"{page.name}: link the first use of {missing} with term()"
