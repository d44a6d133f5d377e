// Chapter 5's attention calculator: softmax(Q Kᵀ / √d_k) V, the book's scaled_dot_product,
// recomputed in float64 as the reader edits X (four tokens, the chapter's hand-set W_Q, W_K,
// W_V) or q, K, V (the worked example). Hover, tap or focus a result cell: the numbers that
// produced it light up and the arithmetic is written out.
import { h, cmapColor, inkOn, palette, timed } from "./kit.js";

export function matmul(a, b) {
  return a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0)));
}

export function transpose(a) {
  return a[0].map((_, j) => a.map((row) => row[j]));
}

function softmaxRow(row) {
  const m = Math.max(...row);
  const e = row.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** The book's scaled_dot_product(q, k, v, scale): {scores, scaled, weights, output}. */
export function attention(q, k, v, scale = true) {
  const scores = matmul(q, transpose(k));
  const d = q[0].length;
  const scaled = scale ? scores.map((r) => r.map((x) => x / Math.sqrt(d))) : scores;
  const weights = scaled.map(softmaxRow);
  return { scores, scaled, weights, output: matmul(weights, v), d };
}

/** Everything the page shows for the tokens mode: Q, K, V = X W, then attention. */
export function tokensMode(x, meta, scale = true) {
  const q = matmul(x, meta.w_q);
  const k = matmul(x, meta.w_k);
  const v = matmul(x, meta.w_v);
  return { q, k, v, ...attention(q, k, v, scale) };
}

/** A number as a cell shows it: up to three decimals; very large or very small magnitudes in
 *  exponent form ("1.5e9"), so that a cell stays narrow whatever the reader types. */
export const fmt = (x) => {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "—" : x > 0 ? "∞" : "−∞";
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) {
    const [m, e] = x.toExponential(2).split("e");
    return `${m.replace(/\.?0+$/, "")}e${e.replace("+", "")}`;
  }
  if (Number.isInteger(x)) return String(x);
  const s = x.toFixed(3).replace(/0+$/, "").replace(/\.$/, "");
  return s === "-0" ? "0" : s;
};

/**
 * What a field holds, as the explorer reads it: {value} for a number it can compute with, or
 * {error} saying why not. An emptied field, text that is not a number (the browser then
 * reports badInput) and a number too large for a double (1e400 reads as Infinity) are refused.
 */
export function readField(input) {
  const raw = input.value.trim();
  const largest = `the largest number a double holds (${Number.MAX_VALUE.toExponential(1)})`;
  // what the reader typed is not a number the browser can read: text, or beyond a double
  if (input.validity && input.validity.badInput) return { error: `holds no number to compute with: text, or a number beyond ${largest}` };
  if (raw === "") return { error: "is empty" };
  const v = Number(raw);
  if (Number.isNaN(v)) return { error: `holds "${raw}", which is not a number` };
  if (!Number.isFinite(v)) return { error: `holds ${raw}, beyond ${largest}` };
  return { value: v };
}

