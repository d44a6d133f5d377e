// Drawing helpers shared by the explorers: the house palette and colour maps (both read from
// the explorer's data, written by vitbook/explore.py from vitbook/plot.py, so no colour is
// typed twice), crisp canvases that follow their container's width, cell picking, keyboard
// moves on a grid, and a repaint timer the benchmark reads.
import { isDark } from "./core.js";

/** The palette of the current theme: {bg, fg, muted, grid, blue, orange, ..., highlight}. */
export function palette(data) {
  return data.meta.palette[isDark() ? "dark" : "light"];
}

/** A colour map from the data (``cmap_<name>``, n x 3 bytes): t in [0, 1] -> [r, g, b]. */
export function colormap(data, name) {
  const table = data.arrays[`cmap_${name}`];
  const lut = table.data;
  const n = table.shape[0];
  const last = n - 1;
  const map = (t) => {
    const i = Math.round(Math.min(Math.max(t, 0), 1) * last) * 3;
    return [lut[i], lut[i + 1], lut[i + 2]];
  };
  map.css = (t, alpha) => {
    const [r, g, b] = map(t);
    return alpha === undefined ? `rgb(${r},${g},${b})` : `rgba(${r},${g},${b},${alpha})`;
  };
  return map;
}

/** Black or white text on colour [r, g, b], as vitbook.plot.text_color_for decides. */
export function inkOn([r, g, b]) {
  const luma = (0.299 * r + 0.587 * g + 0.114 * b) / 255;
  return luma > 0.5 ? "#000000" : "#ffffff";
}

/** matplotlib's SymLogNorm mapped onto [0, 1] for values in [-lim, lim]. */
export function symlogNorm({ linthresh, linscale, base }, lim) {
  const scale = linscale / (1 - 1 / base);
  const f = (x) => {
    const a = Math.abs(x);
    const y = a <= linthresh ? a * scale : linthresh * (scale + Math.log(a / linthresh) / Math.log(base));
    return Math.sign(x) * y;
  };
  const top = f(lim);
  return (x) => 0.5 + (0.5 * f(x)) / top;
}

/**
 * A canvas that fills its container's width at a fixed aspect ratio (so the page does not
 * move when it is drawn) and draws crisply at the device's pixel ratio. draw(g, w, h) is
 * called with a 2D context in CSS pixels, after the canvas is filled with the theme's page
 * colour when data is given; the returned object's paint() repaints.
 */
export function createCanvas(ctx, parent, { aspect, label, draw, data }) {
  const canvas = document.createElement("canvas");
  canvas.className = "vb-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", label);
  canvas.style.aspectRatio = String(aspect);
  parent.append(canvas);
  const g = canvas.getContext("2d");
  const view = { canvas, g, width: 0, height: 0 };
  view.paint = () => {
    const store = (window.vbRepaintTimes ||= {});
    store.paints = (store.paints || 0) + 1;
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const h = w / aspect;
    if (!w) return;
    if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
      canvas.width = Math.round(w * ratio);
      canvas.height = Math.round(h * ratio);
    }
    view.width = w;
    view.height = h;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    if (data) {
      // the page colour of the theme, so gaps and margins match the static figures
      g.fillStyle = palette(data).bg;
      g.fillRect(0, 0, w, h);
    }
    draw(g, w, h);
  };
  ctx.onResize(canvas, view.paint);
  ctx.onTheme(view.paint);
  return view;
}

/** The image (H x W x 3 bytes) as a canvas to draw from (scaled with smoothing off). */
export function imageCanvas(array) {
  const [h, w] = array.shape;
  const src = array.data;
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const g = canvas.getContext("2d");
  const img = g.createImageData(w, h);
  for (let i = 0, j = 0; i < w * h; i++, j += 3) {
    img.data[4 * i] = src[j];
    img.data[4 * i + 1] = src[j + 1];
    img.data[4 * i + 2] = src[j + 2];
    img.data[4 * i + 3] = 255;
  }
  g.putImageData(img, 0, 0);
  return canvas;
}

/** Index of the cell of a rows x cols grid drawn in box {x, y, w, h} under (px, py), or -1. */
export function cellAt(box, rows, cols, px, py) {
  const c = Math.floor(((px - box.x) / box.w) * cols);
  const r = Math.floor(((py - box.y) / box.h) * rows);
  return r >= 0 && r < rows && c >= 0 && c < cols ? r * cols + c : -1;
}

/** Where an arrow key moves index on a rows x cols grid (null for other keys). */
export function gridMove(key, index, rows, cols) {
  const r = Math.floor(index / cols);
  const c = index % cols;
  switch (key) {
    case "ArrowLeft":
      return r * cols + Math.max(c - 1, 0);
    case "ArrowRight":
      return r * cols + Math.min(c + 1, cols - 1);
    case "ArrowUp":
      return Math.max(r - 1, 0) * cols + c;
    case "ArrowDown":
      return Math.min(r + 1, rows - 1) * cols + c;
    case "Home":
      return 0;
    case "End":
      return rows * cols - 1;
    default:
      return null;
  }
}

