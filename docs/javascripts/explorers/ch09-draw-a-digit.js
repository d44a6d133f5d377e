// Chapter 9: draw a digit on the 8x8 grid; the chapter's trained TinyViT8 (weights from the
// engine) classifies it here, in JavaScript (vit.js), as the stroke grows: class
// probabilities, each head's attention from the class token to the patches, and the rollout.
import { h, cmapColor, palette, fitCanvas, timed } from "./kit.js";
import { forward, rollout, weightsFrom } from "./vit.js";

/**
 * The grid of the attention maps in a canvas `width` px wide: {cols, per} (columns, and the
 * side of each map, with 8 px between maps). Each map is at least as wide as the widest title
 * (`titleW` px), so that no title runs into the next map's; as many columns as that allows,
 * one row on a wide screen; a map at most 96 px.
 */
export function mapGrid(width, titleW, count) {
  let cols = count;
  while (cols > 1 && Math.floor((width + 8) / cols) - 8 < Math.max(titleW, 56)) cols--;
  const per = Math.max(Math.min(96, Math.floor((width + 8) / cols) - 8), Math.min(titleW, width));
  return { cols, per };
}

export function mount(root, data, ctx) {
  const meta = data.meta;
  const cfg = meta.cfg;
  const w = weightsFrom(data.arrays);
  const lut = data.arrays.viridis.data;
  const [H, W] = cfg.image_hw;
  const [gh, gw] = cfg.grid;
  const P = cfg.patch_size;
  const images = data.arrays.images;
  const labels = data.arrays.labels.data;
  const nTest = images.shape[0];
  const img = new Float64Array(H * W);
  let cursor = [0, 0];
  let showCursor = false;
  let pen = true;
  let testIndex = -1;
  let source = "your drawing";
  let out = null;
  let roll = null;

  const board = h("canvas", { class: "vb2-board", tabindex: "0", role: "application", "aria-label": `drawing grid, ${H} by ${W} cells: draw with the mouse or a finger; arrow keys move, Space or Enter toggles a cell` });
  const penBtn = h("button", { type: "button", "aria-pressed": "true" }, "pen");
  const eraserBtn = h("button", { type: "button", "aria-pressed": "false" }, "eraser");
  const clearBtn = h("button", { type: "button" }, "clear");
  const loadBtn = h("button", { type: "button", class: "vb2-load" }, "load a test digit");
  const status = h("p", { class: "vb2-status" });
  const probs = h("canvas", { class: "vb2-probs", role: "img", "aria-label": "class probabilities" });
  const maps = h("canvas", { class: "vb2-maps", role: "img", "aria-label": "the class token's attention over the patches, per layer and head, and the rollout" });
  const ui = h("div", { class: "vb2-ui vb2-digit" },
    h("div", { class: "vb2-toolbar" }, penBtn, eraserBtn, clearBtn, loadBtn),
    h("div", { class: "vb2-row" }, board, h("div", { class: "vb2-side" }, status, probs)),
    maps);
  root.prepend(ui);

  function classify() {
    out = forward(w, cfg, img);
    roll = rollout(out.attn, out.T, out.heads, meta.rollout_alpha);
    root.dataset.logits = JSON.stringify(out.logits);
  }

  function best() {
    let k = 0;
    for (let i = 1; i < out.probs.length; i++) if (out.probs[i] > out.probs[k]) k = i;
    return k;
  }

  function boardSize() {
    return Math.min(280, Math.max(160, ui.clientWidth - 10));
  }

  const paint = timed("ch09", () => {
    const c = palette(meta);
    // the board
    const S = boardSize();
    const g = fitCanvas(board, S, S);
    const cell = S / W;
    g.fillStyle = c.bg;
    g.fillRect(0, 0, S, S);
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++) {
        const v = img[y * W + x];
        const ink = Math.round(255 * (1 - v));
        g.fillStyle = `rgb(${ink},${ink},${ink})`;
        g.fillRect(x * cell, y * cell, cell, cell);
      }
    g.strokeStyle = c.grid;
    g.lineWidth = 1;
    for (let i = 0; i <= W; i++) {
      g.beginPath();
      g.moveTo(i * cell, 0);
      g.lineTo(i * cell, S);
      g.moveTo(0, i * cell);
      g.lineTo(S, i * cell);
      g.stroke();
    }
    g.strokeStyle = c.orange;
    g.lineWidth = 2;
    g.strokeRect(0, 0, S, S);
    for (let i = 1; i < gw; i++) {
      g.beginPath();
      g.moveTo(i * P * cell, 0);
      g.lineTo(i * P * cell, S);
      g.stroke();
    }
    for (let i = 1; i < gh; i++) {
      g.beginPath();
      g.moveTo(0, i * P * cell);
      g.lineTo(S, i * P * cell);
      g.stroke();
    }
    if (showCursor) {
      g.strokeStyle = c.blue;
      g.lineWidth = 3;
      g.strokeRect(cursor[1] * cell + 2, cursor[0] * cell + 2, cell - 4, cell - 4);
    }
    // probabilities
    const PW = Math.max(150, Math.min(260, ui.clientWidth - S - 30 > 150 ? ui.clientWidth - S - 30 : ui.clientWidth - 10));
    const rowH = 18;
    const K = out.probs.length;
    const gp = fitCanvas(probs, PW, rowH * K + 4);
    gp.clearRect(0, 0, PW, rowH * K + 4);
    gp.font = "12px sans-serif";
    gp.textBaseline = "middle";
    const k = best();
    for (let i = 0; i < K; i++) {
      const y = 2 + i * rowH;
      gp.fillStyle = c.fg;
      gp.textAlign = "left";
      gp.fillText(meta.classes[i], 2, y + rowH / 2);
      const bw = (PW - 70) * out.probs[i];
      gp.fillStyle = i === k ? c.orange : c.blue;
      gp.fillRect(18, y + 3, bw, rowH - 6);
      gp.fillStyle = c.fg;
      gp.fillText(`${(out.probs[i] * 100).toFixed(1)}%`, 22 + bw, y + rowH / 2);
    }
    // maps: each layer x head CLS row, then the rollout
    const panels = [];
    out.attn.forEach((A, l) => {
      for (let hd = 0; hd < out.heads; hd++) {
        const row = [];
        for (let j = 1; j < out.T; j++) row.push(A[hd * out.T * out.T + j]);
        panels.push([`layer ${l + 1} head ${hd + 1}`, row]);
      }
    });
    const rr = [];
    for (let j = 1; j < out.T; j++) rr.push(roll[j]);
    panels.push(["rollout", rr]);
    const MW = Math.max(200, ui.clientWidth);
    const gm = fitCanvas(maps, MW, 1);
    gm.font = "11px sans-serif";
    const titleW = Math.ceil(Math.max(...panels.map(([t]) => gm.measureText(t).width)));
    const { cols, per } = mapGrid(MW, titleW, panels.length);
    const rows = Math.ceil(panels.length / cols);
    const MH = rows * (per + 22) + 30;
    fitCanvas(maps, MW, MH);
    gm.clearRect(0, 0, MW, MH);
    gm.font = "11px sans-serif";
    panels.forEach(([title, row], p) => {
      const x0 = (p % cols) * (per + 8);
      const y0 = Math.floor(p / cols) * (per + 22);
      gm.fillStyle = c.fg;
      gm.textAlign = "left";
      gm.textBaseline = "top";
      gm.fillText(title, x0, y0);
      const cs = per / gw;
      for (let gy = 0; gy < gh; gy++)
        for (let gx = 0; gx < gw; gx++) {
          gm.fillStyle = cmapColor(lut, row[gy * gw + gx]);
          gm.fillRect(x0 + gx * cs, y0 + 14 + gy * cs, cs, cs);
        }
      // the drawing, faint, over the map
      const px = per / W;
      for (let y = 0; y < H; y++)
        for (let x = 0; x < W; x++) {
          const v = img[y * W + x];
          if (v <= 0) continue;
          gm.fillStyle = `rgba(255,255,255,${0.55 * v})`;
          gm.fillRect(x0 + x * px, y0 + 14 + y * px, px, px);
        }
    });
    // one colour bar for every map: weights from 0 to 1
    const by = rows * (per + 22) + 2;
    const bw = Math.min(220, MW - 10);
    for (let i = 0; i < bw; i++) {
      gm.fillStyle = cmapColor(lut, i / (bw - 1));
      gm.fillRect(i, by, 1.5, 10);
    }
    gm.fillStyle = c.fg;
    gm.textBaseline = "top";
    gm.textAlign = "left";
    gm.fillText("0", 0, by + 12);
    gm.textAlign = "right";
    gm.fillText("1", bw, by + 12);
    gm.textAlign = "center";
    gm.fillText("attention weight (CLS → patch)", bw / 2, by + 12);
    status.textContent = `${source}: the model says ${meta.classes[k]} (${(out.probs[k] * 100).toFixed(1)}%)`;
  });

  function update(words) {
    classify();
    paint();
    const k = best();
    ctx.say(`${words ? `${words} ` : ""}The model says ${meta.classes[k]}, ${(out.probs[k] * 100).toFixed(1)}%.`);
  }

  function cellAt(ev) {
    const r = board.getBoundingClientRect();
    const x = Math.floor(((ev.clientX - r.left) / r.width) * W);
    const y = Math.floor(((ev.clientY - r.top) / r.height) * H);
    if (x < 0 || y < 0 || x >= W || y >= H) return null;
    return [y, x];
  }

  let drawing = false;
  function stroke(ev) {
    const c = cellAt(ev);
    if (!c) return;
    const i = c[0] * W + c[1];
    const v = pen ? 1 : 0;
    if (img[i] === v) return;
    img[i] = v;
    source = "your drawing";
    cursor = c;
    update();
  }
  ctx.listen(board, "pointerdown", (ev) => {
    drawing = true;
    showCursor = false;
    board.setPointerCapture?.(ev.pointerId);
    stroke(ev);
    ev.preventDefault();
  });
  ctx.listen(board, "pointermove", (ev) => drawing && stroke(ev));
  ctx.listen(board, "pointerup", () => (drawing = false));
  ctx.listen(board, "pointercancel", () => (drawing = false));
  ctx.listen(board, "focus", () => {
    showCursor = true;
    paint();
  });
  ctx.listen(board, "blur", () => {
    showCursor = false;
    paint();
  });
  ctx.listen(board, "keydown", (ev) => {
    const [y, x] = cursor;
    if (ev.key === "ArrowRight") cursor = [y, Math.min(W - 1, x + 1)];
    else if (ev.key === "ArrowLeft") cursor = [y, Math.max(0, x - 1)];
    else if (ev.key === "ArrowDown") cursor = [Math.min(H - 1, y + 1), x];
    else if (ev.key === "ArrowUp") cursor = [Math.max(0, y - 1), x];
    else if (ev.key === " " || ev.key === "Enter") {
      ev.preventDefault();
      const i = y * W + x;
      img[i] = img[i] > 0 ? 0 : 1;
      source = "your drawing";
      update(`Row ${y + 1}, column ${x + 1} ${img[i] > 0 ? "on" : "off"}.`);
      return;
    } else return;
    ev.preventDefault();
    showCursor = true;
    paint();
    ctx.say(`Row ${cursor[0] + 1}, column ${cursor[1] + 1}: ${img[cursor[0] * W + cursor[1]] > 0 ? "on" : "off"}.`);
  });
  const setPen = (p) => {
    pen = p;
    penBtn.setAttribute("aria-pressed", String(p));
    eraserBtn.setAttribute("aria-pressed", String(!p));
    ctx.say(p ? "Pen: drawing adds ink." : "Eraser: drawing removes ink.");
  };
  ctx.listen(penBtn, "click", () => setPen(true));
  ctx.listen(eraserBtn, "click", () => setPen(false));
  ctx.listen(clearBtn, "click", () => {
    img.fill(0);
    source = "empty grid";
    update("Cleared.");
  });
  ctx.listen(loadBtn, "click", () => {
    testIndex = (testIndex + 1) % nTest;
    const base = testIndex * H * W;
    for (let i = 0; i < H * W; i++) img[i] = images.data[base + i];
    source = `test digit ${testIndex + 1} of ${nTest}, label ${meta.classes[labels[testIndex]]}`;
    root.dataset.test = String(testIndex);
    update(`Test digit ${testIndex + 1}, labelled ${meta.classes[labels[testIndex]]}.`);
  });
  ctx.onTheme(() => paint());
  const ro = new ResizeObserver(() => paint());
  ro.observe(ui);
  classify();
  source = "empty grid";
  paint();
  return () => {
    ro.disconnect();
    ui.remove();
  };
}
