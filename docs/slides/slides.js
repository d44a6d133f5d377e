/* Starts reveal.js on a chapter's slide deck (the decks are written by vitbook/site/slides.py).
   In reveal.js's print view (?print-pdf, how the build prints a deck's PDF) a link to the
   book points at the published copy, since a PDF has no site beside it. */
(() => {
  if (/print-pdf/.test(window.location.search)) {
    for (const a of document.querySelectorAll("a[data-print-href]")) {
      if (a.dataset.printHref) a.href = a.dataset.printHref;
    }
  }
  window.Reveal.initialize({
    width: 1280,
    height: 720,
    margin: 0.04,
    center: false,
    hash: true,
    slideNumber: "c/t",
    transition: "none",
    pdfSeparateFragments: false,
    pdfMaxPagesPerSlide: 1,
    plugins: [window.RevealNotes],
  });
})();
