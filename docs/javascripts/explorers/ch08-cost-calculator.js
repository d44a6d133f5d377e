// Chapter 8's cost calculator: vitbook.calc (param_breakdown, macs, token_pairs,
// token_pairs_ratio) ported line by line, in BigInt so every count is exact. The presets, the
// reference size and the book's refusal messages come from the engine (ch08_explore.py).
import { h, group, palette, fitCanvas, timed } from "./kit.js";

const B = BigInt;

/** ViTConfig's checks, in its order, worded by the templates the engine cut from them. */
export function refusal(cfg, meta) {
  const side = cfg.image_size;
  const P = cfg.patch_size;
  const over = side % P;
  if (over) {
    const lo = side - over;
    const hi = lo + P;
    const t = over === 1 ? meta.refusals.size_one : meta.refusals.size_many;
    return fill(t, { size: side, P, over, lo, hi });
  }
  if (cfg.dim % cfg.heads) {
    const q = Math.floor(cfg.dim / cfg.heads);
    const lo = Math.max(cfg.heads, q * cfg.heads);
    const hi = (q + 1) * cfg.heads;
    return fill(meta.refusals.heads, { dim: cfg.dim, heads: cfg.heads, lo, hi });
  }
  return null;
}

function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));
}

/** param_breakdown(cfg): every key of the Python dict, as BigInt. */
export function paramBreakdown(cfg) {
  const D = B(cfg.dim);
  const C = B(cfg.in_chans);
  const P = B(cfg.patch_size);
  const M = B(Math.trunc(cfg.dim * cfg.mlp_ratio));
  const K = B(cfg.num_classes);
  const N = B((cfg.image_size / cfg.patch_size) ** 2);
  const T = N + 1n;
  const p = {
    patch_embed: C * P * P * D + D,
    cls_token: D,
    pos_embed: cfg.pos_embed === "learned" ? T * D : 0n,
    qkv: D * 3n * D + (cfg.qkv_bias ? 3n * D : 0n),
    proj: D * D + D,
    mlp: D * M + M + (M * D + D),
    norms: 2n * 2n * D,
  };
  p.attn = p.qkv + p.proj;
  p.block = p.attn + p.mlp + p.norms;
  const L = B(cfg.depth);
  p.blocks = L * p.block;
  p.attn_all = L * p.attn;
  p.mlp_all = L * p.mlp;
  p.norms_all = L * p.norms;
  p.norm = 2n * D;
  // the pre-training head's hidden tanh layer (representation_size R), when there is one
  const R = B(cfg.representation_size || 0);
  p.pre_logits = R > 0n ? D * R + R : 0n;
  p.head = K > 0n ? (R > 0n ? R : D) * K + K : 0n;
  p.total = p.patch_embed + p.cls_token + p.pos_embed + p.blocks + p.norm + p.pre_logits + p.head;
  return p;
}

/** macs(cfg, attn_matmuls=...): by component and "total", as BigInt. */
export function macs(cfg, attnMatmuls = true) {
  const D = B(cfg.dim);
  const N = B((cfg.image_size / cfg.patch_size) ** 2);
  const T = N + 1n;
  const L = B(cfg.depth);
  const M = B(Math.trunc(cfg.dim * cfg.mlp_ratio));
  const P = B(cfg.patch_size);
  const C = B(cfg.in_chans);
  const m = { patch_embed: N * (C * P * P) * D, qkv: L * T * D * 3n * D };
  if (attnMatmuls) {
    m.attn_qk = L * T * T * D;
    m.attn_av = L * T * T * D;
  }
  m.proj = L * T * D * D;
  m.mlp = L * T * 2n * D * M;
  m.head = D * B(cfg.num_classes);
  m.total = Object.values(m).reduce((a, b) => a + b, 0n);
  return m;
}

