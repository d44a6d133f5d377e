"""The printed edition: the built site printed to PDF by Chromium, through Playwright.

``python -m vitbook.site.pdf site`` (``nox -s pdf``) writes into ``site/pdf/``:

* ``vitbook.pdf``: a cover (title, version, date), a table of contents with page numbers, the
  numbered chapters, an appendix with the answers to the quizzes and the exercise solutions,
  and the back matter (notation, glossary, references, licence);
* ``chNN-<slug>.pdf``: one chapter with its own answers appendix;
* ``manifest.json``: pages, bytes and figures of each PDF (read by ``tests/test_pdf.py``).

Nothing is hand-rendered: the pages are the site's own HTML with ``docs/stylesheets/print.css``
and ``docs/javascripts/print.js`` (the same rules the browser's Print uses), put together in one
page of the served site so that cross-references become links inside the PDF. Math is typeset by
the site's MathJax when the page has it (and left alone when it was typeset at build time).

Reproducible: no network (the site is served from 127.0.0.1 and any other request is refused),
the date is the last commit's (or ``SOURCE_DATE_EPOCH``), and the PDF is rewritten by pypdf with
fixed metadata and a file identifier computed from its content, so two builds give the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import io
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from vitbook.site.config import ROOT, book_date, mkdocs_config
from vitbook.site.local import chromium, serve

BACK_MATTER = ["notation.md", "glossary.md", "references.md", "license.md"]
CHAPTER_RE = re.compile(r"^(\d\d)-([a-z0-9-]+)\.md$")


class PdfError(RuntimeError):
    """The PDF could not be made as promised (a figure missing, math not typeset...)."""


# --- configuration ---------------------------------------------------------------------------


def nav_titles(nav: Any) -> dict[str, str]:
    """``source file -> title`` for every page of the nav."""
    found: dict[str, str] = {}

    def walk(items: Any) -> None:
        for item in items or []:
            if isinstance(item, dict):
                for title, value in item.items():
                    if isinstance(value, list):
                        walk(value)
                    elif isinstance(value, str):
                        found[value] = title

    walk(nav)
    return found


def chapters(root: Path = ROOT) -> list[dict[str, Any]]:
    """The chapters in nav order: number, slug, source, page url, title and PDF name."""
    out = []
    for src, title in nav_titles(mkdocs_config(root).get("nav")).items():
        m = CHAPTER_RE.match(src)
        if m:
            n = int(m.group(1))
            out.append(
                {
                    "n": n,
                    "src": src,
                    "url": src.removesuffix(".md") + "/",
                    "title": re.sub(r"^\d+\.\s*", "", title),
                    "pdf": pdf_name(src),
                }
            )
    return sorted(out, key=lambda c: c["n"])


def pdf_name(src: str) -> str:
    """``02-patches.md`` -> ``ch02-patches.pdf`` (the name the cite boxes link to)."""
    m = CHAPTER_RE.match(Path(src).name)
    if not m:
        raise ValueError(f"{src} is not a chapter")
    return f"ch{m.group(1)}-{m.group(2)}.pdf"


# --- the page that is printed ----------------------------------------------------------------

# Runs in the browser, on the site's own landing page (so the site's CSS and MathJax are
# loaded): replaces its article by the cover, the contents and the listed pages, each fetched
# from the site, with ids made unique per page and links between listed pages made internal.
ASSEMBLE_JS = r"""
async ({parts, cover, toc, siteUrl, appendixTitle}) => {
  document.documentElement.classList.add("vb-pdf");
  document.body.setAttribute("data-md-color-scheme", "default");
  const article = document.querySelector(".md-content__inner");
  article.innerHTML = "";
  const origin = location.origin;
  const listed = new Map(parts.map((p) => [new URL(p.url, location.href).pathname, p]));
  const fixId = (p, id) => `${p.prefix}--${id}`;
  const resolve = (value, base) => new URL(value, base);
  if (cover) article.insertAdjacentHTML("beforeend", cover);
  if (toc) article.insertAdjacentHTML("beforeend", toc);
  const problems = [];
  const appendices = [];
  for (const p of parts) {
    const base = new URL(p.url, location.href);
    const text = await (await fetch(base)).text();
    const doc = new DOMParser().parseFromString(text, "text/html");
    const src = doc.querySelector(".md-content__inner");
    if (!src) { problems.push(`${p.url}: no article`); continue; }
    for (const el of src.querySelectorAll(
      ".md-content__button, .headerlink, .md-source-file, .vb-download, script")) el.remove();
    // printed numbers: plain text (on the site each links to its provenance)
    for (const a of src.querySelectorAll("a.vb-num, .vb-num-plain")) a.replaceWith(a.textContent);
    // figures: the light variant, as vector where the SVG exists; never lazy
    for (const img of src.querySelectorAll("img")) {
      if (img.classList.contains("vb-dark")) {
        const link = img.closest("a.glightbox");
        (link || img).remove();
        continue;
      }
      const url = resolve(img.getAttribute("src"), base);
      if (img.classList.contains("vb-light") && p.svg && url.pathname.endsWith(".png")) {
        url.pathname = url.pathname.replace(/\.png$/, ".svg");
      }
      img.setAttribute("src", url.pathname);
      img.removeAttribute("loading");
    }
    for (const el of src.querySelectorAll("[id]")) el.id = fixId(p, el.id);
    for (const el of src.querySelectorAll("label[for]")) el.htmlFor = fixId(p, el.htmlFor);
    for (const a of src.querySelectorAll("a[href]")) {
      const href = a.getAttribute("href");
      if (href.startsWith("#")) { a.setAttribute("href", "#" + fixId(p, href.slice(1))); continue; }
      let url;
      try { url = resolve(href, base); } catch (e) { continue; }
      if (url.origin !== origin) continue;
      const target = listed.get(url.pathname);
      if (target) {
        const frag = decodeURIComponent(url.hash.slice(1));
        a.setAttribute("href", "#" + (frag ? fixId(target, frag) : target.prefix));
      } else {
        a.setAttribute("href", siteUrl + url.pathname.replace(/^\//, "") + url.hash);
      }
    }
    const section = document.createElement("section");
    section.className = "vb-pdf-page-section" + (p.back ? " vb-pdf-back" : "");
    section.id = p.prefix;
    if (p.head) section.insertAdjacentHTML("beforeend", p.head);
    while (src.firstChild) section.appendChild(src.firstChild);
    article.appendChild(section);
    window.vbPrint.prepare(section, {answers: p.answers, idPrefix: p.prefix});
    const app = section.querySelector(":scope > .vb-print-appendix");
    if (app && p.collectAppendix) {
      const h = app.querySelector("h2");
      h.outerHTML = `<h2 id="${p.prefix}--answers">${p.appendixHeading}</h2>`;
      app.remove();
      appendices.push(app);
    }
  }
  if (appendices.length) {
    const back = document.createElement("section");
    back.className = "vb-pdf-page-section md-typeset";
    back.id = "appendix-answers";
    back.innerHTML = `<h1>${appendixTitle}</h1>`;
    for (const app of appendices) {
      app.className = "vb-pdf-appendix-chapter";
      back.appendChild(app);
    }
    const firstBack = article.querySelector("section.vb-pdf-back");
    article.insertBefore(back, firstBack);
  }
  // math: typeset by the site's MathJax if the page has it
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    MathJax.typesetClear();
    await MathJax.typesetPromise([article]);
  }
  const imgs = [...article.querySelectorAll("img")];
  await Promise.all(imgs.map((img) => img.decode().catch(() => null)));
  for (const img of imgs) {
    if (!img.complete || img.naturalWidth === 0) problems.push(`image not loaded: ${img.src}`);
  }
  await document.fonts.ready;
  const figures = [...article.querySelectorAll("figure.vb-figure")].map((f) => ({
    id: f.id,
    caption: (f.querySelector("figcaption") || {}).textContent || "",
    images: f.querySelectorAll("img").length,
  }));
  const rawTex = [...article.querySelectorAll(".arithmatex")]
    .filter((el) => !el.querySelector("mjx-container, svg, .katex"))
    .filter((el) => /\\[()\[\]]/.test(el.textContent))
    .map((el) => el.textContent.slice(0, 60));
  return {problems, figures, rawTex, images: imgs.length};
}
"""

FILL_TOC_JS = r"""
(pages) => {
  for (const [id, page] of Object.entries(pages)) {
    const el = document.querySelector(`.vb-pdf-toc [data-target="${id}"] .vb-pdf-page`);
    if (el) el.textContent = String(page);
  }
}
"""


def esc(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def copy_label(ed: Any) -> str:
    """How the printed edition names its copy: "Edition 0.2.0" or "Latest text, not an
    edition", with the commit it was built from."""
    what = f"Edition {ed.edition}" if ed.edition else "Latest text, not an edition"
    return what + (f" &middot; commit {esc(ed.short)}" if ed.short else "")


def cover_html(conf: dict[str, Any], date: dt.date) -> str:
    from vitbook.site import editions

    extra = conf.get("extra", {})
    ed = editions.current(ROOT, conf)
    return (
        '<section class="vb-pdf-cover md-typeset" id="cover">'
        f"<h1>{esc(conf.get('site_name', 'vitbook'))}</h1>"
        f'<p class="vb-pdf-sub">{esc(conf.get("site_description", ""))}</p>'
        f'<p class="vb-pdf-meta">{esc(extra.get("authors", ""))}</p>'
        f'<p class="vb-pdf-meta">{copy_label(ed)}'
        f" &middot; {date.isoformat()}</p>"
        f'<p class="vb-pdf-meta"><a href="{esc(ed.url)}">{esc(ed.url)}</a></p>'
        f'<p class="vb-pdf-meta">{esc(conf.get("copyright", ""))}</p>'
        "</section>"
    )


def toc_html(entries: list[tuple[str, str, bool]]) -> str:
    """``(target id, title, is a part heading)``; page numbers filled in after a first print."""
    items = []
    for target, title, part in entries:
        cls = ' class="vb-pdf-toc__part"' if part else ""
        items.append(
            f'<li{cls} data-target="{target}"><a href="#{target}">{esc(title)}</a>'
            f'<span class="vb-pdf-page">000</span></li>'
        )
    return (
        '<section class="vb-pdf-toc md-typeset" id="contents"><h1>Contents</h1><ol>'
        + "".join(items)
        + "</ol></section>"
    )


FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555;'
    'font-family:sans-serif"><span class="pageNumber"></span></div>'
)
HEADER = (
    '<div style="font-size:7px;width:100%;text-align:right;color:#777;margin-right:16mm;'
    'font-family:sans-serif">{title}</div>'
)


