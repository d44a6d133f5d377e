// Graded "Check yourself" quizzes. A question is a collapsible `??? question "..."` block
// whose body starts with a list of options, the correct one marked [x] (or one [=] item:
// the number a reader types), followed by the explanation:
//
//     ??? question "1. Which ...?"
//         - [ ] an option
//         - [x] the right one
//
//         The explanation ...
//
// Without JavaScript (and in print) the block reads as before, with the answer marked.
// With it, the block opens on the options, the reader answers, and the feedback and the
// explanation appear; answers are kept in localStorage per page, and a button resets them.
const MARK = /^\s*\[( |x|X|=)\]\s*/;
const KEY = "vitbook.quiz.v1:";

function storeKey() {
  return KEY + location.pathname.replace(/index\.html$/, "");
}

function load() {
  try {
    return JSON.parse(localStorage.getItem(storeKey()) || "{}");
  } catch {
    return {};
  }
}

function save(state) {
  try {
    localStorage.setItem(storeKey(), JSON.stringify(state));
  } catch {
    /* private mode: answers are simply not kept */
  }
}

/** The options list of a question block, or null: [{text, html, correct, typed}]. */
export function parseOptions(details) {
  const list = [...details.children].find((el) => el.tagName === "UL");
  if (!list) return null;
  const items = [...list.children].filter((li) => li.tagName === "LI");
  if (!items.length || !items.every((li) => MARK.test(li.textContent))) return null;
  return {
    list,
    options: items.map((li) => {
      const mark = li.textContent.match(MARK)[1];
      const html = li.innerHTML.replace(/^\s*\[( |x|X|=)\]\s*/, "");
      return { html, text: li.textContent.replace(MARK, "").trim(), correct: mark !== " ", typed: mark === "=" };
    }),
  };
}

/** A typed number is right within the tolerance written after "±", else within 1%. */
export function typedRight(answer, spec) {
  const [value, tol] = spec.split("±").map((s) => Number(s.replace(/[^0-9.eE+-]/g, "")));
  const x = Number(String(answer).replace(/[^0-9.eE+-]/g, ""));
  if (!Number.isFinite(x) || String(answer).trim() === "") return false;
  const t = Number.isFinite(tol) && spec.includes("±") ? tol : Math.abs(value) / 100;
  return Math.abs(x - value) <= t;
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "html") e.innerHTML = v;
    else e.setAttribute(k, v);
  }
  e.append(...kids);
  return e;
}

function setup() {
  const blocks = [...document.querySelectorAll("article details.question")];
  const quizzes = blocks.map((d) => [d, parseOptions(d)]).filter(([, p]) => p);
  if (!quizzes.length) return;
  const state = load();
  const score = el("p", { class: "vb2-quiz-score", "aria-live": "polite" });
  const reset = el("button", { type: "button", class: "vb2-quiz-reset" }, "Reset my answers");
  const bar = el("div", { class: "vb2-quiz-controls" }, score, reset);
  quizzes[0][0].before(bar);
  const updates = [];

  function tally() {
    const done = quizzes.filter((_, i) => state[i]).length;
    const right = quizzes.filter((_, i) => state[i]?.right).length;
    score.textContent = `${right} of ${quizzes.length} right, ${done} answered (kept in this browser).`;
  }

  quizzes.forEach(([details, parsed], qi) => {
    const { list, options } = parsed;
    details.classList.add("vb2-quiz");
    details.open = true;
    // everything after the options is the explanation
    const explanation = el("div", { class: "vb2-quiz-explanation" });
    let node = list.nextSibling;
    while (node) {
      const next = node.nextSibling;
      explanation.append(node);
      node = next;
    }
    const name = `vb2-q-${qi}`;
    const form = el("form", { class: "vb2-quiz-form" });
    const feedback = el("p", { class: "vb2-quiz-feedback", role: "status" });
    const typed = options.find((o) => o.typed);
    let input;
    if (typed) {
      input = el("input", { type: "text", inputmode: "decimal", "aria-label": "your answer", class: "vb2-quiz-input" });
      form.append(el("label", {}, "Your answer: ", input));
    } else {
      const group = el("div", { role: "radiogroup", "aria-label": "options" });
      options.forEach((o, i) => {
        const radio = el("input", { type: "radio", name, value: String(i) });
        group.append(el("label", { class: "vb2-quiz-option" }, radio, el("span", { html: o.html })));
      });
      form.append(group);
    }
    const check = el("button", { type: "submit" }, "Check");
    form.append(check, feedback);
    list.replaceWith(form);
    details.append(explanation);

    function show() {
      const s = state[qi];
      explanation.hidden = !s;
      form.classList.toggle("vb2-right", !!s?.right);
      form.classList.toggle("vb2-wrong", !!s && !s.right);
      for (const lab of form.querySelectorAll(".vb2-quiz-option")) lab.classList.remove("vb2-is-right", "vb2-is-wrong");
      if (!s) {
        feedback.textContent = "";
        if (input) input.value = "";
        for (const r of form.querySelectorAll("input[type=radio]")) r.checked = false;
        return;
      }
      if (typed) {
        input.value = s.answer;
        feedback.textContent = s.right ? "Right." : `Not quite: the answer is ${typed.text}.`;
      } else {
        const labels = form.querySelectorAll(".vb2-quiz-option");
        const chosen = Number(s.answer);
        form.querySelector(`input[value="${chosen}"]`).checked = true;
        labels[options.findIndex((o) => o.correct)].classList.add("vb2-is-right");
        if (!s.right) labels[chosen].classList.add("vb2-is-wrong");
        feedback.textContent = s.right ? "Right." : "Not quite: the right answer is marked.";
      }
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      let answer;
      let right;
      if (typed) {
        answer = input.value;
        right = typedRight(answer, typed.text);
      } else {
        const r = form.querySelector("input[type=radio]:checked");
        if (!r) {
          feedback.textContent = "Choose an option first.";
          return;
        }
        answer = r.value;
        right = options[Number(answer)].correct;
      }
      state[qi] = { answer, right };
      save(state);
      show();
      tally();
    });
    updates.push(show);
    show();
  });
  reset.addEventListener("click", () => {
    for (const k of Object.keys(state)) delete state[k];
    save(state);
    updates.forEach((f) => f());
    tally();
    score.textContent = `Answers cleared. ${score.textContent}`;
  });
  tally();
}

if (window.document$) window.document$.subscribe(setup);
else document.addEventListener("DOMContentLoaded", setup);
