// Chapter 7: GELU against ReLU. The curves, their slopes and GELU's minimum are the chapter's
// (computed with torch); the pointer, a tap or the arrow keys pick an x and the page reads
// x, GELU(x), ReLU(x) and both slopes there.
import { h, palette, fitCanvas, timed } from "./kit.js";

export function mount(root, data, ctx) {
  const meta = data.meta;
  const A = Object.fromEntries(Object.entries(data.arrays).map(([k, v]) => [k, v.data]));
  const n = A.x.length;
  let minIdx = 0;
  for (let i = 0; i < n; i++) if (Math.abs(A.x[i] - meta.min.x) < Math.abs(A.x[minIdx] - meta.min.x)) minIdx = i;
  let idx = -1;
  const cv = h("canvas", { tabindex: "0", role: "application", "aria-label": "GELU and ReLU, values and slopes: move the pointer or use the arrow keys; Home and End jump to the ends, Enter to GELU's minimum" });
  const read = h("p", { class: "vb2-arith" });
  const ui = h("div", { class: "vb2-ui vb2-gelu" }, cv, read);
  root.prepend(ui);
  const range = (arr) => [Math.min(...arr), Math.max(...arr)];
  // each series' label in free space beside its curve, [x, y] in data units and its alignment
  // (at the curves' right ends they ran over both lines, where the curves meet)
  const panels = [
    {
      title: "values",
      series: [
        ["relu", "ReLU", "muted", [1.2, 1.9, "right"]],
        ["gelu", "GELU", "blue", [1.5, 0.35, "left"]],
      ],
    },
    {
      title: "slopes",
      series: [
        ["relu_slope", "ReLU′", "muted", [-3.8, 0.08, "left"]],
        ["gelu_slope", "GELU′", "blue", [0.9, 0.5, "left"]],
      ],
    },
  ];
  for (const p of panels) {
    const all = p.series.flatMap(([k]) => Array.from(A[k]));
    const [lo, hi] = range(all);
    const pad = (hi - lo) / 12;
    p.lo = lo - pad;
    p.hi = hi + pad;
  }
  const [x0, x1] = [A.x[0], A.x[n - 1]];
  let layout = null;

  const paint = timed("ch07", () => {
    const c = palette(meta);
    const W = Math.max(240, ui.clientWidth);
    const side = W >= 560;
    const pw = side ? (W - 20) / 2 : W;
    const ph = Math.min(240, Math.round(pw * 0.62));
    const H = side ? ph : 2 * ph + 16;
    const g = fitCanvas(cv, W, H);
    g.clearRect(0, 0, W, H);
    g.font = "12px sans-serif";
    layout = panels.map((p, i) => ({ p, x: side ? i * (pw + 20) : 0, y: side ? 0 : i * (ph + 16), w: pw, h: ph }));
    for (const L of layout) {
      const m = { l: 36, r: 8, t: 18, b: 20 };
      L.m = m;
      const X = (x) => L.x + m.l + ((x - x0) / (x1 - x0)) * (L.w - m.l - m.r);
      const Y = (y) => L.y + m.t + (1 - (y - L.p.lo) / (L.p.hi - L.p.lo)) * (L.h - m.t - m.b);
      L.X = X;
      L.Y = Y;
      g.strokeStyle = c.grid;
      g.lineWidth = 1;
      g.beginPath();
      g.moveTo(X(x0), Y(0));
      g.lineTo(X(x1), Y(0));
      g.moveTo(X(0), Y(L.p.lo));
      g.lineTo(X(0), Y(L.p.hi));
      g.stroke();
      g.fillStyle = c.muted;
      g.textAlign = "center";
      g.textBaseline = "top";
      for (let t = Math.ceil(x0); t <= Math.floor(x1); t++) g.fillText(String(t), X(t), L.y + L.h - m.b + 4);
      g.textAlign = "right";
      g.textBaseline = "middle";
      for (let t = Math.ceil(L.p.lo); t <= Math.floor(L.p.hi); t++) g.fillText(String(t), L.x + m.l - 4, Y(t));
      g.fillStyle = c.fg;
      g.textAlign = "left";
      g.textBaseline = "top";
      g.fillText(L.p.title, L.x + m.l, L.y);
      for (const [k, label, col, [lx, ly, align]] of L.p.series) {
        g.strokeStyle = c[col];
        g.lineWidth = 2;
        g.beginPath();
        for (let i = 0; i < n; i++) (i ? g.lineTo : g.moveTo).call(g, X(A.x[i]), Y(A[k][i]));
        g.stroke();
        g.fillStyle = c[col];
        g.textAlign = align;
        g.textBaseline = "bottom";
        g.fillText(label, X(lx), Y(ly));
      }
      if (L.p.title === "values") {
        g.fillStyle = c.orange;
        g.beginPath();
        g.arc(X(meta.min.x), Y(meta.min.y), 4, 0, 2 * Math.PI);
        g.fill();
        // above the zero line, up and to the left of the point (below it, the label met the
        // tick labels of the x axis)
        g.textAlign = "right";
        g.textBaseline = "bottom";
        g.fillText("minimum", X(meta.min.x) - 4, Y(0) - 3);
      }
      if (idx >= 0) {
        g.strokeStyle = c.orange;
        g.lineWidth = 1;
        g.beginPath();
        g.moveTo(X(A.x[idx]), Y(L.p.lo));
        g.lineTo(X(A.x[idx]), Y(L.p.hi));
        g.stroke();
        for (const [k, , col] of L.p.series) {
          g.fillStyle = c[col];
          g.beginPath();
          g.arc(X(A.x[idx]), Y(A[k][idx]), 4, 0, 2 * Math.PI);
          g.fill();
        }
      }
    }
  });

  const f = (v) => (Object.is(v, -0) ? 0 : v).toFixed(4);
  function pick(i) {
    idx = Math.max(0, Math.min(n - 1, i));
    paint();
    const text =
      `x = ${f(A.x[idx])}: GELU ${f(A.gelu[idx])}, ReLU ${f(A.relu[idx])}; ` +
      `slopes GELU′ ${f(A.gelu_slope[idx])}, ReLU′ ${f(A.relu_slope[idx])}` +
      (idx === minIdx ? ` (GELU's minimum, x = ${f(meta.min.x)}, GELU = ${f(meta.min.y)})` : "");
    read.textContent = text;
    ctx.say(text);
  }
  function at(ev) {
    const r = cv.getBoundingClientRect();
    const px = ev.clientX - r.left;
    const py = ev.clientY - r.top;
    // the panel under the pointer: side by side on a wide screen, stacked on a narrow one, so
    // both coordinates decide (the nearest panel when the pointer is in the gap between them)
    const gap = (l) => Math.max(l.x - px, px - (l.x + l.w), 0) + Math.max(l.y - py, py - (l.y + l.h), 0);
    const L = layout.reduce((best, l) => (gap(l) < gap(best) ? l : best));
    const x = x0 + ((px - L.x - L.m.l) / (L.w - L.m.l - L.m.r)) * (x1 - x0);
    let best = 0;
    for (let i = 0; i < n; i++) if (Math.abs(A.x[i] - x) < Math.abs(A.x[best] - x)) best = i;
    pick(best);
  }
  ctx.listen(cv, "pointermove", at);
  ctx.listen(cv, "pointerdown", at);
  ctx.listen(cv, "keydown", (ev) => {
    const step = ev.shiftKey ? 10 : 1;
    const start = idx < 0 ? minIdx : idx;
    if (ev.key === "ArrowRight" || ev.key === "ArrowUp") pick(start + step);
    else if (ev.key === "ArrowLeft" || ev.key === "ArrowDown") pick(start - step);
    else if (ev.key === "Home") pick(0);
    else if (ev.key === "End") pick(n - 1);
    else if (ev.key === "Enter" || ev.key === " ") pick(minIdx);
    else return;
    ev.preventDefault();
  });
  ctx.onTheme(() => paint());
  const ro = new ResizeObserver(() => paint());
  ro.observe(ui);
  paint();
  return () => {
    ro.disconnect();
    ui.remove();
  };
}