/**
 * Mouse hover, touch tap and keyboard on a canvas: pick(x, y) maps a point (CSS pixels) to a
 * selection or null, select(sel, how) applies it, key(event) handles arrows (return true when
 * handled), act() answers Enter and Space.
 */
export function interact(ctx, view, { pick, select, key, act }) {
  const { canvas } = view;
  // a pointer move is timed from the event to the end of the repaint (and the new words)
  const timer = repaintTimer(ctx.id);
  const at = (event) => {
    const rect = canvas.getBoundingClientRect();
    return pick(event.clientX - rect.left, event.clientY - rect.top);
  };
  ctx.listen(canvas, "pointermove", (event) => {
    if (event.pointerType !== "mouse") return;
    timer(() => {
      const sel = at(event);
      if (sel !== null) select(sel, "hover");
    });
  });
  ctx.listen(canvas, "pointerdown", (event) => {
    const sel = at(event);
    if (sel !== null) select(sel, "tap");
  });
  ctx.listen(canvas, "keydown", (event) => {
    if ((event.key === "Enter" || event.key === " ") && act) {
      event.preventDefault();
      act();
    } else if (key && key(event)) {
      event.preventDefault();
    }
  });
}

/** A small HTML element: el("p", {className: "x"}, "text", child...). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k.startsWith("data-") || k.startsWith("aria-") || k === "role") node.setAttribute(k, v);
    else node[k] = v;
  }
  node.append(...children);
  return node;
}

/** A number as the explorers print it (digits after the point, a real minus sign). */
export function fmt(x, digits) {
  return x.toFixed(digits).replace("-", "−");
}

/** A row of numbers, each in <span data-value="..."> so tests can read the exact values. */
export function numbers(container, values, digits) {
  container.classList.add("vb-list");
  container.replaceChildren(
    ...Array.from(values, (v, i) =>
      el("span", { className: "vb-num", "data-value": String(v), "data-index": String(i) }, fmt(v, digits)),
    ),
  );
}

/**
 * Wraps a pointer-move handler to record how long it took (performance.now), for
 * benchmarks/bench_explorers.py; moves that change nothing are not recorded.
 */
export function repaintTimer(id) {
  const store = (window.vbRepaintTimes ||= {});
  return (fn) => {
    const before = store.paints || 0;
    const t0 = performance.now();
    fn();
    const t1 = performance.now();
    if ((store.paints || 0) === before) return;
    (store[id] ||= []).push(t1 - t0);
    if (store[id].length > 1000) store[id].shift();
  };
}

/** Lay a label on a canvas with a background box so it reads over any picture. */
export function tag(g, text, x, y, colours) {
  g.font = `600 12px ${getComputedStyle(g.canvas).fontFamily}`;
  const w = g.measureText(text).width;
  g.fillStyle = colours.bg;
  g.globalAlpha = 0.85;
  g.fillRect(x, y, w + 8, 18);
  g.globalAlpha = 1;
  g.fillStyle = colours.fg;
  g.textBaseline = "middle";
  g.fillText(text, x + 4, y + 9);
}

/** The lines between the cells of a `grid` × `grid` picture drawn in `box` (patch boundaries). */
export function gridLines(g, box, grid, colour, alpha = 0.5) {
  const cw = box.w / grid;
  g.strokeStyle = colour;
  g.globalAlpha = alpha;
  g.lineWidth = 1;
  g.beginPath();
  for (let k = 1; k < grid; k++) {
    g.moveTo(box.x + k * cw, box.y);
    g.lineTo(box.x + k * cw, box.y + box.h);
    g.moveTo(box.x, box.y + k * cw);
    g.lineTo(box.x + box.w, box.y + k * cw);
  }
  g.stroke();
  g.globalAlpha = 1;
}

/**
 * A picture cut into `grid` × `grid` patches, drawn in `box`: an optional `overlay` (one weight
 * per token, the class token first and not drawn) in colour map `cmap` scaled to its largest patch
 * weight, the patch grid, the outline of the selected `token` (> 0) and an optional `label`.
 */
export function patchPicture(g, box, image, { grid, overlay, cmap, alpha, token, label }, c) {
  g.imageSmoothingEnabled = true;
  g.drawImage(image, box.x, box.y, box.w, box.h);
  const cw = box.w / grid;
  const cells = grid * grid;
  if (overlay) {
    let top = 0;
    for (let i = 1; i <= cells; i++) top = Math.max(top, overlay[i]);
    for (let i = 1; i <= cells; i++) {
      g.fillStyle = cmap.css(overlay[i] / top, alpha);
      g.fillRect(box.x + ((i - 1) % grid) * cw, box.y + Math.floor((i - 1) / grid) * cw, cw, cw);
    }
  }
  gridLines(g, box, grid, c.bg);
  if (token > 0) {
    g.strokeStyle = c.highlight;
    g.lineWidth = 3;
    const x = box.x + ((token - 1) % grid) * cw;
    g.strokeRect(x + 1.5, box.y + Math.floor((token - 1) / grid) * cw + 1.5, cw - 3, cw - 3);
  }
  if (label) tag(g, label, box.x + 4, box.y + 4, c);
}