def page_numbers(pdf: bytes, ids: list[str]) -> dict[str, int]:
    """The 1-based page of each named destination (Chromium writes one per link target)."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # Chromium's trailer /Size is one short
    reader = PdfReader(io.BytesIO(pdf))
    dests = reader.named_destinations
    found = {}
    for name, dest in dests.items():
        key = str(name).lstrip("/")
        if key in ids:
            found[key] = reader.get_destination_page_number(dest) + 1
    return found


def normalise(
    pdf: bytes, meta: dict[str, str], bookmarks: list[tuple[str, int]] | None = None
) -> bytes:
    """Rewrite ``pdf`` with fixed metadata, bookmarks ``(title, 1-based page)`` and a
    content-derived /ID: reproducible bytes."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, ByteStringObject, NameObject, TextStringObject

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(pdf))
    writer = PdfWriter(clone_from=reader)
    info = {NameObject(k): TextStringObject(v) for k, v in meta.items()}
    writer._info = writer._add_object(  # noqa: SLF001 - replace, not merge, Chromium's dates
        __import__("pypdf").generic.DictionaryObject(info)
    )
    for title, page_no in bookmarks or []:
        writer.add_outline_item(title=title, page_number=page_no - 1)
    digest = hashlib.md5(pdf, usedforsecurity=False).digest()  # noqa: S324 - an identifier
    writer._ID = ArrayObject([ByteStringObject(digest), ByteStringObject(digest)])  # noqa: SLF001
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def strip_volatile(pdf: bytes) -> bytes:
    """Chromium's own dates and id, blanked, so that the content hash is the same each time."""

    def blank(m: re.Match[bytes]) -> bytes:  # the same length: the xref offsets stay valid
        return m.group(1) + re.sub(rb"[0-9]", b"0", m.group(2))

    return re.sub(rb"(/(?:CreationDate|ModDate) ?\()(D:[^)]*)", blank, pdf)