/** Everything the page shows for cfg, or {refused: message}. */
export function costs(cfg, meta, withRatios = true) {
  const why = refusal(cfg, meta);
  if (why) return { refused: why };
  const grid = cfg.image_size / cfg.patch_size;
  const patches = B(grid * grid);
  const tokens = patches + 1n;
  const out = {
    grid,
    patches,
    tokens,
    pairs: tokens * tokens,
    mlp_dim: Math.trunc(cfg.dim * cfg.mlp_ratio),
    head_dim: cfg.dim / cfg.heads,
    params: paramBreakdown(cfg),
    macs: macs(cfg, true),
    macs_no_attn: macs(cfg, false),
  };
  if (!withRatios) return out;
  const r = costs({ ...cfg, image_size: meta.reference_size }, meta, false);
  out.reference = { refused: r.refused ?? null };
  if (!r.refused) {
    // as Python divides: int / int to the nearest double, then ** 2 for the token pairs
    out.ratios = {
      tokens: Number(out.tokens) / Number(r.tokens),
      pairs: (Number(out.tokens) / Number(r.tokens)) ** 2,
      params: Number(out.params.total) / Number(r.params.total),
      macs: Number(out.macs.total) / Number(r.macs.total),
      macs_no_attn: Number(out.macs_no_attn.total) / Number(r.macs_no_attn.total),
    };
  }
  return out;
}

/** costs() with every BigInt as a decimal string (what tests compare with Python). */
export function costsAsText(cfg, meta) {
  return JSON.parse(JSON.stringify(costs(cfg, meta), (_, v) => (typeof v === "bigint" ? v.toString() : v)));
}

const PARAM_ROWS = [
  ["patch embedding", ["patch_embed"]],
  ["class token", ["cls_token"]],
  ["position table", ["pos_embed"]],
  ["attention (qkv, proj), all blocks", ["attn_all"]],
  ["MLP (fc1, fc2), all blocks", ["mlp_all"]],
  ["LayerNorms", ["norms_all", "norm"]],
  ["head", ["head"]],
];
const MAC_ROWS = [
  ["patch embedding", ["patch_embed"]],
  ["qkv projection", ["qkv"]],
  ["Q Kᵀ and A V", ["attn_qk", "attn_av"]],
  ["output projection", ["proj"]],
  ["MLP (fc1, fc2)", ["mlp"]],
  ["head", ["head"]],
];
const COLOURS = ["green", "muted", "green", "blue", "orange", "purple", "yellow"];
const MAC_COLOURS = ["green", "blue", "purple", "blue", "orange", "muted"];

function sum(obj, keys) {
  return keys.reduce((a, k) => a + (obj[k] ?? 0n), 0n);
}

function short(n, unit) {
  // n: BigInt. Millions or billions with two decimals, computed from the exact count
  const x = Number(n);
  const scale = unit === "G" ? 1e9 : 1e6;
  return `${(x / scale).toLocaleString("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 })} ${unit}`;
}

function ratioText(x) {
  return `${x.toLocaleString("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 })}×`;
}

