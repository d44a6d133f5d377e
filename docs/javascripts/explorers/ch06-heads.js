// Chapter 6: the four hand-set heads on the face. The page holds the chapter's 196 tokens and
// the qkv weights of hand_set_heads; for the patch under the pointer (or the keyboard cursor)
// it computes each head's attention row, softmax((q_i / sqrt(Dh)) . k_j), and the row's
// attention distance in pixels (mean_attention_distance for one query).
// A second tab shows the trained model of Chapters 9 and 10: Chapter 10's attention-explorer
// view and data (ch10-attention-explorer.js), every layer's and head's map at once.
import { h, cmapColor, palette, fitCanvas, timed } from "./kit.js";
import { loadExplorerData } from "./core.js";

/** Each head's attention row for query patch i: Float64Array(heads * N). */
export function rows(data, i) {
  const meta = data.meta;
  const X = data.arrays.tokens.data;
  const [N, D] = data.arrays.tokens.shape;
  const Wt = data.arrays.qkv_w.data;
  const b = data.arrays.qkv_b.data;
  const H = meta.heads;
  const Dh = D / H;
  const scale = 1 / Math.sqrt(Dh);
  const proj = (t, o) => {
    let s = b[o];
    for (let d = 0; d < D; d++) s += Wt[o * D + d] * X[t * D + d];
    return s;
  };
  const out = new Float64Array(H * N);
  for (let hd = 0; hd < H; hd++) {
    const q = [];
    for (let e = 0; e < Dh; e++) q.push(proj(i, hd * Dh + e) * scale);
    let m = -Infinity;
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let e = 0; e < Dh; e++) s += q[e] * proj(j, D + hd * Dh + e);
      out[hd * N + j] = s;
      if (s > m) m = s;
    }
    let z = 0;
    for (let j = 0; j < N; j++) z += out[hd * N + j] = Math.exp(out[hd * N + j] - m);
    for (let j = 0; j < N; j++) out[hd * N + j] /= z;
  }
  return out;
}

/**
 * The colour-map position of each weight of one head's row: from the row's smallest weight (0)
 * to its largest (1), as the chapter's figure scales each map (matplotlib's autoscale). A row
 * whose weights are all equal (a uniform head) has no contrast to show: every patch gets 0 and
 * {uniform: true}, so the map is not painted as if every patch were the most attended.
 */
export function shades(row) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const w of row) {
    lo = Math.min(lo, w);
    hi = Math.max(hi, w);
  }
  // equal up to the rounding of the softmax that made them (a few ulps of the largest)
  const uniform = !(hi - lo > 4 * Number.EPSILON * hi);
  const t = new Float64Array(row.length);
  if (!uniform) for (let j = 0; j < row.length; j++) t[j] = (row[j] - lo) / (hi - lo);
  return { t, uniform };
}

/** Attention distance of query i for one head's row (pixels between patch centres). */
export function distance(row, i, grid, patch) {
  const [ri, ci] = [Math.floor(i / grid), i % grid];
  let s = 0;
  for (let j = 0; j < row.length; j++) {
    const [rj, cj] = [Math.floor(j / grid), j % grid];
    s += row[j] * patch * Math.hypot(ri - rj, ci - cj);
  }
  return s;
}

