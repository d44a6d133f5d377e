// eslint for the book's own JavaScript (the explorers, the reader, the quiz): the recommended
// rules, in the browser, as ES modules. Run by `nox -s lint`.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["docs/javascripts/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, MathJax: "readonly", document$: "readonly" },
    },
  },
  {
    // classic scripts loaded by Material's extra_javascript (not modules)
    files: ["docs/javascripts/mathjax.js", "docs/javascripts/reader.js", "docs/javascripts/print.js"],
    languageOptions: { sourceType: "script" },
  },
];