def render(page: Any, title: str) -> bytes:
    return page.pdf(
        format="A4",
        print_background=True,
        display_header_footer=True,
        header_template=HEADER.format(title=esc(title)),
        footer_template=FOOTER,
        margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
        # bookmarks from the headings; no tagged structure: its node ids vary from run to run
        outline=True,
        tagged=False,
    )


def build_pdf(
    browser: Any,
    base: str,
    conf: dict[str, Any],
    parts: list[dict[str, Any]],
    *,
    title: str,
    cover: str = "",
    toc: list[tuple[str, str, bool]] | None = None,
    appendix_title: str = "",
) -> tuple[bytes, dict[str, Any]]:
    """Print ``parts`` (pages of the site) as one PDF; returns its bytes and a summary."""
    context = browser.new_context(viewport={"width": 1000, "height": 1400}, color_scheme="light")
    # offline: nothing but the local server may be asked for anything
    context.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(base) else route.abort(),
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(base, wait_until="load")
    page.wait_for_function("window.vbPrint !== undefined", timeout=30_000)
    page.emulate_media(media="print", color_scheme="light")
    site_url = (conf.get("site_url") or "").rstrip("/") + "/"
    result = page.evaluate(
        ASSEMBLE_JS,
        {
            "parts": parts,
            "cover": cover,
            "toc": toc_html(toc) if toc else "",
            "siteUrl": site_url,
            "appendixTitle": appendix_title,
        },
    )
    if result["problems"]:
        raise PdfError(f"{title}: " + "; ".join(result["problems"][:10]))
    if result["rawTex"]:
        raise PdfError(f"{title}: math left untypeset: {result['rawTex'][:5]}")
    pdf = render(page, title)
    if toc:
        numbers = page_numbers(pdf, [t for t, _, _ in toc])
        missing = [t for t, _, _ in toc if t not in numbers]
        if missing:
            raise PdfError(f"{title}: no page found for {missing}")
        page.evaluate(FILL_TOC_JS, numbers)
        pdf = render(page, title)
        again = page_numbers(pdf, list(numbers))
        if again != numbers:
            raise PdfError(f"{title}: the contents moved pages when numbered: {again}")
        result["toc"] = numbers
    context.close()
    if errors:
        print(f"  (page errors while printing {title}: {errors[:3]})", file=sys.stderr)
    return pdf, result


