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
// A typed answer is graded by typedRight (below); an empty box, or one that holds no number
// or several, is not graded: the reader is asked for one number and nothing is revealed.
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

// A typed answer is one number, written as a reader writes it: digits with or without
// thousands separators ("151,296", "151 296"), a decimal point, an exponent ("1.5e3",
// "1.5 × 10^3"), a unit or words around it ("577 tokens", "64 times", "about 8"). Only an "e"
// written straight after the digits and followed by digits is an exponent, so the "e" of
// "tokens" or "times" is not.
const SUPERSCRIPT = { "⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6", "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-", "⁺": "+" };
const NUMBER = new RegExp(
  String.raw`(?<![\d.])([-+−]?)` + // a sign, not inside another number
    String.raw`(\d{1,3}(?:[,\u00a0\u2009\u202f' ]\d{3})+(?!\d)|\d+)?` + // integer part, grouped or not
    String.raw`(\.\d+)?` + // fraction
    String.raw`(?:[eE]([-+−]?\d+)|\s*[×x*·]\s*10\s*(?:\^\s*\(?([-+−]?\d+)\)?|([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)))?` + // exponent
    String.raw`(?![\d.]\d)`,
  "gu",
);

/**
 * Read a typed answer. Returns {value} for one number, {empty: true} for nothing typed, and
 * {count} (0, or 2 and more) when there is no number or more than one to grade.
 */
export function parseAnswer(answer) {
  const text = String(answer ?? "").trim();
  if (!text) return { empty: true };
  const found = [];
  for (const m of text.matchAll(NUMBER)) {
    const [, sign, int, frac, exp, exp10, sup] = m;
    if (!int && !frac) continue;
    const digits = (int || "0").replace(/[^\d]/g, "") + (frac || "");
    let power = exp ?? exp10 ?? (sup ? [...sup].map((ch) => SUPERSCRIPT[ch]).join("") : "0");
    power = power.replace("−", "-");
    const value = Number(`${sign === "-" || sign === "−" ? "-" : ""}${digits}e${power}`);
    if (Number.isFinite(value)) found.push(value);
  }
  if (found.length !== 1) return { count: found.length };
  return { value: found[0] };
}

/**
 * The grading rule of a typed question, read from its [=] item: the answer, then, after "±",
 * the tolerance, absolute ("0.52 ± 0.01") or relative ("3.2 ± 5%"). Without "±" the answer
 * must be exact: every typed question of the book that counts something (tokens, parameters,
 * layers) is graded exactly, since the traps it teaches are a few parts in a thousand off.
 */
export function parseSpec(spec) {
  const [valueText, tolText] = String(spec).split("±");
  const value = parseAnswer(valueText).value;
  if (value === undefined) throw new Error(`quiz: the answer "${spec}" is not one number`);
  if (tolText === undefined) return { value, tol: 0 };
  const tol = parseAnswer(tolText.replace("%", "")).value;
  if (tol === undefined || tol < 0) throw new Error(`quiz: the tolerance in "${spec}" is not a number`);
  return { value, tol: tolText.includes("%") ? (Math.abs(value) * tol) / 100 : tol };
}

/**
 * Grade a typed answer against its spec: true (right), false (wrong), or null when there is
 * nothing to grade yet (an empty box, no number, or several numbers).
 */
export function typedRight(answer, spec) {
  const got = parseAnswer(answer);
  if (got.value === undefined) return null;
  const { value, tol } = parseSpec(spec);
  // "exact" is equal as decimals: 1.5e3 and 1,500 are both 1500. The slack of a part in a
  // billion covers the last bit of a float (0.51 against 0.52 ± 0.01), never a count's unit.
  const slack = tol + 1e-9 * Math.max(Math.abs(value), tol);
  return Math.abs(got.value - value) <= slack;
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
      input = el("input", { type: "text", inputmode: "decimal", autocomplete: "off", spellcheck: "false", "aria-label": "your answer", class: "vb2-quiz-input" });
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
        if (right === null) {
          // nothing to grade yet: no verdict, nothing revealed, nothing kept
          const got = parseAnswer(answer);
          feedback.textContent = got.empty
            ? "Type your answer first."
            : got.count
              ? "Type one number; a unit after it is fine."
              : "Type a number; a unit after it is fine.";
          return;
        }
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

if (typeof window !== "undefined") {
  // in a page; the module also loads in Node, where the tests call typedRight directly
  if (window.document$) window.document$.subscribe(setup);
  else document.addEventListener("DOMContentLoaded", setup);
}
