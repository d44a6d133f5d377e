// ch00/your-image: the hand-set face model of Chapter 0, run in the browser on the reader's own
// image. The weights, sizes and LayerNorm epsilon come from figures/ch00/your-image.explorer.bin;
// the image is read with the File API and never leaves the page.
import { colormap, createCanvas, el, gridMove, imageCanvas, interact, numbers, palette, patchPicture } from "./canvas.js";

// ---- the model, in plain JavaScript (float64 arithmetic on float32 weights) ----------------

/** erf(x): its Taylor series near zero, a continued fraction for erfc further out. */
function erf(x) {
  const a = Math.abs(x);
  if (a < 3) {
    let term = x;
    let sum = x;
    for (let n = 1; Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(a) = exp(-a^2) / sqrt(pi) * 1 / (a + 1/2 / (a + 1 / (a + 3/2 / (a + 2 / (a + ...)))))
  let f = a;
  for (let n = 60; n >= 1; n--) f = a + n / 2 / f;
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

const gelu = (x) => 0.5 * x * (1 + erf(x / Math.SQRT2));

function layerNorm(z, T, D, w, b, eps) {
  const out = new Float64Array(T * D);
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let k = 0; k < D; k++) mean += z[t * D + k];
    mean /= D;
    let vr = 0;
    for (let k = 0; k < D; k++) vr += (z[t * D + k] - mean) ** 2;
    const inv = 1 / Math.sqrt(vr / D + eps);
    for (let k = 0; k < D; k++) out[t * D + k] = (z[t * D + k] - mean) * inv * w[k] + b[k];
  }
  return out;
}

/** x (T, In) @ W^T (Out, In) + b -> (T, Out), as torch.nn.Linear. */
function linear(x, T, In, W, b, Out) {
  const out = new Float64Array(T * Out);
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < Out; o++) {
      let s = b[o];
      for (let i = 0; i < In; i++) s += x[t * In + i] * W[o * In + i];
      out[t * Out + o] = s;
    }
  }
  return out;
}

/**
 * The face model's forward pass on pixels (C, H, W) in [0, 1]: every stage, as
 * VisionTransformer.forward_intermediates returns it (batch dimension dropped).
 */
