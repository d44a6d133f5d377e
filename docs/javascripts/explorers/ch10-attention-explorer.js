// ch10/attention-explorer: every attention row of the small ViT pre-trained in Chapter 9, on
// twelve test images. The main data file (vitbook/figures/ch10_explore.py) holds the images,
// their labels and the model's predictions; each image's maps are a part of the data, a file of
// their own (meta.maps[k] names image k's), loaded when the reader picks the image (core.js,
// loadPart): its attention (L, H, T, T), their mean over the heads (L, T, T) and the rollout
// through each layer (L, T, T). Each row's patch columns come as uint8 steps of 1 / meta.levels
// of the row's largest patch weight, the top of the colour bar the map is drawn with, which
// comes beside them (attn_top, mean_top, rollout_top), and its class-token weight as a float
// of its own (attn_cls, mean_cls, rollout_cls). Chapter 6's heads explorer mounts the same view
// in its second tab (mountView with grid: true).
import { h, cmapColor, palette, fitCanvas, timed } from "./kit.js";
import { loadPart } from "./core.js";

/** The rows of one image's maps (its part of the data): row(layer, mode, head, q) ->
 *  Float64Array(T) of weights. */
export function attentionRows(maps, levels) {
  const [, H, T] = maps.arrays.attn.shape; // (L, H, T, T)
  const a = maps.arrays;
  // one kind's row r (its index over the leading axes): the class token's weight, then the
  // patch columns in steps of the row's largest patch weight
  const read = (q, top, cls, r) => {
    const out = new Float64Array(T);
    const step = top.data[r] / levels;
    out[0] = cls.data[r];
    for (let j = 1; j < T; j++) out[j] = q.data[r * T + j] * step;
    return out;
  };
  return {
    row(layer, mode, head, q) {
      if (mode === "rollout") return read(a.rollout, a.rollout_top, a.rollout_cls, layer * T + q);
      if (mode === "mean") return read(a.mean, a.mean_top, a.mean_cls, layer * T + q);
      return read(a.attn, a.attn_top, a.attn_cls, (layer * H + head) * T + q);
    },
  };
}

const f3 = (x) => x.toFixed(3);

/** Attention distance in pixels of patch query i's row (T = 1 + gh * gw weights): the weights
 *  over the patches renormalised to one, times the distance between patch centres, summed
 *  (vitbook.analysis.mean_attention_distance for one query; the class token has no place). */
export function attentionDistance(row, i, [gh, gw], patch) {
  const [ri, ci] = [Math.floor(i / gw), i % gw];
  let s = 0;
  let z = 0;
  for (let j = 0; j < gh * gw; j++) {
    z += row[1 + j];
    s += row[1 + j] * patch * Math.hypot(ri - Math.floor(j / gw), ci - (j % gw));
  }
  return s / z;
}

/**
 * The view: a picker of the test images, layer / head / mean / rollout and CLS-row switches,
 * the image cut into patches (hover, tap or arrow keys pick a patch) and the attention row of
 * that patch (or of the class token) as a map with its colour bar. With grid: true every
 * layer's and head's map is drawn at once (Chapter 6). The words are written under the
 * canvas and, for screen readers, to ctx's live region. An image's maps are downloaded when
 * it is first picked (the first image's at once): meanwhile the view keeps drawing the image
 * it has (or, at first, a placeholder) and says what it is waiting for; a failed download is
 * said, and picking the image again tries again.
 */
