// MathJax 3, served from this site (installed from npm, copied in at build time).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "none",
  },
  options: {
    // typeset the book's math and the notebooks' markdown, never the chrome around them
    ignoreHtmlClass: "md-header|md-sidebar|md-footer|md-search|md-nav|tex2jax_ignore",
    processHtmlClass: "arithmatex|jp-MarkdownOutput|jp-RenderedMarkdown",
  },
  loader: { load: [] },
  startup: { typeset: false },
};

// Material's instant navigation swaps pages without reloading: typeset each new page.
document$.subscribe(() => {
  const typeset = () => {
    MathJax.startup.output.clearCache();
    MathJax.typesetClear();
    MathJax.texReset();
    return MathJax.typesetPromise();
  };
  if (window.MathJax && MathJax.typesetPromise) {
    typeset();
  } else {
    window.addEventListener("load", () => MathJax.startup.promise.then(typeset));
  }
});