export function forward(meta, weights, pixels) {
  const W = (name) => weights[`w:${name}`].data;
  const { patch: P, grid: G, channels: C, dim: D, heads: H, depth, mlp, classes, eps, image: S } = meta;
  const N = G * G;
  const T = N + 1;
  const hd = D / H;
  const scale = 1 / Math.sqrt(hd);
  // patch embedding: the strided convolution, patch by patch
  const pw = W("patch_embed.proj.weight");
  const pb = W("patch_embed.proj.bias");
  const patches = new Float64Array(N * D);
  for (let n = 0; n < N; n++) {
    const r0 = Math.floor(n / G) * P;
    const c0 = (n % G) * P;
    for (let d = 0; d < D; d++) {
      let s = pb[d];
      for (let ch = 0; ch < C; ch++) {
        for (let i = 0; i < P; i++) {
          const wrow = ((d * C + ch) * P + i) * P;
          const xrow = (ch * S + r0 + i) * S + c0;
          for (let j = 0; j < P; j++) s += pw[wrow + j] * pixels[xrow + j];
        }
      }
      patches[n * D + d] = s;
    }
  }
  const withCls = new Float64Array(T * D);
  withCls.set(W("cls_token"), 0);
  withCls.set(patches, D);
  const pos = W("pos_embed");
  let z = withCls.map((v, i) => v + pos[i]);
  const out = { patches, with_cls: withCls, with_pos: z, blocks: [], attn: [] };
  for (let l = 0; l < depth; l++) {
    const B = (name) => W(`blocks.${l}.${name}`);
    const h1 = layerNorm(z, T, D, B("norm1.weight"), B("norm1.bias"), eps);
    const qkv = linear(h1, T, D, B("attn.qkv.weight"), B("attn.qkv.bias"), 3 * D); // (T, 3, H, hd)
    const weightsL = new Float64Array(H * T * T);
    const heads = new Float64Array(T * D); // (T, H * hd): heads concatenated
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < T; t++) {
        const row = weightsL.subarray((h * T + t) * T, (h * T + t + 1) * T);
        let top = -Infinity;
        for (let u = 0; u < T; u++) {
          let s = 0;
          for (let k = 0; k < hd; k++) s += qkv[t * 3 * D + h * hd + k] * scale * qkv[u * 3 * D + D + h * hd + k];
          row[u] = s;
          top = Math.max(top, s);
        }
        let sum = 0;
        for (let u = 0; u < T; u++) sum += row[u] = Math.exp(row[u] - top);
        for (let u = 0; u < T; u++) row[u] /= sum;
        for (let k = 0; k < hd; k++) {
          let s = 0;
          for (let u = 0; u < T; u++) s += row[u] * qkv[u * 3 * D + 2 * D + h * hd + k];
          heads[t * D + h * hd + k] = s;
        }
      }
    }
    const a = linear(heads, T, D, B("attn.proj.weight"), B("attn.proj.bias"), D);
    z = z.map((v, i) => v + a[i]);
    const h2 = layerNorm(z, T, D, B("norm2.weight"), B("norm2.bias"), eps);
    const hidden = linear(h2, T, D, B("mlp.fc1.weight"), B("mlp.fc1.bias"), mlp).map(gelu);
    const m = linear(hidden, T, mlp, B("mlp.fc2.weight"), B("mlp.fc2.bias"), D);
    z = z.map((v, i) => v + m[i]);
    out.blocks.push(z);
    out.attn.push(weightsL);
  }
  out.encoded = layerNorm(z, T, D, W("norm.weight"), W("norm.bias"), eps);
  if (meta.pool === "cls") out.pooled = out.encoded.slice(0, D);
  else {
    out.pooled = new Float64Array(D);
    for (let t = 1; t < T; t++) for (let k = 0; k < D; k++) out.pooled[k] += out.encoded[t * D + k] / N;
  }
  out.logits = linear(out.pooled, 1, D, W("head.weight"), W("head.bias"), classes);
  const top = Math.max(...out.logits);
  const e = out.logits.map((v) => Math.exp(v - top));
  const total = e.reduce((s, v) => s + v, 0);
  out.prob = e.map((v) => v / total);
  return out;
}

/** (H, W, 3) bytes -> (3, H, W) floats in [0, 1], as the book's images are made. */
export function toPixels(rgb, S, C) {
  const x = new Float32Array(C * S * S);
  for (let i = 0; i < S * S; i++) for (let ch = 0; ch < C; ch++) x[ch * S * S + i] = rgb[i * C + ch] / 255;
  return x;
}

// ---- the explorer ----------------------------------------------------------------------------

