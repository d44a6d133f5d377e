// Small shared pieces of the explorers of Chapters 5-10: building elements, the book's
// palette (sent by the engine in meta.palette, the same as vitbook/plot.py's THEMES), colour
// maps (meta/arrays "cmap": 256 RGB rows from matplotlib), canvases sized for the screen, and
// number formatting. Nothing here types a number the book reports.
import { isDark } from "./core.js";

/** h("div", {class: "x", onclick: f}, child, "text") */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** The palette of the current theme from meta.palette ({light: {...}, dark: {...}}). */
export function palette(meta) {
  return meta.palette[isDark() ? "dark" : "light"];
}

/** "rgb(r,g,b)" for value t in [0, 1] on a 256-row colour map (Uint8Array of 768). */
export function cmapColor(lut, t) {
  const n = lut.length / 3;
  const i = Math.max(0, Math.min(n - 1, Math.round(t * (n - 1))));
  return `rgb(${lut[3 * i]},${lut[3 * i + 1]},${lut[3 * i + 2]})`;
}

/** Black or white text on the colour map at t: whichever has the higher WCAG contrast ratio
 *  (relative luminance of the sRGB colour), so every cell's number is readable (AA). */
export function inkOn(lut, t) {
  const n = lut.length / 3;
  const i = Math.max(0, Math.min(n - 1, Math.round(t * (n - 1))));
  const lin = (v) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const L = 0.2126 * lin(lut[3 * i]) + 0.7152 * lin(lut[3 * i + 1]) + 0.0722 * lin(lut[3 * i + 2]);
  return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000000" : "#ffffff";
}

/** A canvas whose backing store follows devicePixelRatio; draw in CSS pixels. */
export function canvas(cls, label) {
  const c = h("canvas", { class: cls, role: "img", "aria-label": label });
  return c;
}

export function fitCanvas(c, cssWidth, cssHeight) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.round(cssWidth * dpr);
  const hh = Math.round(cssHeight * dpr);
  if (c.width !== w || c.height !== hh) {
    c.width = w;
    c.height = hh;
  }
  c.style.width = `${cssWidth}px`;
  c.style.height = `${cssHeight}px`;
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  return g;
}

/** Digits with thin separators: 85798656n -> "85,798,656". Works for BigInt and integers. */
export function group(n) {
  return n.toLocaleString("en-US");
}

/** A number with `digits` significant digits, without exponent for ordinary sizes. */
export function sig(x, digits) {
  if (!Number.isFinite(x)) return String(x);
  return Number(x.toPrecision(digits)).toLocaleString("en-US", { maximumSignificantDigits: digits });
}

/** Draw a horizontal colour bar with its end labels into g at (x, y, w, hh). */
export function colorBar(g, lut, x, y, w, hh, lo, hi, ink, label) {
  const n = lut.length / 3;
  for (let i = 0; i < w; i++) {
    g.fillStyle = cmapColor(lut, i / Math.max(1, w - 1));
    g.fillRect(x + i, y, 1.5, hh);
  }
  g.fillStyle = ink;
  g.textBaseline = "top";
  g.textAlign = "left";
  g.fillText(lo, x, y + hh + 2);
  g.textAlign = "right";
  g.fillText(hi, x + w, y + hh + 2);
  if (label) {
    g.textAlign = "center";
    g.fillText(label, x + w / 2, y + hh + 2);
  }
  return n;
}

/** Softmax of an array (stable), into a new Float64Array. */
export function softmax(row) {
  let m = -Infinity;
  for (const v of row) m = Math.max(m, v);
  const out = new Float64Array(row.length);
  let s = 0;
  for (let i = 0; i < row.length; i++) {
    out[i] = Math.exp(row[i] - m);
    s += out[i];
  }
  for (let i = 0; i < row.length; i++) out[i] /= s;
  return out;
}

/** Median of repaint times, for the benchmark hook window.__vbRepaint. */
export function timed(name, fn) {
  return (...args) => {
    const t0 = performance.now();
    const r = fn(...args);
    const dt = performance.now() - t0;
    const store = (window.__vbRepaint ||= {});
    (store[name] ||= []).push(dt);
    return r;
  };
}