export function mountView(parent, data, ctx, { grid = false } = {}) {
  const m = data.meta;
  const [n, IH, IW] = data.arrays.images.shape;
  const [L, H] = [m.depth, m.heads];
  const [gh, gw] = m.grid;
  const N = gh * gw;
  const T = 1 + N;
  const lut = data.arrays.cmap_viridis.data;
  const state = { img: 0, layer: L - 1, mode: grid ? "head" : "mean", head: 0, cls: false, cursor: (gh >> 1) * gw + (gw >> 1) };
  const loaded = new Map(); // image -> its rows (attentionRows), once its maps have arrived
  let rows = null; // the rows of the image shown, state.img (null until its maps arrive)
  let wanted = null; // the image whose maps are on their way
  let problem = ""; // why no maps are drawn yet, after a failed download
  let gone = false;

  // one small canvas per test image, drawn once from the exported pixels
  const pictures = [];
  for (let k = 0; k < n; k++) {
    const c = document.createElement("canvas");
    c.width = IW;
    c.height = IH;
    const g = c.getContext("2d");
    const id = g.createImageData(IW, IH);
    const px = data.arrays.images.data;
    const o = k * IH * IW * 3;
    for (let i = 0; i < IW * IH; i++) id.data.set([px[o + 3 * i], px[o + 3 * i + 1], px[o + 3 * i + 2], 255], 4 * i);
    g.putImageData(id, 0, 0);
    pictures.push(c);
  }
  const name = (k) => m.classes[k];
  const verdict = (k) =>
    `labelled ${name(m.labels[k])}, the model says ${name(m.preds[k])} (${Math.round(100 * m.confidence[k])}%)`;

  const picks = [];
  const picker = h("div", { class: "vb2-attx-picker", role: "group", "aria-label": "test image" });
  for (let k = 0; k < n; k++) {
    const thumb = h("canvas", { width: IW, height: IH, "aria-hidden": "true" });
    thumb.getContext("2d").drawImage(pictures[k], 0, 0);
    const ok = m.labels[k] === m.preds[k];
    const b = h("button", { type: "button", class: ok ? "vb2-attx-thumb" : "vb2-attx-thumb vb2-attx-wrong", "aria-label": `image ${k + 1}: ${verdict(k)}`, "data-image": String(k) }, thumb, h("span", { text: String(k + 1) }));
    picks.push(b);
    picker.append(b);
  }
  const title = h("p", { class: "vb2-attx-title" });
  const layerSel = h("select", { "aria-label": "layer" }, ...Array.from({ length: L }, (_, l) => h("option", { value: String(l), text: `layer ${l + 1}` })));
  const headSel = h("select", { "aria-label": "head" }, ...Array.from({ length: H }, (_, hd) => h("option", { value: String(hd), text: `head ${hd + 1}` })), h("option", { value: "mean", text: "mean over heads" }));
  const rollBtn = h("button", { type: "button", "aria-pressed": "false", class: "vb2-attx-rollout" }, "rollout");
  const clsBtn = h("button", { type: "button", "aria-pressed": "false", class: "vb2-attx-cls" }, "class token's row");
  const tools = grid ? h("div", { class: "vb2-toolbar" }, clsBtn) : h("div", { class: "vb2-toolbar" }, layerSel, headSel, rollBtn, clsBtn);
  const cv = h("canvas", { tabindex: "0", role: "application", class: "vb2-attx-canvas", "aria-label": "the test image cut into patches and the attention map: move the pointer, tap, or use the arrow keys to pick a patch; Enter switches to the class token's row" });
  // the words again, on screen (the live region that speaks them is visually hidden)
  const readout = h("p", { class: "vb2-attx-readout", "aria-hidden": "true" });
  const ui = h("div", { class: grid ? "vb2-ui vb2-attx vb2-attx-grid" : "vb2-ui vb2-attx" }, picker, title, tools, cv, readout);
  parent.prepend(ui);

  const query = () => (state.cls ? 0 : 1 + state.cursor);
  const modeOf = () => state.mode;
  const what = (layer, mode, head) =>
    mode === "rollout" ? `rollout through layer ${layer + 1}` : mode === "mean" ? `layer ${layer + 1}, mean over heads` : `layer ${layer + 1}, head ${head + 1}`;
  const current = () => rows.row(state.layer, modeOf(), state.head, query());
  let layout = null;
  // what stands where the maps go until the first image's maps are here
  const placeholder = () => problem ? `Image ${state.img + 1}'s maps did not download` : `Loading image ${wanted + 1}'s maps…`;
  function drawPlaceholder(g, x0, y0, w, side, c) {
    g.strokeStyle = c.grid;
    g.lineWidth = 1;
    g.strokeRect(x0 + 0.5, y0 + 0.5, w - 1, side - 1);
    g.fillStyle = c.muted;
    g.textAlign = "center";
    g.textBaseline = "middle";
    g.fillText(placeholder(), x0 + w / 2, y0 + side / 2, w - 8);
  }

  function drawMap(g, row, x0, y0, side, lo, hi, c) {
    const cw = side / gw;
    const ch = side / gh;
    for (let j = 0; j < N; j++) {
      g.fillStyle = cmapColor(lut, hi > lo ? (row[1 + j] - lo) / (hi - lo) : 0);
      g.fillRect(x0 + (j % gw) * cw, y0 + Math.floor(j / gw) * ch, Math.ceil(cw), Math.ceil(ch));
    }
    g.lineWidth = 2;
    g.strokeStyle = c.highlight;
    g.strokeRect(x0 + (state.cursor % gw) * cw + 1, y0 + Math.floor(state.cursor / gw) * ch + 1, cw - 2, ch - 2);
  }
  function drawBar(g, x, y, w, lo, hi, c, label, showLo = true) {
    for (let i = 0; i < w; i++) {
      g.fillStyle = cmapColor(lut, i / Math.max(1, w - 1));
      g.fillRect(x + i, y, 1.5, 8);
    }
    g.fillStyle = c.fg;
    g.textBaseline = "top";
    g.textAlign = "left";
    if (showLo) g.fillText(lo === 0 && !label ? "0" : f3(lo), x, y + 10); // small maps: room for the top
    g.textAlign = "right";
    g.fillText(f3(hi), x + w, y + 10);
    g.textAlign = "center";
    g.fillText(label, x + w / 2, y + 10);
  }
  // each map's colours run from zero to its largest weight over the patches: a row that is
  // nearly uniform looks nearly uniform (the patch weights come in steps of 1 / meta.levels of
  // that largest weight, half a colour step at most off, which vitbook/figures/ch10_explore.py
  // checks for every map kind)
  const rangeOf = (row) => {
    let hi = 0;
    for (let j = 1; j < T; j++) hi = Math.max(hi, row[j]);
    return [0, hi];
  };

  const paint = timed(ctx.id, () => {
    const c = palette(m);
    const W = Math.max(260, Math.floor(ui.clientWidth));
    const font = getComputedStyle(cv).fontFamily;
    const gap = 12;
    let Htot;
    layout = [];
    if (!grid) {
      const side = Math.min(320, Math.floor((W - gap) / 2));
      Htot = 18 + side + 34;
      const g = fitCanvas(cv, 2 * side + gap, Htot);
      g.clearRect(0, 0, 2 * side + gap, Htot);
      g.font = `12px ${font}`;
      g.fillStyle = c.fg;
      g.textBaseline = "top";
      g.textAlign = "left";
      const r = Math.floor(state.cursor / gw);
      const col = state.cursor % gw;
      g.fillText(state.cls ? `patch (${r + 1}, ${col + 1}) read` : `query patch (${r + 1}, ${col + 1})`, 0, 0);
      g.fillText(`${state.cls ? "class token, " : ""}${what(state.layer, modeOf(), state.head)}`, side + gap, 0);
      g.imageSmoothingEnabled = false;
      g.drawImage(pictures[state.img], 0, 18, side, side);
      g.strokeStyle = c.bg;
      g.globalAlpha = 0.5;
      g.lineWidth = 1;
      for (let i = 1; i < gw; i++) {
        g.beginPath();
        g.moveTo((i * side) / gw, 18);
        g.lineTo((i * side) / gw, 18 + side);
        g.stroke();
      }
      for (let i = 1; i < gh; i++) {
        g.beginPath();
        g.moveTo(0, 18 + (i * side) / gh);
        g.lineTo(side, 18 + (i * side) / gh);
        g.stroke();
      }
      g.globalAlpha = 1;
      g.lineWidth = 2.5;
      g.strokeStyle = c.highlight;
      const cw = side / gw;
      g.strokeRect((state.cursor % gw) * cw + 1, 18 + Math.floor(state.cursor / gw) * cw + 1, cw - 2, cw - 2);
      if (rows) {
        const row = current();
        const [lo, hi] = rangeOf(row);
        drawMap(g, row, side + gap, 18, side, lo, hi, c);
        drawBar(g, side + gap, 18 + side + 6, side, lo, hi, c, "weight");
      } else drawPlaceholder(g, side + gap, 18, side, side, c);
      layout.push([0, 18, side], [side + gap, 18, side]);
    } else {
      // the image, then one small map per layer (rows) and head (columns), one colour bar each
      const cols = H;
      const lab = 52;
      const cell = Math.floor((W - lab - (cols - 1) * 6) / cols);
      const side = Math.min(cell, 150);
      const rowH = side + 30;
      const img = Math.min(side * 2, 200);
      Htot = img + 24 + L * rowH;
      const g = fitCanvas(cv, W, Htot);
      g.clearRect(0, 0, W, Htot);
      g.font = `11px ${font}`;
      g.imageSmoothingEnabled = false;
      g.drawImage(pictures[state.img], 0, 0, img, img);
      const cw = img / gw;
      g.lineWidth = 2.5;
      g.strokeStyle = c.highlight;
      g.strokeRect((state.cursor % gw) * cw + 1, Math.floor(state.cursor / gw) * cw + 1, cw - 2, cw - 2);
      layout.push([0, 0, img]);
      g.fillStyle = c.fg;
      g.textBaseline = "top";
      g.textAlign = "left";
      const r = Math.floor(state.cursor / gw);
      g.fillText(state.cls ? "the class token's rows" : `query patch (${r + 1}, ${(state.cursor % gw) + 1})`, img + 10, 0);
      if (!rows) drawPlaceholder(g, lab, img + 24, W - lab, L * rowH - 30, c);
      for (let l = 0; rows && l < L; l++) {
        for (let hd = 0; hd < H; hd++) {
          const x0 = lab + hd * (side + 6);
          const y0 = img + 24 + l * rowH;
          const row = rows.row(l, "head", hd, query());
          const [lo, hi] = rangeOf(row);
          if (l === 0) {
            g.fillStyle = c.fg;
            g.textAlign = "center";
            g.textBaseline = "bottom";
            g.fillText(`head ${hd + 1}`, x0 + side / 2, y0 - 2);
          }
          drawMap(g, row, x0, y0, side, lo, hi, c);
          // every bar starts at zero: only the first of a row says so (each bar's zero nearly
          // touched the largest weight printed at the end of the bar before, at any width)
          drawBar(g, x0, y0 + side + 3, side, lo, hi, c, side >= 110 && !state.cls ? `${attentionDistance(row, state.cursor, m.grid, m.patch).toFixed(1)} px` : "", hd === 0);
          layout.push([x0, y0, side]);
        }
        g.fillStyle = c.fg;
        g.textAlign = "left";
        g.textBaseline = "middle";
        g.fillText(`layer ${l + 1}`, 0, img + 24 + l * rowH + side / 2);
      }
    }
  });

  function describe(words = "") {
    ui.dataset.image = String(state.img);
    if (wanted === null) delete ui.dataset.loading;
    else ui.dataset.loading = String(wanted);
    for (const [k, btn] of picks.entries()) {
      btn.setAttribute("aria-pressed", String(k === state.img));
      if (k === wanted) btn.setAttribute("aria-busy", "true");
      else btn.removeAttribute("aria-busy");
    }
    rollBtn.setAttribute("aria-pressed", String(state.mode === "rollout"));
    clsBtn.setAttribute("aria-pressed", String(state.cls));
    headSel.disabled = state.mode === "rollout";
    title.textContent = `Image ${state.img + 1}: ${verdict(state.img)}.`;
    const pending = wanted === null ? "" : `Loading the attention maps of image ${wanted + 1}. `;
    if (!rows) {
      delete ui.dataset.row;
      readout.textContent = `${words}${pending}${problem}`;
      ctx.say(readout.textContent);
      return;
    }
    words = `${words}${pending}`;
    const row = current();
    let best = 1;
    for (let j = 2; j < T; j++) if (row[j] > row[best]) best = j;
    const [lo, hi] = rangeOf(row);
    const r = Math.floor(state.cursor / gw);
    const col = state.cursor % gw;
    const b = best - 1;
    ui.dataset.layer = String(state.layer);
    ui.dataset.mode = modeOf();
    ui.dataset.head = String(state.head);
    ui.dataset.query = String(query());
    ui.dataset.row = JSON.stringify(Array.from(row));
    const who = state.cls ? "The class token" : `Patch (${r + 1}, ${col + 1})`;
    const mapName = grid ? `every layer and head` : what(state.layer, modeOf(), state.head);
    const text = grid
      ? `${words}Image ${state.img + 1}: ${who.toLowerCase()}'s row in ${mapName}; the weight on patch (${r + 1}, ${col + 1})${state.cls ? "" : " and the attention distance"}, heads 1 to ${H}: ${Array.from({ length: L }, (_, l) => `layer ${l + 1}: ${Array.from({ length: H }, (_, hd) => {
          const rw = rows.row(l, "head", hd, query());
          return state.cls ? f3(rw[1 + state.cursor]) : `${f3(rw[1 + state.cursor])} ${attentionDistance(rw, state.cursor, m.grid, m.patch).toFixed(1)} px`;
        }).join(", ")}`).join("; ")}.`
      : `${words}Image ${state.img + 1}, ${mapName}: ${who}'s row puts ${f3(row[0])} on the class token and at most ${f3(row[best])} on patch (${Math.floor(b / gw) + 1}, ${(b % gw) + 1})${state.cls ? `, ${f3(row[1 + state.cursor])} on patch (${r + 1}, ${col + 1})` : ""}. Colour bar ${f3(lo)} to ${f3(hi)}.`;
    readout.textContent = text;
    ctx.say(text);
  }
  function update(words) {
    paint();
    describe(words);
  }

  /** Show image k: at once if its maps are here, else once they have arrived. */
  function choose(k) {
    const have = loaded.get(k);
    if (have) {
      [state.img, rows, wanted, problem] = [k, have, null, ""];
      update();
      return;
    }
    if (wanted === k) return; // on its way
    [wanted, problem] = [k, ""];
    if (!rows) state.img = k;
    update();
    loadPart(data, m.maps[k]).then(
      (maps) => {
        loaded.set(k, attentionRows(maps, m.levels));
        if (!gone && wanted === k) choose(k);
      },
      (err) => {
        if (gone || wanted !== k) return;
        wanted = null;
        const why = /HTTP \d+/.exec(err.message);
        const words = `The attention maps of image ${k + 1} did not download (${why ? `the server answered ${why[0]}` : "the request failed"}); pick image ${k + 1} again to retry. `;
        if (!rows) problem = words;
        update(rows ? words : "");
      },
    );
  }

  function at(ev) {
    const rect = cv.getBoundingClientRect();
    const x = ev.clientX - rect.left;
    const y = ev.clientY - rect.top;
    for (const [x0, y0, side] of layout) {
      if (x >= x0 && x < x0 + side && y >= y0 && y < y0 + side) {
        const j = Math.min(gh - 1, Math.floor(((y - y0) / side) * gh)) * gw + Math.min(gw - 1, Math.floor(((x - x0) / side) * gw));
        if (j !== state.cursor) {
          state.cursor = j;
          update();
        }
        return;
      }
    }
  }
  ctx.listen(cv, "pointermove", at);
  ctx.listen(cv, "pointerdown", at);
  ctx.listen(cv, "keydown", (ev) => {
    const r = Math.floor(state.cursor / gw);
    const c = state.cursor % gw;
    const moves = {
      ArrowRight: r * gw + Math.min(gw - 1, c + 1),
      ArrowLeft: r * gw + Math.max(0, c - 1),
      ArrowDown: Math.min(gh - 1, r + 1) * gw + c,
      ArrowUp: Math.max(0, r - 1) * gw + c,
    };
    if (ev.key in moves) {
      state.cursor = moves[ev.key];
      update();
    } else if (ev.key === "Enter" || ev.key === " ") {
      state.cls = !state.cls;
      update();
    } else return;
    ev.preventDefault();
  });
  for (const [k, b] of picks.entries()) ctx.listen(b, "click", () => choose(k));
  ctx.listen(layerSel, "change", () => {
    state.layer = Number(layerSel.value);
    update();
  });
  ctx.listen(headSel, "change", () => {
    if (headSel.value === "mean") state.mode = "mean";
    else {
      state.mode = "head";
      state.head = Number(headSel.value);
    }
    update();
  });
  ctx.listen(rollBtn, "click", () => {
    state.mode = state.mode === "rollout" ? (headSel.value === "mean" ? "mean" : "head") : "rollout";
    update();
  });
  ctx.listen(clsBtn, "click", () => {
    state.cls = !state.cls;
    update();
  });
  layerSel.value = String(state.layer);
  headSel.value = state.mode === "mean" ? "mean" : String(state.head);
  ctx.onTheme(() => paint());
  ctx.listen(parent, "vb2-show", () => update()); // Chapter 6 shows its tab again
  const ro = new ResizeObserver(() => paint());
  ro.observe(ui);
  choose(state.img);
  return () => {
    gone = true;
    ro.disconnect();
    ui.remove();
  };
}

export function mount(root, data, ctx) {
  return mountView(root, data, ctx);
}
