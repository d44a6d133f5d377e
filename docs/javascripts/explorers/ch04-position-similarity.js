// ch04/position-similarity: pick a position of the patch grid; the map shows the cosine
// similarity of its position embedding with every other one. Switch between fixed 2D sin-cos
// tables and the learned table of Chapter 9's model. Every value comes from
// figures/ch04/position-similarity.explorer.bin.
import { colormap, createCanvas, el, fmt, gridMove, interact, numbers, palette } from "./canvas.js";

export function mount(root, data, ctx) {
  const m = data.meta;
  const { tables, vmin, vmax, digits } = m;
  const viridis = colormap(data, "viridis");
  let which = 0;
  let [gh, gw] = tables[0].grid;
  let index = Math.floor(gh / 2) * gw + Math.floor(gw / 2);
  const sim = () => data.arrays[`sim${which}`].data;
  const rowOf = (i) => sim().subarray(i * gh * gw, (i + 1) * gh * gw);

  const ui = el("div", { className: "vb-ui" });
  const buttons = tables.map((t) => el("button", { type: "button", className: "md-button" }, t.name));
  ui.append(el("div", { className: "vb-controls", role: "group", "aria-label": "position table" }, ...buttons));
  const title = el("p", { className: "vb-title" });
  const readout = el("p", { className: "vb-readout" });
  ui.append(title);
  root.prepend(ui);

  // the map is a square of the canvas height; a colour bar and its labels sit to its right
  const barShare = 1 / 20;
  const labelShare = 1 / 5;
  const layout = (w, h) => ({ map: { x: 0, y: 0, w: h, h }, bar: { x: h * (1 + barShare), y: 0, w: h * barShare, h } });

  const view = createCanvas(ctx, ui, {
    data,
    aspect: 1 + 2 * barShare + labelShare,
    label: "Cosine similarity of the selected position's embedding with every position of the grid",
    draw(g, w, h) {
      const c = palette(data);
      const { map, bar } = layout(w, h);
      const row = rowOf(index);
      const cw = map.w / gw;
      const ch = map.h / gh;
      for (let i = 0; i < gh * gw; i++) {
        g.fillStyle = viridis.css((row[i] - vmin) / (vmax - vmin));
        g.fillRect(map.x + (i % gw) * cw, map.y + Math.floor(i / gw) * ch, Math.ceil(cw), Math.ceil(ch));
      }
      // the light theme's strong orange in both themes, as the chapter's figures draw it (the
      // dark page's pale orange all but vanished on the map's yellow end)
      g.strokeStyle = data.meta.palette.light.highlight;
      g.lineWidth = 3;
      g.strokeRect(map.x + (index % gw) * cw + 1.5, map.y + Math.floor(index / gw) * ch + 1.5, cw - 3, ch - 3);
      const steps = Math.ceil(bar.h);
      for (let s = 0; s < steps; s++) {
        g.fillStyle = viridis.css(1 - s / steps);
        g.fillRect(bar.x, bar.y + s, bar.w, 1.5);
      }
      g.fillStyle = c.fg;
      g.font = `12px ${getComputedStyle(g.canvas).fontFamily}`;
      g.textBaseline = "top";
      g.fillText(fmt(vmax, 0), bar.x + bar.w * 1.3, bar.y);
      g.textBaseline = "bottom";
      g.fillText(fmt(vmin, 0), bar.x + bar.w * 1.3, bar.y + bar.h);
      g.textBaseline = "middle";
      g.fillText("cosine", bar.x + bar.w * 1.3, bar.y + bar.h / 2);
    },
  });
  ui.append(readout);

  function describe() {
    const r = Math.floor(index / gw);
    const col = index % gw;
    const row = rowOf(index);
    let low = 0;
    for (let i = 1; i < row.length; i++) if (row[i] < row[low]) low = i;
    const right = col + 1 < gw ? row[index + 1] : row[index - 1];
    const below = r + 1 < gh ? row[index + gw] : row[index - gw];
    title.textContent = `${tables[which].name}: position (row ${r}, column ${col}) of a ${gh} × ${gw} grid`;
    const [a, b, lo] = [right, below, row[low]].map((v) => {
      const span = el("span", { className: "vb-values" });
      numbers(span, [v], digits);
      return span;
    });
    readout.replaceChildren(
      `similarity with the ${col + 1 < gw ? "right" : "left"} neighbour `, a,
      `, with the one ${r + 1 < gh ? "below" : "above"} `, b,
      `; lowest `, lo, ` at (row ${Math.floor(low / gw)}, column ${low % gw}).`,
    );
    for (const [i, btn] of buttons.entries()) btn.setAttribute("aria-pressed", String(i === which));
    ctx.say(`${tables[which].name}. Selected position row ${r}, column ${col}: similarity ${fmt(right, digits)} with its neighbour in the row, ${fmt(below, digits)} in the column, lowest ${fmt(row[low], digits)}.`);
  }
  function update() {
    view.paint();
    describe();
  }
  function setTable(k) {
    const y = (Math.floor(index / gw) + 0.5) / gh;
    const x = ((index % gw) + 0.5) / gw;
    which = k;
    [gh, gw] = tables[k].grid;
    index = Math.floor(y * gh) * gw + Math.floor(x * gw);
    update();
  }

  interact(ctx, view, {
    pick(x, y) {
      const { map } = layout(view.width, view.height);
      if (x < map.x || x >= map.x + map.w || y < map.y || y >= map.y + map.h) return null;
      return Math.min(Math.floor(((y - map.y) / map.h) * gh), gh - 1) * gw + Math.min(Math.floor(((x - map.x) / map.w) * gw), gw - 1);
    },
    select(i) {
      if (i === index) return;
      index = i;
      update();
    },
    key(event) {
      const moved = gridMove(event.key, index, gh, gw);
      if (moved === null) return false;
      index = moved;
      update();
      return true;
    },
    act() {
      setTable((which + 1) % tables.length);
    },
  });
  for (const [k, b] of buttons.entries()) ctx.listen(b, "click", () => setTable(k));
  update();
  return () => ui.remove();
}
