// Keyboard access to what scrolls: a wide table, listing, formula or notebook cell that
// overflows its column gets tabindex="0", so it can be focused and scrolled with the arrow
// keys (WCAG 2.1.1). Checked again when the window changes size.
(() => {
  const SCROLLERS = [
    ".md-typeset__scrollwrap", ".md-typeset pre > code", ".vb-eq-body",
    ".highlight-ipynb", ".jp-OutputArea-output", ".jp-OutputArea-output pre",
  ].join(", ");
  const mark = () => {
    for (const el of document.querySelectorAll(SCROLLERS)) {
      const scrolls = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
      const style = getComputedStyle(el);
      const can = /(auto|scroll)/.test(style.overflowX + style.overflowY + style.overflow);
      if (scrolls && can && !el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
    }
    const bar = document.querySelector(".md-progress");
    if (bar && !bar.hasAttribute("aria-label")) bar.setAttribute("aria-label", "Loading the page");
  };
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(mark, 200);
  });
  if (window.document$) document$.subscribe(() => requestAnimationFrame(mark));
  else window.addEventListener("load", mark);
})();
