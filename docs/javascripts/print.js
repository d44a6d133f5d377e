// Printing a page of the book (the browser's own Print, and `nox -s pdf`, which calls the
// same function): every figure loaded, the light palette, and the quiz answers and exercise
// solutions moved out of the text into an appendix at the end of the page, so that a printed
// chapter reads as questions first, answers after. Screen reading is untouched: everything is
// put back after printing. See docs/stylesheets/print.css for the layout rules.
(function () {
  "use strict";

  // Lazy images that were never scrolled into view print as blank boxes: load them all.
  function loadAllImages(root) {
    for (const img of root.querySelectorAll('img[loading="lazy"]')) img.loading = "eager";
  }

  function label(summary, fallback) {
    const m = (summary ? summary.textContent : "").trim().match(/^(\d+)[.)]/);
    return m ? m[1] : String(fallback);
  }

  // Move the body of each collapsed block matching `selector` into `section`, leaving the
  // question (its summary) in place with a link to its answer; returns the undo steps.
  function moveBodies(root, selector, section, name, prefix, undo) {
    let k = 0;
    for (const details of root.querySelectorAll(selector)) {
      if (section.contains(details)) continue;
      k += 1;
      const summary = details.querySelector(":scope > summary");
      // a solution placed in item n of a numbered list is the solution of exercise n
      const li = details.closest("li");
      const list = li && li.parentElement;
      const n = list && list.tagName === "OL" ? String([...list.children].indexOf(li) + 1)
        : label(summary, k);
      const id = `${prefix}-${n}`;
      const item = document.createElement("div");
      item.className = "vb-print-answer";
      item.id = id;
      const head = document.createElement("p");
      head.className = "vb-print-answer__label";
      head.textContent = `${name} ${n}.`;
      item.appendChild(head);
      const moved = [...details.childNodes].filter((node) => node !== summary);
      for (const node of moved) item.appendChild(node);
      section.appendChild(item);
      const note = document.createElement("a");
      note.className = "vb-print-see";
      note.href = `#${id}`;
      note.textContent = `In the appendix: ${name.toLowerCase()} ${n}.`;
      details.appendChild(note);
      details.classList.add("vb-print-moved");
      undo.push(() => {
        for (const node of moved) details.appendChild(node);
        note.remove();
        details.classList.remove("vb-print-moved");
      });
    }
    return k;
  }

  // Prepare `root` (a page's article) for print. Options: answers "appendix" (default) or
  // "inline" (answers opened where they are), idPrefix (unique ids when several pages are
  // printed together). Returns a function that undoes the change.
  function prepare(root, options) {
    const opts = Object.assign({ answers: "appendix", idPrefix: "vb" }, options || {});
    root = root || document.querySelector(".md-content__inner") || document.body;
    const undo = [];
    loadAllImages(root);
    const body = document.body;
    const scheme = body.getAttribute("data-md-color-scheme");
    if (scheme && scheme !== "default") {
      body.setAttribute("data-md-color-scheme", "default");
      undo.push(() => body.setAttribute("data-md-color-scheme", scheme));
    }
    const quiz = 'details.question';
    const solution = 'details.success';
    if (opts.answers === "inline") {
      for (const d of root.querySelectorAll(`${quiz}, ${solution}`)) {
        if (!d.open) {
          d.open = true;
          undo.push(() => { d.open = false; });
        }
      }
      return () => undo.reverse().forEach((f) => f());
    }
    const section = document.createElement("section");
    section.className = "vb-print-appendix";
    const h = document.createElement("h2");
    h.textContent = "Answers and solutions";
    section.appendChild(h);
    const quizPart = document.createElement("div");
    const solPart = document.createElement("div");
    const nq = moveBodies(root, quiz, quizPart, "Question", `${opts.idPrefix}-answer`, undo);
    const ns = moveBodies(root, solution, solPart, "Exercise", `${opts.idPrefix}-solution`, undo);
    if (nq + ns > 0) {
      if (nq) {
        const t = document.createElement("h3");
        t.textContent = "Check yourself";
        section.appendChild(t);
        section.appendChild(quizPart);
      }
      if (ns) {
        const t = document.createElement("h3");
        t.textContent = "Exercises";
        section.appendChild(t);
        section.appendChild(solPart);
      }
      root.appendChild(section);
      undo.push(() => section.remove());
    }
    return () => undo.reverse().forEach((f) => f());
  }

  let restore = null;
  function before() {
    if (!restore && !document.documentElement.classList.contains("vb-pdf")) restore = prepare();
  }
  function after() {
    if (restore) restore();
    restore = null;
  }
  window.addEventListener("beforeprint", before);
  window.addEventListener("afterprint", after);
  window.vbPrint = { prepare, loadAllImages };
})();