def build(
    site: Path,
    out: Path | None = None,
    *,
    only: list[int] | None = None,
    book: bool | None = None,
    browser: Any = None,
) -> dict:
    """Write the book PDF and the chapter PDFs of the built ``site`` into ``site/pdf``.

    ``only``: print only these chapters' PDFs; ``book``: print the whole book too (by default
    when ``only`` is not given); ``browser``: a Playwright Chromium to print with (by default one
    is launched and closed here)."""
    with_book = only is None if book is None else book
    site = Path(site)
    if not (site / "index.html").is_file():
        raise PdfError(f"{site} holds no built site: run `mkdocs build` first")
    out = Path(out or site / "pdf")
    out.mkdir(parents=True, exist_ok=True)
    from vitbook.site import editions

    conf = mkdocs_config()
    extra = conf.get("extra", {})
    ed = editions.current(ROOT, conf)
    # links to pages left out go to this copy's address (the root is kept for editions.current)
    conf = dict(conf, site_url=ed.url, extra={**extra, "site_root": ed.site_url})
    version = ed.edition or ed.version
    date = ed.date if ed.edition else book_date()
    book_title = conf.get("site_name", "vitbook")
    titles = nav_titles(conf.get("nav"))
    chaps = chapters()
    printed = [c for c in chaps if only is None or c["n"] in only]
    stamp = "D:" + date.strftime("%Y%m%d") + "000000Z"
    base_meta = {
        "/Author": str(extra.get("authors", "")),
        "/Creator": f"vitbook {version} (vitbook.site.pdf, Chromium via Playwright)",
        "/Producer": "vitbook.site.pdf with pypdf",
        "/CreationDate": stamp,
        "/ModDate": stamp,
        "/Keywords": "vision transformer, ViT, textbook",
    }

    def chapter_part(c: dict[str, Any], *, collect: bool, head: str = "") -> dict[str, Any]:
        return {
            "url": c["url"],
            "prefix": f"ch{c['n']:02d}",
            "svg": True,
            "answers": "appendix",
            "collectAppendix": collect,
            "appendixHeading": f"Chapter {c['n']}. {esc(c['title'])}",
            "head": head,
        }

    manifest: dict[str, Any] = {"version": version, "date": date.isoformat(), "pdfs": {}}
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(serve(site))
        if browser is None:
            try:
                browser = stack.enter_context(chromium())
            except FileNotFoundError as exc:
                raise PdfError(str(exc)) from exc
        # one PDF per chapter
        for c in printed:
            t0 = time.perf_counter()
            head = (
                f'<p class="vb-pdf-chapter-head">{esc(book_title)} &middot; '
                f"{copy_label(ed)}"
                f" &middot; {date.isoformat()} &middot; "
                f'<a href="{esc(ed.url)}{c["url"]}">'
                f"{esc(ed.url)}{c['url']}</a></p>"
            )
            pdf, info = build_pdf(
                browser,
                base,
                conf,
                [chapter_part(c, collect=False, head=head)],
                title=f"{book_title}, Chapter {c['n']}",
            )
            meta = dict(base_meta, **{"/Title": f"Chapter {c['n']}: {c['title']}"})
            meta["/Subject"] = f"{book_title}, version {version}"
            record(manifest, out, c["pdf"], normalise(strip_volatile(pdf), meta), info)
            print(
                f"  {c['pdf']}: {manifest['pdfs'][c['pdf']]['pages']} pages, "
                f"{time.perf_counter() - t0:.1f} s"
            )
        if with_book:
            t0 = time.perf_counter()
            parts = [chapter_part(c, collect=True) for c in chaps]
            back = []
            for src in BACK_MATTER:
                back.append(
                    {
                        "url": src.removesuffix(".md") + "/",
                        "prefix": "bm-" + src.removesuffix(".md"),
                        "svg": True,
                        "answers": "inline",
                        "collectAppendix": False,
                        "back": True,
                        "head": "",
                    }
                )
            toc = [("contents", "Contents", False)]
            toc += [(f"ch{c['n']:02d}", f"{c['n']}. {c['title']}", False) for c in chaps]
            toc += [("appendix-answers", "Appendix: answers and solutions", True)]
            toc += [
                (b["prefix"], titles.get(s, s), True)
                for b, s in zip(back, BACK_MATTER, strict=True)
            ]
            pdf, info = build_pdf(
                browser,
                base,
                conf,
                parts + back,
                title=book_title,
                cover=cover_html(conf, date),
                toc=toc,
                appendix_title="Appendix: answers and solutions",
            )
            # the back matter starts after the appendix: mark its sections
            meta = dict(base_meta, **{"/Title": book_title, "/Subject": f"Version {version}"})
            marks = [(title, info["toc"][target]) for target, title, _ in toc]
            pdf = normalise(strip_volatile(pdf), meta, marks)
            record(manifest, out, "vitbook.pdf", pdf, info)
            print(
                f"  vitbook.pdf: {manifest['pdfs']['vitbook.pdf']['pages']} pages, "
                f"{time.perf_counter() - t0:.1f} s"
            )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def record(manifest: dict, out: Path, name: str, pdf: bytes, info: dict[str, Any]) -> None:
    from pypdf import PdfReader

    (out / name).write_bytes(pdf)
    manifest["pdfs"][name] = {
        "pages": len(PdfReader(io.BytesIO(pdf)).pages),
        "bytes": len(pdf),
        "sha256": hashlib.sha256(pdf).hexdigest(),
        "images": info["images"],
        "figures": info["figures"],
        "toc": info.get("toc", {}),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vitbook.site.pdf", description=__doc__)
    ap.add_argument("site", nargs="?", default="site", help="the built site (default: site)")
    ap.add_argument("--out", help="where the PDFs go (default: SITE/pdf)")
    ap.add_argument("--chapter", type=int, action="append", help="only this chapter's PDF")
    args = ap.parse_args(argv)
    try:
        manifest = build(Path(args.site), Path(args.out) if args.out else None, only=args.chapter)
    except PdfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    total = sum(p["bytes"] for p in manifest["pdfs"].values())
    print(f"{len(manifest['pdfs'])} PDFs, {total / 1e6:.1f} MB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