export function mount(root, data, ctx) {
  const meta = data.meta;
  const lut = data.arrays.viridis.data;
  let mode = "tokens";
  let scale = true;
  const state = {
    x: meta.x.map((r) => r.slice()),
    q: meta.worked.q.map((r) => r.slice()),
    k: meta.worked.k.map((r) => r.slice()),
    v: meta.worked.v.map((r) => r.slice()),
  };
  const tabTokens = h("button", { type: "button", "aria-pressed": "true", "data-mode": "tokens" }, "four tokens: edit X");
  const tabWorked = h("button", { type: "button", "aria-pressed": "false", "data-mode": "worked" }, "worked example: edit q, K, V");
  const scaleBtn = h("button", { type: "button", role: "switch", "aria-checked": "true", class: "vb2-scale" }, "divide by √d_k: on");
  const resetBtn = h("button", { type: "button" }, "reset inputs");
  const grid = h("div", { class: "vb2-row vb2-matrices" });
  const arith = h("p", { class: "vb2-arith", "aria-hidden": "true" }, "Hover, tap or focus a result cell to see its arithmetic.");
  // what is wrong with the inputs, on screen (the live region says it too)
  const problem = h("p", { class: "vb2-refusal", hidden: true });
  const ui = h("div", { class: "vb2-ui vb2-attn" }, h("div", { class: "vb2-toolbar" }, tabTokens, tabWorked, scaleBtn, resetBtn), problem, grid, arith);
  root.prepend(ui);

  let result = null;
  let names = null; // row labels of queries and keys
  const cells = {}; // matrix name -> 2D array of td
  let focus = null; // [matrix, i, j]
  const bad = new Map(); // input element -> why it cannot be computed with

  function inputs() {
    return mode === "tokens"
      ? [["X", state.x, "tokens X"]]
      : [
          ["q", state.q, "query q"],
          ["K", state.k, "keys K"],
          ["V", state.v, "values V"],
        ];
  }

  function compute() {
    if (mode === "tokens") {
      result = tokensMode(state.x, meta, scale);
      names = { q: meta.tokens, k: meta.tokens };
    } else {
      result = { q: state.q, k: state.k, v: state.v, ...attention(state.q, state.k, state.v, scale) };
      names = { q: ["q"], k: state.k.map((_, i) => `key ${i + 1}`) };
    }
  }

  function outputs() {
    const list = [];
    if (mode === "tokens") {
      list.push(["Q", result.q, "Q = X W_Q", names.q], ["K", result.k, "K = X W_K", names.k], ["V", result.v, "V = X W_V", names.k]);
    }
    list.push(["S", result.scores, "scores Q Kᵀ", names.q]);
    if (scale) list.push(["Sd", result.scaled, `÷ √d_k (d_k = ${result.d})`, names.q]);
    list.push(["A", result.weights, "weights A = softmax, each row", names.q], ["O", result.output, "output O = A V", names.q]);
    return list;
  }

  function block(name, m, title, rows, editable) {
    const t = h("table", { class: "vb2-matrix", "data-m": name, "aria-label": title });
    cells[name] = [];
    m.forEach((row, i) => {
      const tr = h("tr", {}, h("th", { scope: "row" }, rows[i] ?? ""));
      cells[name][i] = [];
      row.forEach((val, j) => {
        let td;
        if (editable) {
          const inp = h("input", { type: "number", step: "any", value: String(val), "aria-label": `${title}, row ${rows[i] ?? i + 1}, column ${j + 1}`, "data-i": String(i), "data-j": String(j) });
          const where = `${title} row ${rows[i] ?? i + 1} column ${j + 1}`;
          ctx.listen(inp, "input", () => {
            const read = readField(inp);
            if (read.error) {
              // never compute with the old value: the results wait until the field holds one
              bad.set(inp, `${where} ${read.error}`);
              inp.setAttribute("aria-invalid", "true");
            } else {
              bad.delete(inp);
              inp.removeAttribute("aria-invalid");
              m[i][j] = read.value;
            }
            update();
            if (read.error) ctx.say(`${problem.textContent}`);
            else if (problem.hidden) ctx.say(`${where} set to ${fmt(read.value)}; ${summary()}`);
            else ctx.say(`${where} set to ${fmt(read.value)}. ${problem.textContent}`);
          });
          td = h("td", { class: "vb2-in", "data-i": String(i), "data-j": String(j) }, inp);
        } else {
          td = h("td", { class: "vb2-cell", tabindex: i === 0 && j === 0 ? "0" : "-1", "data-i": String(i), "data-j": String(j), role: "gridcell" });
          const show = () => select(name, i, j);
          ctx.listen(td, "pointerenter", show);
          ctx.listen(td, "pointerdown", show);
          ctx.listen(td, "focus", show);
          ctx.listen(td, "keydown", (ev) => move(ev, name, i, j));
        }
        cells[name][i][j] = td;
        tr.append(td);
      });
      t.append(tr);
    });
    return h("div", { class: "vb2-block" }, h("h4", {}, title), t);
  }

  function move(ev, name, i, j) {
    const m = cells[name];
    let [a, b] = [i, j];
    if (ev.key === "ArrowRight") b = Math.min(m[0].length - 1, j + 1);
    else if (ev.key === "ArrowLeft") b = Math.max(0, j - 1);
    else if (ev.key === "ArrowDown") a = Math.min(m.length - 1, i + 1);
    else if (ev.key === "ArrowUp") a = Math.max(0, i - 1);
    else if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      select(name, i, j);
      return;
    } else return;
    ev.preventDefault();
    m[i][j].tabIndex = -1;
    m[a][b].tabIndex = 0;
    m[a][b].focus();
  }

  function build() {
    compute();
    for (const k of Object.keys(cells)) delete cells[k];
    const parts = [];
    for (const [name, m, title] of inputs()) {
      const rows = name === "X" ? meta.tokens : name === "q" ? ["q"] : m.map((_, i) => `${i + 1}`);
      parts.push(block(name, m, title, rows, true));
    }
    if (mode === "tokens") {
      for (const [name, w, title] of [["WQ", meta.w_q, "W_Q"], ["WK", meta.w_k, "W_K"], ["WV", meta.w_v, "W_V"]]) {
        const b = block(name, w, title, w.map((_, i) => `${i + 1}`), false);
        parts.push(b);
      }
    }
    for (const [name, m, title, rows] of outputs()) parts.push(block(name, m, title, rows, false));
    grid.replaceChildren(...parts);
    paint();
  }

  function values(name) {
    const map = { X: state.x, q: mode === "tokens" ? result.q : state.q, K: mode === "tokens" ? result.k : state.k, V: mode === "tokens" ? result.v : state.v, Q: result.q, WQ: meta.w_q, WK: meta.w_k, WV: meta.w_v, S: result.scores, Sd: result.scaled, A: result.weights, O: result.output };
    return map[name];
  }

  /** Why the results cannot be shown now (a field without a number, or an overflow), or "". */
  function trouble() {
    if (bad.size) {
      const first = [...bad.values()][0];
      const more = bad.size > 1 ? ` (and ${bad.size - 1} more field${bad.size > 2 ? "s" : ""})` : "";
      return `${first}${more}: type a number there; the results wait for it.`;
    }
    const all = [result.scores, result.scaled, result.weights, result.output].flat(2);
    if (all.some((x) => !Number.isFinite(x))) {
      return "These inputs are too large: a score overflows the largest number a double holds, so softmax is undefined. Use smaller values.";
    }
    return "";
  }

  const paint = timed("ch05", () => {
    const c = palette(meta);
    const why = trouble();
    problem.hidden = !why;
    problem.textContent = why;
    root.dataset.state = why ? "refused" : "ok";
    for (const [name, tds] of Object.entries(cells)) {
      const m = values(name);
      let hi = 0;
      for (const row of m) for (const x of row) hi = Math.max(hi, Math.abs(x));
      tds.forEach((row, i) =>
        row.forEach((td, j) => {
          const x = m[i][j];
          if (td.classList.contains("vb2-in")) {
            td.dataset.value = String(x);
            return;
          }
          if (why && !name.startsWith("W")) {
            // no result computed from a value the fields do not show
            delete td.dataset.value;
            td.style.background = "";
            td.style.color = c.fg;
            td.textContent = "—";
            return;
          }
          td.dataset.value = String(x);
          if (name === "A") {
            td.style.background = cmapColor(lut, x);
            td.style.color = inkOn(lut, x);
          } else {
            const t = hi > 0 ? Math.abs(x) / hi : 0;
            td.style.background = `color-mix(in srgb, ${x < 0 ? c.red : c.blue} ${Math.round(t * 45)}%, transparent)`;
            td.style.color = c.fg;
          }
          td.textContent = fmt(x);
        }),
      );
    }
    highlight();
  });

  function deps(name, i, j) {
    const out = [];
    const row = (m, r) => values(m)[r].forEach((_, c) => out.push([m, r, c]));
    const col = (m, c) => values(m).forEach((_, r) => out.push([m, r, c]));
    const qName = mode === "tokens" ? "Q" : "q";
    const kName = mode === "tokens" ? "K" : "K";
    const vName = mode === "tokens" ? "V" : "V";
    if (mode === "tokens" && (name === "Q" || name === "K" || name === "V")) {
      row("X", i);
      col({ Q: "WQ", K: "WK", V: "WV" }[name], j);
    } else if (name === "S") {
      row(qName, i);
      row(kName, j);
    } else if (name === "Sd") out.push(["S", i, j]);
    else if (name === "A") row(scale ? "Sd" : "S", i);
    else if (name === "O") {
      row("A", i);
      col(vName, j);
    }
    return out;
  }

  function arithmetic(name, i, j) {
    const dot = (a, b) => a.map((x, k) => `${fmt(x)}·${fmt(b[k])}`).join(" + ");
    if (mode === "tokens" && (name === "Q" || name === "K" || name === "V")) {
      const w = { Q: meta.w_q, K: meta.w_k, V: meta.w_v }[name];
      return `${name}[${names.q[i]}, ${j + 1}] = ${dot(state.x[i], w.map((r) => r[j]))} = ${fmt(values(name)[i][j])}`;
    }
    if (name === "S") return `q(${names.q[i]}) · k(${names.k[j]}) = ${dot(result.q[i], result.k[j])} = ${fmt(result.scores[i][j])}`;
    if (name === "Sd") return `${fmt(result.scores[i][j])} ÷ √${result.d} = ${fmt(result.scaled[i][j])}`;
    if (name === "A") {
      const s = (scale ? result.scaled : result.scores)[i];
      return `exp(${fmt(s[j])}) ÷ (${s.map((x) => `exp(${fmt(x)})`).join(" + ")}) = ${fmt(result.weights[i][j])}`;
    }
    if (name === "O") {
      const vv = values("V").map((r) => r[j]);
      return `O[${names.q[i]}, ${j + 1}] = ${dot(result.weights[i], vv)} = ${fmt(result.output[i][j])}`;
    }
    if (name.startsWith("W")) return `${name.replace("W", "W_")}[${i + 1}, ${j + 1}] = ${fmt(values(name)[i][j])} (set by hand in the chapter)`;
    return "";
  }

  function highlight() {
    for (const tds of Object.values(cells)) for (const row of tds) for (const td of row) td.classList.remove("vb2-hit", "vb2-src");
    if (!focus || !problem.hidden) {
      if (!problem.hidden) arith.textContent = "";
      return;
    }
    const [name, i, j] = focus;
    if (!cells[name] || !cells[name][i] || !cells[name][i][j]) return;
    cells[name][i][j].classList.add("vb2-src");
    for (const [m, r, c] of deps(name, i, j)) cells[m]?.[r]?.[c]?.classList.add("vb2-hit");
    arith.textContent = arithmetic(name, i, j);
  }

  function select(name, i, j) {
    focus = [name, i, j];
    if (problem.hidden) {
      highlight();
      ctx.say(arithmetic(name, i, j));
    } else ctx.say(problem.textContent);
  }

  function summary() {
    if (!problem.hidden) return problem.textContent;
    const last = result.output.length - 1;
    return `output row ${names.q[last]} is ${result.output[last].map(fmt).join(", ")}`;
  }

  function update() {
    compute();
    // a change of values keeps the layout; only the number of matrices changes with the mode
    paint();
  }

  function setMode(m) {
    mode = m;
    bad.clear();
    tabTokens.setAttribute("aria-pressed", String(m === "tokens"));
    tabWorked.setAttribute("aria-pressed", String(m === "worked"));
    focus = null;
    build();
    ctx.say(m === "tokens" ? "Four tokens: edit the entries of X." : "Worked example: edit q, K and V.");
  }

  ctx.listen(tabTokens, "click", () => setMode("tokens"));
  ctx.listen(tabWorked, "click", () => setMode("worked"));
  ctx.listen(scaleBtn, "click", () => {
    scale = !scale;
    scaleBtn.setAttribute("aria-checked", String(scale));
    scaleBtn.textContent = `divide by √d_k: ${scale ? "on" : "off"}`;
    if (focus && focus[0] === "Sd") focus = null;
    build();
    ctx.say(`Scaling ${scale ? "on" : "off"}; ${summary()}`);
  });
  ctx.listen(resetBtn, "click", () => {
    state.x = meta.x.map((r) => r.slice());
    state.q = meta.worked.q.map((r) => r.slice());
    state.k = meta.worked.k.map((r) => r.slice());
    state.v = meta.worked.v.map((r) => r.slice());
    bad.clear();
    build();
    ctx.say(`Inputs reset; ${summary()}`);
  });
  ctx.onTheme(() => paint());
  build();
  return () => ui.remove();
}
