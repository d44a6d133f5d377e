// ch02/patch-size: choose the patch size P; the grid, the raster order, the token count N and the
// attention entries follow; hover a patch for its index and the first values of its flattened
// vector. Sizes, counts and the image come from figures/ch02/patch-size.explorer.bin.
import { createCanvas, el, gridLines, gridMove, imageCanvas, interact, numbers, palette, tag } from "./canvas.js";

export function mount(root, data, ctx) {
  const m = data.meta;
  const { image: S, channels: C, sizes, digits } = m;
  const rgb = data.arrays.image.data;
  const face = imageCanvas(data.arrays.image);
  let which = sizes.indexOf(m.initial);
  let index = 0;
  const grid = () => S / sizes[which];
  const count = (n) => n.toLocaleString("en-US");

  const ui = el("div", { className: "vb-ui" });
  const buttons = sizes.map((p) => el("button", { type: "button", className: "md-button" }, `P = ${p}`));
  ui.append(el("div", { className: "vb-controls", role: "group", "aria-label": "patch size" }, ...buttons));
  const title = el("p", { className: "vb-title" });
  const readout = el("p", { className: "vb-readout" });
  const values = el("span", { className: "vb-values" });
  ui.append(title);
  root.prepend(ui);

  const gapShare = 1 / 40;
  const boxes = (w) => {
    const gap = w * gapShare;
    const s = (w - gap) / 2;
    return [{ x: 0, y: 0, w: s, h: s }, { x: s + gap, y: 0, w: s, h: s }];
  };

  const view = createCanvas(ctx, ui, {
    data,
    aspect: 2 / (1 - gapShare),
    label: "The face cut into patches of the chosen size, numbered in raster order, and the selected patch enlarged",
    draw(g, w) {
      const c = palette(data);
      const [a, b] = boxes(w);
      const G = grid();
      const P = sizes[which];
      const cw = a.w / G;
      g.imageSmoothingEnabled = true;
      g.drawImage(face, a.x, a.y, a.w, a.h);
      gridLines(g, a, G, c.bg, 0.6);
      // raster order: a line through the centres of the patches up to the selected one
      g.strokeStyle = c.highlight;
      g.lineWidth = 1.5;
      g.beginPath();
      for (let i = 0; i <= index; i++) {
        const x = a.x + ((i % G) + 0.5) * cw;
        const y = a.y + (Math.floor(i / G) + 0.5) * cw;
        if (i === 0) g.moveTo(x, y);
        else g.lineTo(x, y);
      }
      g.stroke();
      // numbers in the cells when they fit
      const font = getComputedStyle(g.canvas).fontFamily;
      const px = Math.min(cw * 0.35, 13);
      if (px >= 10) {
        g.font = `${px}px ${font}`;
        g.textAlign = "center";
        g.textBaseline = "middle";
        for (let i = 0; i < G * G; i++) {
          const x = a.x + ((i % G) + 0.5) * cw;
          const y = a.y + (Math.floor(i / G) + 0.5) * cw;
          g.fillStyle = c.bg;
          g.globalAlpha = 0.7;
          g.fillRect(x - px, y - px / 2 - 1, 2 * px, px + 2);
          g.globalAlpha = 1;
          g.fillStyle = c.fg;
          g.fillText(String(i), x, y);
        }
        g.textAlign = "start";
      }
      g.strokeStyle = c.highlight;
      g.lineWidth = 3;
      g.strokeRect(a.x + (index % G) * cw + 1.5, a.y + Math.floor(index / G) * cw + 1.5, cw - 3, cw - 3);
      g.imageSmoothingEnabled = false;
      g.drawImage(face, (index % G) * P, Math.floor(index / G) * P, P, P, b.x, b.y, b.w, b.h);
      g.strokeStyle = c.highlight;
      g.strokeRect(b.x + 1.5, b.y + 1.5, b.w - 3, b.h - 3);
      tag(g, `patch ${index}: ${P}×${P}×${C}`, b.x + 4, b.y + 4, c);
    },
  });
  ui.append(readout);

  /** The first values of patch i flattened in (channel, row, column) order, as patchify does. */
  function firstValues(i) {
    const P = sizes[which];
    const G = grid();
    const r0 = Math.floor(i / G) * P;
    const c0 = (i % G) * P;
    return Array.from({ length: m.first_values }, (_, f) => {
      const ch = Math.floor(f / (P * P));
      const y = r0 + (Math.floor(f / P) % P);
      const x = c0 + (f % P);
      return rgb[(y * S + x) * C + ch] / 255;
    });
  }

  function describe() {
    const P = sizes[which];
    const G = grid();
    const N = m.tokens[which];
    title.textContent = `P = ${P}: a grid of ${G} × ${G}, N = ${count(N)} tokens of ${count(m.flat[which])} numbers; (N + 1)² = ${count(m.entries[which])} attention entries per head.`;
    const vals = firstValues(index);
    numbers(values, vals, digits);
    const where = `patch ${index} (row ${Math.floor(index / G)}, column ${index % G})`;
    readout.replaceChildren(`${where}, first ${m.first_values} of its ${count(m.flat[which])} values: `, values, " …");
    for (const [i, b] of buttons.entries()) b.setAttribute("aria-pressed", String(i === which));
    ctx.say(`Patch size ${P}: ${count(N)} tokens, ${count(m.entries[which])} attention entries per head. Selected ${where}; it starts ${vals.map((v) => v.toFixed(digits)).join(", ")}.`);
  }
  function update() {
    view.paint();
    describe();
  }
  function setSize(k) {
    // keep the selection over the same pixels
    const G = grid();
    const P = sizes[which];
    const y = (Math.floor(index / G) + 0.5) * P;
    const x = ((index % G) + 0.5) * P;
    which = k;
    const Q = sizes[which];
    index = Math.floor(y / Q) * grid() + Math.floor(x / Q);
    update();
  }

  interact(ctx, view, {
    pick(x, y) {
      const [a] = boxes(view.width);
      if (x < a.x || x >= a.x + a.w || y < a.y || y >= a.y + a.h) return null;
      const G = grid();
      return Math.min(Math.floor(((y - a.y) / a.h) * G), G - 1) * G + Math.min(Math.floor(((x - a.x) / a.w) * G), G - 1);
    },
    select(i) {
      if (i === index) return;
      index = i;
      update();
    },
    key(event) {
      const moved = gridMove(event.key, index, grid(), grid());
      if (moved === null) return false;
      index = moved;
      update();
      return true;
    },
    act() {
      setSize((which + 1) % sizes.length);
    },
  });
  for (const [k, b] of buttons.entries()) ctx.listen(b, "click", () => setSize(k));
  update();
  return () => ui.remove();
}
