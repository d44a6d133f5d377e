// ch00/forward-pass: pick a patch of the face and follow its token through every stage of the
// hand-set face model (Chapter 0). Every number comes from figures/ch00/forward-pass.explorer.bin.
import { colormap, createCanvas, el, gridMove, imageCanvas, interact, numbers, palette, patchPicture, symlogNorm, tag } from "./canvas.js";

export function mount(root, data, ctx) {
  const m = data.meta;
  const { grid, dim, heads, chosen, stages, digits } = m;
  const T = grid * grid + 1; // tokens: CLS and the patches
  const tokens = data.arrays.tokens.data; // (stages, T, D)
  const attn = data.arrays.attn.data; // (L, heads, T, T)
  const logits = data.arrays.logits.data;
  const prob = data.arrays.prob.data;
  const face = imageCanvas(data.arrays.image);
  const rdbu = colormap(data, "RdBu_r");
  const inferno = colormap(data, "inferno");
  const norm = symlogNorm(m.symlog, m.lim);
  let token = chosen + 1;
  let stage = 0;

  const ui = el("div", { className: "vb-ui" });
  const prev = el("button", { type: "button", className: "md-button vb-step" }, "◀ previous");
  const next = el("button", { type: "button", className: "md-button vb-step" }, "next ▶");
  const counter = el("span", { className: "vb-counter" });
  const title = el("p", { className: "vb-title" });
  const readout = el("p", { className: "vb-readout" });
  const values = el("span", { className: "vb-values" });
  ui.append(el("div", { className: "vb-controls" }, prev, counter, next), title);
  root.prepend(ui);

  const tokenName = (t) => (t === 0 ? "the class token (CLS)" : `patch ${t - 1} (row ${Math.floor((t - 1) / grid)}, column ${(t - 1) % grid})`);
  const row = (s, t) => tokens.subarray((s * T + t) * dim, (s * T + t + 1) * dim);
  const attnRow = (layer, h, t) => attn.subarray(((layer * heads + h) * T + t) * T, ((layer * heads + h) * T + t + 1) * T);

  // two square panes side by side; the gap is a share of the width
  const gapShare = 1 / 40;
  const boxes = (w) => {
    const gap = w * gapShare;
    const s = (w - gap) / 2;
    return [{ x: 0, y: 0, w: s, h: s }, { x: s + gap, y: 0, w: s, h: s }];
  };

  const drawFace = (g, box, overlay, label, c) =>
    patchPicture(g, box, face, { grid, overlay, cmap: inferno, alpha: m.overlay_alpha, token, label }, c);

  function drawMatrix(g, box, s, c) {
    const ch = box.h / T;
    const cw = box.w / dim;
    for (let t = 0; t < T; t++) {
      const r = row(s, t);
      for (let k = 0; k < dim; k++) {
        g.fillStyle = rdbu.css(norm(r[k]));
        g.fillRect(box.x + k * cw, box.y + t * ch, Math.ceil(cw), Math.ceil(ch));
      }
    }
    // the selected row: a page-coloured band around a highlight line, so it shows on any colour
    g.strokeStyle = c.bg;
    g.lineWidth = 5;
    g.strokeRect(box.x + 2, box.y + token * ch - 1, box.w - 4, ch + 2);
    g.strokeStyle = c.highlight;
    g.lineWidth = 2.5;
    g.strokeRect(box.x + 2, box.y + token * ch - 1, box.w - 4, ch + 2);
    tag(g, `${T} tokens × ${dim}`, box.x + 4, box.y + box.h - 22, c);
  }

  function drawPatch(g, box, c) {
    const p = m.patch;
    const t = Math.max(token, 1) - 1;
    g.imageSmoothingEnabled = false;
    g.drawImage(face, (t % grid) * p, Math.floor(t / grid) * p, p, p, box.x, box.y, box.w, box.h);
    g.strokeStyle = c.highlight;
    g.lineWidth = 3;
    g.strokeRect(box.x + 1.5, box.y + 1.5, box.w - 3, box.h - 3);
    tag(g, token > 0 ? `patch ${t}: ${p}×${p} pixels` : "CLS has no pixels", box.x + 4, box.y + 4, c);
  }

  function drawLogits(g, box, c) {
    const k = prob.length;
    const bw = box.w / (2 * k + 1);
    const cols = [c.orange, c.purple, c.blue, c.green];
    g.strokeStyle = c.muted;
    g.beginPath();
    g.moveTo(box.x, box.y + box.h - 24);
    g.lineTo(box.x + box.w, box.y + box.h - 24);
    g.stroke();
    g.font = `13px ${getComputedStyle(g.canvas).fontFamily}`;
    g.textAlign = "center";
    for (let i = 0; i < k; i++) {
      const hgt = (box.h - 60) * prob[i];
      const x = box.x + (2 * i + 1) * bw;
      g.fillStyle = cols[i % cols.length];
      g.fillRect(x, box.y + box.h - 24 - hgt, bw, hgt);
      g.fillStyle = c.fg;
      g.fillText(`class ${i}`, x + bw / 2, box.y + box.h - 10);
      g.fillText(`${(100 * prob[i]).toFixed(1)}%`, x + bw / 2, box.y + box.h - 32 - hgt);
    }
    g.textAlign = "start";
    tag(g, "softmax of the logits", box.x + 4, box.y + 4, c);
  }

  const view = createCanvas(ctx, ui, {
    data,
    aspect: 2 / (1 - gapShare),
    label: "The face model's forward pass: the face cut into patches, and the selected token at the current stage",
    draw(g, w) {
      const c = palette(data);
      const [a, b] = boxes(w);
      const st = stages[stage];
      if (st.kind === "attention") {
        drawFace(g, a, attnRow(st.layer, 0, token), `head 1 of ${heads}`, c);
        drawFace(g, b, attnRow(st.layer, 1, token), `head 2 of ${heads}`, c);
        return;
      }
      drawFace(g, a, null, "", c);
      if (st.kind === "patch") drawPatch(g, b, c);
      else if (st.kind === "tokens") drawMatrix(g, b, st.index, c);
      else drawLogits(g, b, c);
    },
  });
  ui.append(readout);

  function describe() {
    const st = stages[stage];
    counter.textContent = `stage ${stage + 1} of ${stages.length}`;
    title.textContent = st.title;
    prev.disabled = stage === 0;
    next.disabled = stage === stages.length - 1;
    let words = "";
    if (st.kind === "tokens") {
      numbers(values, row(st.index, token), digits);
      readout.replaceChildren(`${tokenName(token)}, ${dim} numbers: `, values);
      words = Array.from(row(st.index, token), (v) => v.toFixed(digits)).join(", ");
    } else if (st.kind === "attention") {
      const parts = [];
      for (let h = 0; h < heads; h++) {
        const r = attnRow(st.layer, h, token);
        let best = 1;
        for (let i = 1; i < T; i++) if (r[i] > r[best]) best = i;
        parts.push(`head ${h + 1} gives most weight, ${r[best].toFixed(digits)}, to patch ${best - 1}`);
      }
      numbers(values, attnRow(st.layer, 0, token).subarray(0, 1), digits);
      readout.replaceChildren(`${tokenName(token)}: ${parts.join("; ")}.`);
      words = parts.join("; ");
    } else if (st.kind === "logits") {
      numbers(values, logits, digits);
      readout.replaceChildren("logits: ", values, ` (softmax ${Array.from(prob, (p) => `${(100 * p).toFixed(1)}%`).join(", ")})`);
      words = `logits ${Array.from(logits, (v) => v.toFixed(digits)).join(", ")}`;
    } else {
      readout.replaceChildren(`${tokenName(token)}: ${m.patch}×${m.patch} pixels become one token.`);
    }
    ctx.say(`Selected ${tokenName(token)}. Stage ${stage + 1} of ${stages.length}: ${st.title}. ${words}`);
  }

  function update() {
    view.paint();
    describe();
  }

  function pick(x, y) {
    const [a, b] = boxes(view.width);
    const st = stages[stage];
    const faces = st.kind === "attention" ? [a, b] : [a];
    for (const box of faces) {
      if (x >= box.x && x < box.x + box.w && y >= box.y && y < box.y + box.h) {
        const cw = box.w / grid;
        return 1 + Math.min(Math.floor((y - box.y) / cw), grid - 1) * grid + Math.min(Math.floor((x - box.x) / cw), grid - 1);
      }
    }
    if (st.kind === "tokens" && x >= b.x && y >= b.y && y < b.y + b.h) return Math.min(Math.floor(((y - b.y) / b.h) * T), T - 1);
    return null;
  }

  interact(ctx, view, {
    pick,
    select(t) {
      if (t === token) return;
      token = t;
      update();
    },
    key(event) {
      const moved = gridMove(event.key, Math.max(token - 1, 0), grid, grid);
      if (moved === null) return false;
      token = moved + 1;
      update();
      return true;
    },
    act() {
      stage = (stage + 1) % stages.length;
      update();
    },
  });
  ctx.listen(prev, "click", () => {
    stage = Math.max(stage - 1, 0);
    update();
  });
  ctx.listen(next, "click", () => {
    stage = Math.min(stage + 1, stages.length - 1);
    update();
  });
  update();
  return () => ui.remove();
}
