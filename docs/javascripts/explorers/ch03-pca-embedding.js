// ch03/pca-embedding: a patch of the face, its embedding in the face's own PCA basis (one number
// per component), and the patch rebuilt from the first r components. The basis, sizes and the
// slider's range come from figures/ch03/pca-embedding.explorer.bin.
import { colormap, createCanvas, el, fmt, gridMove, imageCanvas, interact, numbers, palette, tag } from "./canvas.js";

export function mount(root, data, ctx) {
  const m = data.meta;
  const { image: S, patch: P, channels: C, grid: G, k_max: K, ks, digits } = m;
  const d = C * P * P;
  const rgb = data.arrays.image.data;
  const face = imageCanvas(data.arrays.image);
  const q = data.arrays.q.data;
  const scale = data.arrays.scale.data;
  const mean = data.arrays.mean.data;
  const rdbu = colormap(data, "RdBu_r");
  // the components, as Python's dequantize() computes them
  const comps = new Float64Array(K * d);
  for (let j = 0; j < K; j++) for (let i = 0; i < d; i++) comps[j * d + i] = q[j * d + i] * scale[j];
  let index = m.chosen;
  let k = m.initial_k;
  let result = null;

  const ui = el("div", { className: "vb-ui" });
  const slider = el("input", { type: "range", min: "0", max: String(K), step: "1", value: String(k), "aria-label": "components kept, r" });
  const kLabel = el("span", { className: "vb-counter" });
  ui.append(el("div", { className: "vb-controls" }, el("label", {}, "components kept, r: "), slider, kLabel));
  const title = el("p", { className: "vb-title" });
  const readout = el("p", { className: "vb-readout" });
  const values = el("span", { className: "vb-values" });
  const errEl = el("span", { className: "vb-error" });
  ui.append(title);
  root.prepend(ui);

  /** Patch i flattened in (channel, row, column) order, values in [0, 1]. */
  function patchVector(i) {
    const x = new Float64Array(d);
    const r0 = Math.floor(i / G) * P;
    const c0 = (i % G) * P;
    for (let ch = 0; ch < C; ch++) for (let y = 0; y < P; y++) for (let xx = 0; xx < P; xx++) x[(ch * P + y) * P + xx] = rgb[((r0 + y) * S + c0 + xx) * C + ch] / 255;
    return x;
  }
  function compute() {
    const x = patchVector(index);
    const scores = new Float64Array(K);
    for (let j = 0; j < K; j++) {
      let s = 0;
      for (let i = 0; i < d; i++) s += comps[j * d + i] * (x[i] - mean[i]);
      scores[j] = s;
    }
    const approx = Float64Array.from(mean);
    for (let j = 0; j < k; j++) for (let i = 0; i < d; i++) approx[i] += scores[j] * comps[j * d + i];
    let se = 0;
    for (let i = 0; i < d; i++) se += (x[i] - approx[i]) ** 2;
    result = { x, scores, approx, rms: Math.sqrt(se / d) };
  }

  function patchImage(vec) {
    const img = new ImageData(P, P);
    for (let y = 0; y < P; y++) {
      for (let xx = 0; xx < P; xx++) {
        const o = 4 * (y * P + xx);
        for (let ch = 0; ch < C; ch++) img.data[o + ch] = Math.round(Math.min(Math.max(vec[(ch * P + y) * P + xx], 0), 1) * 255);
        img.data[o + 3] = 255;
      }
    }
    const cv = document.createElement("canvas");
    cv.width = P;
    cv.height = P;
    cv.getContext("2d").putImageData(img, 0, 0);
    return cv;
  }

  const gapShare = 1 / 40;
  const layout = (w) => {
    const gap = w * gapShare;
    const s = (w - 2 * gap) / 3;
    const squares = [0, 1, 2].map((i) => ({ x: i * (s + gap), y: 0, w: s, h: s }));
    return { squares, bars: { x: 0, y: s + gap, w, h: s * barShare } };
  };
  const barShare = 3 / 4; // the bar chart's height, as a share of a square's side
  const aspect = 1 / (((1 - 2 * gapShare) / 3) * (1 + barShare) + gapShare);

  const view = createCanvas(ctx, ui, {
    data,
    aspect,
    label: "The face with the selected patch, the patch, the patch rebuilt from r components, and its embedding",
    draw(g, w) {
      const c = palette(data);
      const { squares: [a, b, r], bars } = layout(w);
      g.imageSmoothingEnabled = true;
      g.drawImage(face, a.x, a.y, a.w, a.h);
      const cw = a.w / G;
      g.strokeStyle = c.highlight;
      g.lineWidth = 2;
      g.strokeRect(a.x + (index % G) * cw, a.y + Math.floor(index / G) * cw, cw, cw);
      g.imageSmoothingEnabled = false;
      g.drawImage(patchImage(result.x), b.x, b.y, b.w, b.h);
      g.drawImage(patchImage(result.approx), r.x, r.y, r.w, r.h);
      tag(g, `patch ${index}`, b.x + 4, b.y + 4, c);
      tag(g, `r = ${k}`, r.x + 4, r.y + 4, c);
      // the embedding: one bar per component, the first k in colour, on a signed log scale
      // (the first score is far larger than the rest)
      const squash = (v) => Math.sign(v) * Math.log1p(Math.abs(v));
      let top = 0;
      for (let j = 0; j < K; j++) top = Math.max(top, Math.abs(squash(result.scores[j])));
      const label = 22;
      const bw = bars.w / K;
      const half = (bars.h - label) / 2;
      const mid = bars.y + label + half;
      for (let j = 0; j < K; j++) {
        const t = squash(result.scores[j]) / top;
        const hgt = t * (half - 1);
        g.fillStyle = j < k ? rdbu.css(0.5 + 0.5 * t) : c.grid;
        g.fillRect(bars.x + j * bw + bw * 0.1, Math.min(mid, mid - hgt), bw * 0.8, Math.max(Math.abs(hgt), 1));
      }
      g.strokeStyle = c.muted;
      g.lineWidth = 1;
      g.beginPath();
      g.moveTo(bars.x, mid);
      g.lineTo(bars.x + bars.w, mid);
      g.stroke();
      tag(g, `scores on the first ${K} components (signed log scale); kept: ${k}`, bars.x, bars.y, c);
    },
  });
  ui.append(readout);

  function describe() {
    const where = `patch ${index} (row ${Math.floor(index / G)}, column ${index % G})`;
    kLabel.textContent = `${k} of ${K}`;
    slider.value = String(k);
    title.textContent = `${where} rebuilt from the mean patch and its first ${k} component${k === 1 ? "" : "s"}`;
    numbers(values, result.scores.subarray(0, k), digits);
    numbers(errEl, [result.rms], digits);
    readout.replaceChildren(`RMS pixel error `, errEl, `. Embedding (${k} numbers): `, values);
    ctx.say(`Selected ${where}, r = ${k}: RMS pixel error ${fmt(result.rms, digits)}.`);
  }
  function update() {
    compute();
    view.paint();
    describe();
  }
  function setK(value) {
    k = Math.min(Math.max(value, 0), K);
    update();
  }

  interact(ctx, view, {
    pick(x, y) {
      const { squares: [a] } = layout(view.width);
      if (x < a.x || x >= a.x + a.w || y < a.y || y >= a.y + a.h) return null;
      return Math.min(Math.floor(((y - a.y) / a.h) * G), G - 1) * G + Math.min(Math.floor(((x - a.x) / a.w) * G), G - 1);
    },
    select(i) {
      if (i === index) return;
      index = i;
      update();
    },
    key(event) {
      const moved = gridMove(event.key, index, G, G);
      if (moved === null) return false;
      index = moved;
      update();
      return true;
    },
    act() {
      const next = ks.find((v) => v > k);
      setK(next === undefined ? ks[0] : next);
    },
  });
  ctx.listen(slider, "input", () => setK(Number(slider.value)));
  update();
  return () => ui.remove();
}
