// Keyboard access to what scrolls: a wide table, listing, formula or notebook cell that
// overflows its column gets tabindex="0", so it can be focused and scrolled with the arrow
// keys (WCAG 2.1.1). Checked again when the window changes size. All sizes are read before
// any attribute is written, so the page is laid out once, not once per element.
(() => {
  const SCROLLERS = [
    ".md-typeset__scrollwrap", ".md-typeset table", ".md-typeset pre > code", ".vb-eq-body",
    ".md-typeset div.arithmatex",
    ".highlight-ipynb", ".jp-OutputArea-output", ".jp-OutputArea-output pre",
  ].join(", ");
  const mark = () => {
    const found = [];
    for (const el of document.querySelectorAll(SCROLLERS)) {
      if (el.hasAttribute("tabindex")) continue;
      if (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1) {
        const style = getComputedStyle(el);
        if (/(auto|scroll)/.test(style.overflowX + style.overflowY)) found.push(el);
      }
    }
    for (const el of found) el.setAttribute("tabindex", "0");
    // names for Material's widgets that have none: the progress bar and the search dialog
    const bar = document.querySelector(".md-progress:not([aria-label])");
    if (bar) bar.setAttribute("aria-label", "Loading the page");
    const search = document.querySelector('.md-search[role="dialog"]:not([aria-label])');
    if (search) search.setAttribute("aria-label", "Search");
  };
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(mark, 200);
  });
  if (window.document$) document$.subscribe(() => requestAnimationFrame(mark));
  else window.addEventListener("load", mark);
})();

// Figures: each comes in a light and a dark variant; the one the current theme hides keeps its
// file names in data-vb-src/data-vb-srcset, so it is downloaded only when the reader switches.
// Every <source> of the picture is filled in, the phone variant's (media query) included.
(() => {
  const fill = () => {
    const scheme = document.body.getAttribute("data-md-color-scheme");
    const theme = scheme === "slate" ? "vb-dark" : "vb-light";
    for (const pic of document.querySelectorAll(`picture.${theme}`)) {
      for (const el of pic.querySelectorAll("[data-vb-srcset]")) {
        el.setAttribute("srcset", el.getAttribute("data-vb-srcset"));
        el.removeAttribute("data-vb-srcset");
      }
      for (const el of pic.querySelectorAll("[data-vb-src]")) {
        el.setAttribute("src", el.getAttribute("data-vb-src"));
        el.removeAttribute("data-vb-src");
      }
    }
  };
  new MutationObserver(fill).observe(document.body, {
    attributes: true, attributeFilter: ["data-md-color-scheme"],
  });
  if (window.document$) document$.subscribe(fill);
  else window.addEventListener("DOMContentLoaded", fill);
})();
