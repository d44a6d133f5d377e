// Math is typeset at build time (vitbook/site/math.py): chapter pages need no runtime.
// Only a page with math left as TeX (the notebooks' Markdown cells, e.g. "$W_Q$") loads
// MathJax 3, served from this site, and typesets it; the other pages load nothing more.
(() => {
  const here = document.currentScript ? document.currentScript.src : location.href;
  const runtime = new URL("../assets/mathjax/tex-mml-chtml.js", here).href;
  const SELECTOR = ".jp-MarkdownOutput, .jp-RenderedMarkdown";
  const needsMath = () =>
    [...document.querySelectorAll(SELECTOR)].some((e) => /\$|\\\(|\\\[/.test(e.textContent));

  window.MathJax = {
    tex: {
      inlineMath: [["\\(", "\\)"], ["$", "$"]],
      displayMath: [["\\[", "\\]"], ["$$", "$$"]],
      processEscapes: true,
      processEnvironments: true,
      tags: "none",
    },
    options: {
      ignoreHtmlClass: "md-header|md-sidebar|md-footer|md-search|md-nav|tex2jax_ignore",
      processHtmlClass: "jp-MarkdownOutput|jp-RenderedMarkdown",
    },
    loader: { load: [] },
    startup: { typeset: false },
  };

  let loading = null;
  const load = () => {
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = runtime;
        s.async = true;
        s.onload = () => MathJax.startup.promise.then(resolve);
        s.onerror = reject;
        document.head.appendChild(s);
      });
    }
    return loading;
  };

  const typeset = () => {
    if (!needsMath()) return;
    load().then(() => {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      return MathJax.typesetPromise([...document.querySelectorAll(SELECTOR)]);
    });
  };
  // Material's instant navigation swaps pages without reloading: check each new page.
  if (window.document$) document$.subscribe(typeset);
  else window.addEventListener("DOMContentLoaded", typeset);
})();