export function mount(root, data, ctx) {
  const m = data.meta;
  const { grid, image: S, channels: C, dim, heads, depth, digits } = m;
  const T = grid * grid + 1;
  const inferno = colormap(data, "inferno");
  let picture = imageCanvas(data.arrays.face);
  let rgb = data.arrays.face.data;
  let name = "the face photograph";
  let result = forward(m, data.arrays, toPixels(rgb, S, C));
  let token = 0;
  let layer = depth - 1;

  const ui = el("div", { className: "vb-ui" });
  const input = el("input", { type: "file", accept: "image/*", className: "vb-file" });
  input.hidden = true;
  const choose = el("button", { type: "button", className: "md-button" }, "choose an image…");
  const reset = el("button", { type: "button", className: "md-button" }, "the face");
  const clsButton = el("button", { type: "button", className: "md-button" }, "class token");
  const blockButtons = Array.from({ length: depth }, (_, l) => el("button", { type: "button", className: "md-button" }, `block ${l + 1}`));
  ui.append(el("div", { className: "vb-controls" }, choose, reset, input, clsButton, ...blockButtons));
  const title = el("p", { className: "vb-title" });
  // what happened to the reader's file: refused (and why) or cropped; also said in the live region
  const note = el("p", { className: "vb-note" });
  note.hidden = true;
  const readout = el("p", { className: "vb-readout" });
  const values = el("span", { className: "vb-values" });
  const logitsEl = el("span", { className: "vb-logits" });
  ui.append(note, title);
  root.prepend(ui);

  const panes = 1 + heads;
  const gapShare = 1 / 40;
  const boxes = (w) => {
    const gap = w * gapShare;
    const s = (w - gap * (panes - 1)) / panes;
    return Array.from({ length: panes }, (_, i) => ({ x: i * (s + gap), y: 0, w: s, h: s }));
  };
  const tokenName = (t) => (t === 0 ? "the class token (CLS)" : `patch ${t - 1} (row ${Math.floor((t - 1) / grid)}, column ${(t - 1) % grid})`);
  const attnRow = (h) => result.attn[layer].subarray((h * T + token) * T, (h * T + token + 1) * T);

  const drawPane = (g, box, overlay, label, c) =>
    patchPicture(g, box, picture, { grid, overlay, cmap: inferno, alpha: m.overlay_alpha, token, label }, c);

  const view = createCanvas(ctx, ui, {
    data,
    aspect: panes / (1 - gapShare * (panes - 1)), // panes squares of side s and (panes - 1) gaps
    label: "Your image, cut into patches, and both heads' attention of the selected token drawn on it",
    draw(g, w) {
      const c = palette(data);
      const bx = boxes(w);
      drawPane(g, bx[0], null, `${S}×${S}`, c);
      for (let h = 0; h < heads; h++) drawPane(g, bx[h + 1], attnRow(h), `head ${h + 1}`, c);
    },
  });
  ui.append(readout);
  view.canvas.classList.add("vb-drop");

  function describe() {
    title.textContent = `${name}: ${tokenName(token)}, attention in block ${layer + 1}`;
    const tok = result.blocks[layer].subarray(token * dim, (token + 1) * dim);
    numbers(values, tok, digits);
    numbers(logitsEl, result.logits, digits);
    readout.replaceChildren(
      `${tokenName(token)} after block ${layer + 1}: `,
      values,
      ". Logits: ",
      logitsEl,
      ` (softmax ${Array.from(result.prob, (p) => `${(100 * p).toFixed(1)}%`).join(", ")}).`,
    );
    for (const [l, b] of blockButtons.entries()) b.setAttribute("aria-pressed", String(l === layer));
    const most = [];
    for (let h = 0; h < heads; h++) {
      const r = attnRow(h);
      let best = 1;
      for (let i = 1; i < T; i++) if (r[i] > r[best]) best = i;
      most.push(`head ${h + 1} looks most at patch ${best - 1}`);
    }
    ctx.say(`${name}: selected ${tokenName(token)}, block ${layer + 1}; ${most.join(", ")}. Logits ${Array.from(result.logits, (v) => v.toFixed(digits)).join(", ")}.`);
  }
  function update() {
    view.paint();
    describe();
  }

  function pick(x, y) {
    for (const box of boxes(view.width)) {
      if (x >= box.x && x < box.x + box.w && y >= box.y && y < box.y + box.h) {
        const cw = box.w / grid;
        return 1 + Math.min(Math.floor((y - box.y) / cw), grid - 1) * grid + Math.min(Math.floor((x - box.x) / cw), grid - 1);
      }
    }
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
      if (event.key === "Escape") {
        token = 0;
        update();
        return true;
      }
      const moved = gridMove(event.key, Math.max(token - 1, 0), grid, grid);
      if (moved === null) return false;
      token = moved + 1;
      update();
      return true;
    },
    act() {
      layer = (layer + 1) % depth;
      update();
    },
  });

  /** Show and say what happened to the reader's file (null clears the note). */
  function tell(text, refused, spoken = text) {
    note.hidden = !text;
    note.textContent = text || "";
    note.classList.toggle("vb-note--refused", !!refused);
    if (spoken) ctx.say(spoken);
  }

  /** The file decoded to something drawImage takes, with its size; throws if it cannot be. */
  async function decode(file) {
    if (file.type === "image/svg+xml" || /\.svgz?$/i.test(file.name)) {
      // a drawing, not pixels: the browser draws it at its own size, if it declares one
      const url = URL.createObjectURL(file);
      try {
        const img = new Image();
        img.src = url;
        await img.decode();
        if (!img.naturalWidth || !img.naturalHeight) throw new Error("no size");
        return { source: img, width: img.naturalWidth, height: img.naturalHeight, close() {} };
      } finally {
        URL.revokeObjectURL(url);
      }
    }
    const bitmap = await createImageBitmap(file);
    return { source: bitmap, width: bitmap.width, height: bitmap.height, close: () => bitmap.close() };
  }

  /** Centre-crop to a square, resize to the model's input size, run the model. A file that
   *  cannot be read is refused with the reason, and the image shown before stays. */
  async function useFile(file) {
    if (!file) {
      tell("Nothing to read: choose or drop an image file (a photograph in JPEG, PNG, WebP or GIF).", true);
      return;
    }
    const keep = ` The model still shows ${name}.`;
    if (file.size === 0) {
      tell(`${file.name} is empty (0 bytes): there is no image in it.${keep}`, true);
      return;
    }
    if (file.type && !file.type.startsWith("image/")) {
      tell(`${file.name} is not an image (its type is ${file.type}): choose a photograph in JPEG, PNG, WebP or GIF.${keep}`, true);
      return;
    }
    let image;
    try {
      image = await decode(file);
    } catch {
      const svg = file.type === "image/svg+xml" || /\.svgz?$/i.test(file.name);
      tell(
        svg
          ? `${file.name} is an SVG drawing this browser cannot draw (the file is damaged, or gives the drawing no size): export it as PNG and try again.${keep}`
          : `${file.name} cannot be decoded: the file is damaged or cut short, or not an image format this browser reads.${keep}`,
        true,
      );
      return;
    }
    const side = Math.min(image.width, image.height);
    const canvas = document.createElement("canvas");
    canvas.width = S;
    canvas.height = S;
    const g = canvas.getContext("2d");
    g.drawImage(image.source, (image.width - side) / 2, (image.height - side) / 2, side, side, 0, 0, S, S);
    image.close();
    const px = g.getImageData(0, 0, S, S).data;
    const bytes = new Uint8Array(S * S * C);
    for (let i = 0; i < S * S; i++) for (let ch = 0; ch < C; ch++) bytes[i * C + ch] = px[4 * i + ch];
    const cropped = image.width !== image.height
      ? `${file.name} is ${image.width}×${image.height}: the model sees its centre ${side}×${side} square (${image.width > image.height ? "left and right edges" : "top and bottom"} cut off), resized to ${S}×${S}.`
      : `${file.name} (${image.width}×${image.height}) resized to ${S}×${S}.`;
    setImage(canvas, bytes, file.name, cropped);
  }
  function setImage(canvas, bytes, label, words = null) {
    picture = canvas;
    rgb = bytes;
    name = label;
    result = forward(m, data.arrays, toPixels(rgb, S, C));
    update();
    // after update(), whose own words it follows in the live region
    if (words) tell(words, false, `${words} ${ctx.live.textContent}`);
    else tell(null);
  }

  ctx.listen(choose, "click", () => input.click());
  ctx.listen(input, "change", async () => {
    await useFile(input.files[0]);
    input.value = ""; // choosing the same file again reads it again
  });
  ctx.listen(reset, "click", () => setImage(imageCanvas(data.arrays.face), data.arrays.face.data, "the face photograph"));
  ctx.listen(clsButton, "click", () => {
    token = 0;
    update();
  });
  for (const [l, b] of blockButtons.entries()) {
    ctx.listen(b, "click", () => {
      layer = l;
      update();
    });
  }
  ctx.listen(view.canvas, "dragover", (event) => {
    event.preventDefault();
    view.canvas.classList.add("vb-drop--over");
  });
  ctx.listen(view.canvas, "dragleave", () => view.canvas.classList.remove("vb-drop--over"));
  ctx.listen(view.canvas, "drop", (event) => {
    event.preventDefault();
    view.canvas.classList.remove("vb-drop--over");
    useFile(event.dataTransfer.files[0]);
  });
  update();
  return () => ui.remove();
}
