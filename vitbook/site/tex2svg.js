// Typeset TeX to SVG with MathJax's Node package (mathjax-full, pinned in package.json).
// Started once per build by vitbook/site/math.py; reads one JSON request per line on stdin,
// {"tex": "...", "display": true}, and answers one JSON line per request:
// {"svg": "<mjx-container ...>"} or {"error": "..."}. The output carries the formula as
// MathML for screen readers (assistive MathML) and draws glyphs as paths (no font files).
"use strict";
const readline = require("readline");
const { mathjax } = require("mathjax-full/js/mathjax.js");
const { TeX } = require("mathjax-full/js/input/tex.js");
const { SVG } = require("mathjax-full/js/output/svg.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { AssistiveMmlHandler } = require("mathjax-full/js/a11y/assistive-mml.js");
const { AllPackages } = require("mathjax-full/js/input/tex/AllPackages.js");

const adaptor = liteAdaptor();
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));
const tex = new TeX({
  packages: AllPackages.filter((p) => p !== "bussproofs" && p !== "noerrors" && p !== "noundefined"),
  formatError: (jax, err) => {
    throw err;
  },
});
const svg = new SVG({ fontCache: "none" });
const doc = mathjax.document("", { InputJax: tex, OutputJax: svg });

if (process.argv[2] === "--css") {
  process.stdout.write(adaptor.textContent(svg.styleSheet(doc)) + "\n");
  process.exit(0);
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  let answer;
  try {
    const req = JSON.parse(line);
    const node = doc.convert(req.tex, { display: !!req.display, em: 16, ex: 8, containerWidth: 1280 });
    answer = { svg: adaptor.outerHTML(node) };
  } catch (err) {
    answer = { error: String(err && err.message ? err.message : err) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