export function mount(root, data, ctx) {
  const meta = data.meta;
  const G = meta.grid;
  const N = G * G;
  const lut = data.arrays.viridis.data;
  const [IH, IW] = data.arrays.image.shape;
  const photo = document.createElement("canvas");
  photo.width = IW;
  photo.height = IH;
  const id = photo.getContext("2d").createImageData(IW, IH);
  const px = data.arrays.image.data;
  for (let i = 0; i < IW * IH; i++) {
    id.data.set([px[3 * i], px[3 * i + 1], px[3 * i + 2], 255], 4 * i);
  }
  photo.getContext("2d").putImageData(id, 0, 0);
  let query = meta.query;
  let current = rows(data, query);
  const cv = h("canvas", { tabindex: "0", role: "application", "aria-label": "the face cut into 14 by 14 patches with each head's attention map: move the pointer, tap, or use the arrow keys to pick the query patch" });
  const ui = h("div", { class: "vb2-ui vb2-heads", role: "tabpanel", id: "vb2-heads-hand" }, cv);
  const trained = h("div", { role: "tabpanel", id: "vb2-heads-trained", hidden: true });
  const tabs = [
    h("button", { type: "button", role: "tab", "aria-selected": "true", "aria-controls": ui.id }, "four hand-set heads"),
    h("button", { type: "button", role: "tab", "aria-selected": "false", "aria-controls": trained.id, tabindex: "-1" }, "trained model (Chapters 9, 10)"),
  ];
  const tablist = h("div", { class: "vb2-ui vb2-toolbar vb2-tabs", role: "tablist", "aria-label": "which heads" }, ...tabs);
  root.prepend(tablist, ui, trained);
  let undoTrained = null;
  async function show(k) {
    for (const [i, t] of tabs.entries()) {
      t.setAttribute("aria-selected", String(i === k));
      t.tabIndex = i === k ? 0 : -1;
    }
    ui.hidden = k !== 0;
    trained.hidden = k !== 1;
    if (k === 0) pick(query);
    else if (!undoTrained) {
      // the data of Chapter 10's explorer, beside this one's in the built site
      const src = root.dataset.src.replace(/ch06\/heads\.explorer\.bin$/, "ch10/attention-explorer.explorer.bin");
      const [mod, d10] = await Promise.all([import("./ch10-attention-explorer.js"), loadExplorerData(src)]);
      undoTrained = mod.mountView(trained, d10, ctx, { grid: true });
    } else trained.dispatchEvent(new Event("vb2-show"));
  }
  for (const [i, t] of tabs.entries()) {
    ctx.listen(t, "click", () => show(i));
    ctx.listen(t, "keydown", (ev) => {
      if (ev.key !== "ArrowRight" && ev.key !== "ArrowLeft") return;
      const k = (i + 1) % tabs.length;
      tabs[k].focus();
      show(k);
      ev.preventDefault();
    });
  }
  let layout = null;

  const paint = timed("ch06", () => {
    const c = palette(meta);
    const W = Math.max(260, ui.clientWidth);
    const cols = W >= 640 ? 4 : 2;
    const side = Math.floor((W - (cols - 1) * 10) / cols);
    const rowsN = Math.ceil(meta.heads / cols);
    const Htot = rowsN * (side + 36) + 30;
    const g = fitCanvas(cv, W, Htot);
    g.clearRect(0, 0, W, Htot);
    g.font = "12px sans-serif";
    layout = [];
    const cell = side / G;
    for (let hd = 0; hd < meta.heads; hd++) {
      const x0 = (hd % cols) * (side + 10);
      const y0 = Math.floor(hd / cols) * (side + 36);
      layout.push([x0, y0 + 16, side]);
      g.fillStyle = c.fg;
      g.textBaseline = "top";
      g.textAlign = "left";
      g.fillText(`${hd}: ${meta.head_names[hd]}`, x0, y0);
      g.drawImage(photo, x0, y0 + 16, side, side);
      const { t, uniform } = shades(current.subarray(hd * N, (hd + 1) * N));
      g.globalAlpha = 0.6;
      for (let j = 0; j < N; j++) {
        g.fillStyle = cmapColor(lut, t[j]);
        g.fillRect(x0 + (j % G) * cell, y0 + 16 + Math.floor(j / G) * cell, cell + 0.5, cell + 0.5);
      }
      g.globalAlpha = 1;
      if (uniform) {
        // say it on the map: every patch gets the same weight, 1 / N
        g.font = "bold 13px sans-serif";
        g.textAlign = "center";
        g.textBaseline = "middle";
        const label = `uniform: 1/${N} each`;
        const w = g.measureText(label).width + 12;
        g.fillStyle = c.bg;
        g.fillRect(x0 + side / 2 - w / 2, y0 + 16 + side / 2 - 11, w, 22);
        g.fillStyle = c.fg;
        g.fillText(label, x0 + side / 2, y0 + 16 + side / 2);
        g.font = "12px sans-serif";
        g.textAlign = "left";
        g.textBaseline = "top";
      }
      g.strokeStyle = "#00e5ff";
      g.lineWidth = 2;
      g.strokeRect(x0 + (query % G) * cell, y0 + 16 + Math.floor(query / G) * cell, cell, cell);
      const dist = distance(current.subarray(hd * N, (hd + 1) * N), query, G, meta.patch);
      g.fillStyle = c.fg;
      g.fillText(`distance ${dist.toFixed(1)} px`, x0, y0 + 20 + side);
    }
    // the colour bar: every map is scaled from its own smallest weight to its largest
    const by = rowsN * (side + 36) + 2;
    const bw = Math.min(240, W);
    for (let i = 0; i < bw; i++) {
      g.fillStyle = cmapColor(lut, i / (bw - 1));
      g.fillRect(i, by, 1.5, 10);
    }
    g.fillStyle = c.fg;
    g.textAlign = "left";
    g.fillText("row min", 0, by + 12);
    g.textAlign = "right";
    g.fillText("row max", bw, by + 12);
    g.textAlign = "center";
    g.fillText("weight", bw / 2, by + 12);
  });

  function pick(i, words) {
    query = Math.max(0, Math.min(N - 1, i));
    current = rows(data, query);
    paint();
    const parts = [];
    for (let hd = 0; hd < meta.heads; hd++) {
      const d = distance(current.subarray(hd * N, (hd + 1) * N), query, G, meta.patch);
      const flat = shades(current.subarray(hd * N, (hd + 1) * N)).uniform ? " (uniform: every patch equally)" : "";
      parts.push(`${meta.head_names[hd]} ${d.toFixed(1)} px${flat}`);
    }
    root.dataset.query = String(query);
    ctx.say(`${words || ""}Query patch ${query} (row ${Math.floor(query / G)}, column ${query % G}); attention distance: ${parts.join(", ")}.`);
  }
  function at(ev) {
    const r = cv.getBoundingClientRect();
    const x = ev.clientX - r.left;
    const y = ev.clientY - r.top;
    for (const [x0, y0, side] of layout) {
      if (x >= x0 && x < x0 + side && y >= y0 && y < y0 + side) {
        const j = Math.floor(((y - y0) / side) * G) * G + Math.floor(((x - x0) / side) * G);
        if (j !== query) pick(j);
        return;
      }
    }
  }
  ctx.listen(cv, "pointermove", at);
  ctx.listen(cv, "pointerdown", at);
  ctx.listen(cv, "keydown", (ev) => {
    const [r, c] = [Math.floor(query / G), query % G];
    if (ev.key === "ArrowRight") pick(r * G + Math.min(G - 1, c + 1));
    else if (ev.key === "ArrowLeft") pick(r * G + Math.max(0, c - 1));
    else if (ev.key === "ArrowDown") pick(Math.min(G - 1, r + 1) * G + c);
    else if (ev.key === "ArrowUp") pick(Math.max(0, r - 1) * G + c);
    else if (ev.key === "Enter" || ev.key === " ") pick(meta.query, "Back to the chapter's query. ");
    else return;
    ev.preventDefault();
  });
  ctx.onTheme(() => paint());
  const ro = new ResizeObserver(() => paint());
  ro.observe(ui);
  paint();
  return () => {
    ro.disconnect();
    if (undoTrained) undoTrained();
    tablist.remove();
    trained.remove();
    ui.remove();
  };
}