export function mount(root, data, ctx) {
  const meta = data.meta;
  const labels = {
    image_size: "image size (px)",
    patch_size: "patch size P",
    in_chans: "channels C",
    dim: "width D",
    depth: "blocks L",
    heads: "heads",
    mlp_ratio: "MLP ratio",
    num_classes: "classes K",
  };
  const inputs = {};
  const select = h("select", { class: "vb2-select", "aria-label": "preset" },
    meta.order.map((name) => h("option", { value: name }, name)),
    h("option", { value: "" }, "custom"));
  const form = h("div", { class: "vb2-form" },
    h("label", { class: "vb2-field" }, h("span", {}, "preset"), select),
    meta.fields.map((f) => {
      const step = f === "mlp_ratio" ? "any" : "1";
      inputs[f] = h("input", { type: "number", min: String(meta.minimum[f]), step, inputmode: f === "mlp_ratio" ? "decimal" : "numeric", "data-field": f });
      return h("label", { class: "vb2-field" }, h("span", {}, labels[f]), inputs[f]);
    }));
  const message = h("p", { class: "vb2-refusal", role: "alert", hidden: true });
  const summary = h("dl", { class: "vb2-summary" });
  const bars = h("canvas", { class: "vb2-bars", role: "img", "aria-label": "shares of parameters and of multiply-accumulates by component", tabindex: "0" });
  const tables = h("div", { class: "vb2-tables" });
  const ui = h("div", { class: "vb2-ui vb2-calc" }, form, message, summary, bars, tables);
  root.prepend(ui);

  let extra = { pos_embed: "learned", qkv_bias: true };
  let current = null;
  let hover = -1;

  function readCfg() {
    const cfg = { ...extra };
    for (const f of meta.fields) {
      const v = Number(inputs[f].value);
      cfg[f] = v;
    }
    return cfg;
  }

  function setPreset(name) {
    const p = meta.presets[name];
    for (const f of meta.fields) inputs[f].value = String(p[f]);
    extra = { pos_embed: p.pos_embed, qkv_bias: p.qkv_bias };
    select.value = name;
  }

  function valid(cfg) {
    for (const f of meta.fields) {
      const v = cfg[f];
      if (!Number.isFinite(v) || v < meta.minimum[f]) return `${labels[f]} must be at least ${meta.minimum[f]}`;
      if (f !== "mlp_ratio" && !Number.isInteger(v)) return `${labels[f]} must be a whole number`;
    }
    if (Math.trunc(cfg.dim * cfg.mlp_ratio) < 1) return `${labels.mlp_ratio} gives an MLP of width 0`;
    return null;
  }

  function table(title, rows, obj, total, unit, colours) {
    return h("table", { class: "vb2-table" },
      h("caption", {}, title),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "component"), h("th", { scope: "col" }, "count"), h("th", { scope: "col" }, "share"))),
      h("tbody", {}, rows.map(([name, keys], i) => {
        const v = sum(obj, keys);
        if (!keys.some((k) => k in obj)) return null;
        const share = total > 0n ? Number(v) / Number(total) : 0;
        return h("tr", { "data-row": String(i) },
          h("th", { scope: "row" }, h("span", { class: `vb2-swatch vb2-${colours[i]}` }), name),
          h("td", {}, group(v)),
          h("td", {}, `${(share * 100).toFixed(1)}%`));
      })),
      h("tfoot", {}, h("tr", {}, h("th", { scope: "row" }, "total"), h("td", {}, group(total)), h("td", {}, `${short(total, unit)}`))));
  }

  const drawBars = timed("ch08", () => {
    const width = Math.max(200, bars.parentElement.clientWidth);
    const rowH = 22;
    const g = fitCanvas(bars, width, rowH * 2 + 34);
    const c = palette(meta);
    g.clearRect(0, 0, width, rowH * 2 + 34);
    if (!current || current.refused) return;
    const series = [
      ["parameters", PARAM_ROWS, current.params, current.params.total, COLOURS],
      ["MACs", MAC_ROWS, current.macs, current.macs.total, MAC_COLOURS],
    ];
    g.font = "12px sans-serif";
    const left = 84;
    series.forEach(([label, rows, obj, total, colours], s) => {
      const y = 4 + s * (rowH + 12);
      g.fillStyle = c.fg;
      g.textBaseline = "middle";
      g.textAlign = "left";
      g.fillText(label, 0, y + rowH / 2);
      let x = left;
      rows.forEach(([, keys], i) => {
        const w = total > 0n ? (Number(sum(obj, keys)) / Number(total)) * (width - left) : 0;
        g.fillStyle = c[colours[i]];
        g.globalAlpha = hover === -1 || hover === s * 10 + i ? 1 : 0.35;
        g.fillRect(x, y, w, rowH);
        x += w;
      });
      g.globalAlpha = 1;
    });
  });

  function render() {
    const cfg = readCfg();
    const bad = valid(cfg);
    const result = bad ? { refused: bad } : costs(cfg, meta);
    current = result;
    if (result.refused) {
      message.hidden = false;
      message.textContent = result.refused;
      summary.replaceChildren();
      tables.replaceChildren();
      drawBars();
      ctx.say(`Refused: ${result.refused}`);
      root.dataset.state = "refused";
      return;
    }
    root.dataset.state = "ok";
    message.hidden = true;
    const rows = [
      ["patches N", `${group(result.patches)} (${result.grid} × ${result.grid})`],
      ["tokens T = N + 1", group(result.tokens)],
      ["token pairs T²", group(result.pairs)],
      ["MLP width", group(result.mlp_dim)],
      ["head width D / heads", group(result.head_dim)],
      ["parameters", `${group(result.params.total)} (${short(result.params.total, "M")})`],
      ["MACs with Q Kᵀ, A V", `${group(result.macs.total)} (${short(result.macs.total, "G")})`],
      ["MACs without them", `${group(result.macs_no_attn.total)} (${short(result.macs_no_attn.total, "G")})`],
    ];
    if (result.ratios) {
      const r = result.ratios;
      const at = `at ${meta.reference_size} px`;
      rows.push(
        [`tokens / ${at}`, ratioText(r.tokens)],
        [`token pairs / ${at}`, ratioText(r.pairs)],
        [`parameters / ${at}`, ratioText(r.params)],
        [`MACs / ${at}`, ratioText(r.macs)],
        [`MACs without attention matmuls / ${at}`, ratioText(r.macs_no_attn)],
      );
    } else {
      rows.push([`ratios to ${meta.reference_size} px`, result.reference.refused]);
    }
    summary.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    tables.replaceChildren(
      table("Parameters by component", PARAM_ROWS, result.params, result.params.total, "M", COLOURS),
      table("Multiply-accumulates per image", MAC_ROWS, result.macs, result.macs.total, "G", MAC_COLOURS),
    );
    drawBars();
    ctx.say(
      `${select.value || "custom"} at ${cfg.image_size} px: ${group(result.params.total)} parameters, ` +
        `${short(result.macs.total, "G")}MACs, ${group(result.tokens)} tokens` +
        (result.ratios ? `, ${ratioText(result.ratios.macs)} the MACs at ${meta.reference_size} px.` : "."),
    );
  }

  ctx.listen(select, "change", () => {
    if (select.value) setPreset(select.value);
    render();
  });
  for (const f of meta.fields) {
    ctx.listen(inputs[f], "input", () => {
      select.value = "";
      render();
    });
  }
  function hoverAt(ev) {
    const rect = bars.getBoundingClientRect();
    const x = ev.clientX - rect.left;
    const y = ev.clientY - rect.top;
    const s = y < 4 + 22 + 6 ? 0 : 1;
    const [label, rows, obj, total] = s === 0 ? ["parameters", PARAM_ROWS, current.params, current.params.total] : ["MACs", MAC_ROWS, current.macs, current.macs.total];
    const left = 84;
    let acc = left;
    for (let i = 0; i < rows.length; i++) {
      const v = sum(obj, rows[i][1]);
      const w = total > 0n ? (Number(v) / Number(total)) * (rect.width - left) : 0;
      if (x >= acc && x < acc + w) {
        hover = s * 10 + i;
        drawBars();
        ctx.say(`${label}: ${rows[i][0]}, ${group(v)} (${((Number(v) / Number(total)) * 100).toFixed(1)}%)`);
        return;
      }
      acc += w;
    }
  }
  let kbd = -1;
  ctx.listen(bars, "pointermove", (ev) => current && !current.refused && hoverAt(ev));
  ctx.listen(bars, "pointerdown", (ev) => current && !current.refused && hoverAt(ev));
  ctx.listen(bars, "pointerleave", () => {
    hover = -1;
    drawBars();
  });
  ctx.listen(bars, "keydown", (ev) => {
    if (!current || current.refused) return;
    const all = [...PARAM_ROWS.map((r, i) => [0, i]), ...MAC_ROWS.map((r, i) => [1, i])];
    if (ev.key === "ArrowRight" || ev.key === "ArrowDown") kbd = (kbd + 1) % all.length;
    else if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") kbd = (kbd - 1 + all.length) % all.length;
    else return;
    ev.preventDefault();
    const [s, i] = all[kbd];
    hover = s * 10 + i;
    const [label, rows, obj, total] = s === 0 ? ["parameters", PARAM_ROWS, current.params, current.params.total] : ["MACs", MAC_ROWS, current.macs, current.macs.total];
    const v = sum(obj, rows[i][1]);
    drawBars();
    ctx.say(`${label}: ${rows[i][0]}, ${group(v)} (${total > 0n ? ((Number(v) / Number(total)) * 100).toFixed(1) : "0.0"}%)`);
  });
  ctx.onTheme(() => drawBars());
  const ro = new ResizeObserver(() => drawBars());
  ro.observe(ui);
  setPreset(meta.initial);
  render();
  return () => {
    ro.disconnect();
    ui.remove();
  };
}
