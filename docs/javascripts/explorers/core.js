// Shared pieces of every explorer: the data file, the theme, the live region.
// No number in an explorer is typed here: values come from the .explorer.bin the engine
// wrote (vitbook/engine/explorer.py documents the format).

const VIEWS = {
  float32: Float32Array,
  int32: Int32Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  int16: Int16Array,
};

/**
 * Read figures/chNN/<id>.explorer.bin: {meta, arrays: {name: {data: TypedArray, shape}}, parts}.
 * parts maps the name of each part of the data (a file of its own that the page loads only
 * when it needs it: loadPart) to its address.
 *
 * The built site serves it as vitbook/site/hooks.py (site_explorer) writes it: gzip-compressed
 * (a host sends a .bin file as it is; the browser inflates it here), its large arrays in files
 * of their own under figures/data/, named by their content and shared between explorers (one
 * download for every explorer on the page that holds the same array), some stored filtered
 * ("med": an image as planes of prediction residuals; "shuffle": 4-byte numbers as byte
 * planes), undone here. The engine's own file (plain, every array inline) reads as well.
 */
export async function loadExplorerData(url) {
  const where = new URL(url, document.baseURI);
  const buffer = await fetchBytes(where.href);
  const n = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
  const base = 4 + n;
  const arrays = {};
  await Promise.all(
    Object.entries(header.arrays).map(async ([name, h]) => {
      const View = VIEWS[h.dtype];
      const size = h.length * View.BYTES_PER_ELEMENT;
      // copy out, so a view never depends on the alignment of the whole buffer
      const bytes = h.file
        ? await shared(new URL(h.file, where).href)
        : buffer.slice(base + h.offset, base + h.offset + size);
      arrays[name] = { data: new View(unfilter(h.filter, bytes, h.shape, View)), shape: h.shape };
    }),
  );
  const parts = Object.fromEntries(Object.entries(header.parts || {}).map(([name, file]) => [name, new URL(file, where).href]));
  return { meta: header.meta, arrays, parts };
}

/**
 * One part of an explorer's data (see loadExplorerData), read as loadExplorerData reads a file:
 * downloaded once for the page, whoever asks; a failed download is tried again when asked again.
 */
export function loadPart(data, name) {
  const url = data.parts[name];
  if (!url) return Promise.reject(new Error(`the explorer data has no part ${name}`));
  return once(partData, url, loadExplorerData);
}

const files = new Map(); // URL of a shared array file -> its bytes, inflated (a promise)
const partData = new Map(); // URL of a part's file -> its data (a promise)

function shared(url) {
  return once(files, url, fetchBytes);
}

/** load(url), remembered in store; forgotten if it fails, so that asking again retries. */
function once(store, url, load) {
  if (!store.has(url)) {
    const got = load(url);
    got.catch(() => store.delete(url));
    store.set(url, got);
  }
  return store.get(url);
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return inflate(await response.arrayBuffer());
}

/** The bytes, gunzipped if they are gzip (they start with 1f 8b), else as they are. */
export async function inflate(buffer) {
  const head = new Uint8Array(buffer, 0, Math.min(2, buffer.byteLength));
  if (head[0] !== 0x1f || head[1] !== 0x8b) return buffer;
  const stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

/** An array's own bytes from how the site stores them (see loadExplorerData): a new buffer. */
export function unfilter(kind, bytes, shape, View) {
  if (!kind) return bytes.slice(0);
  const src = new Uint8Array(bytes);
  const out = new Uint8Array(src.length);
  if (kind === "shuffle") {
    // byte planes back to numbers: byte k of number i sat at k * count + i
    const count = src.length / 4;
    for (let i = 0; i < count; i++) for (let k = 0; k < 4; k++) out[4 * i + k] = src[k * count + i];
    return out.buffer;
  }
  if (kind === "med") {
    // (..., H, W, C) pixels from (..., C, H, W) planes of residuals of LOCO-I's median edge
    // predictor (left a, up b, upper-left c): the inverse of vitbook/site/hooks.py's _med
    const [h, w, ch] = shape.slice(-3);
    const images = src.length / (h * w * ch);
    const plane = new Uint8Array(h * w);
    for (let m = 0; m < images; m++) {
      for (let k = 0; k < ch; k++) {
        const o = (m * ch + k) * h * w;
        for (let i = 0; i < h; i++) {
          for (let j = 0; j < w; j++) {
            const a = j ? plane[i * w + j - 1] : 0;
            const b = i ? plane[(i - 1) * w + j] : 0;
            const c = i && j ? plane[(i - 1) * w + j - 1] : 0;
            const lo = Math.min(a, b);
            const hi = Math.max(a, b);
            const pred = c >= hi ? lo : c <= lo ? hi : a + b - c;
            const v = (src[o + i * w + j] + pred) & 255;
            plane[i * w + j] = v;
            out[((m * h + i) * w + j) * ch + k] = v;
          }
        }
      }
    }
    return out.buffer;
  }
  throw new Error(`unknown storage ${kind} of an explorer array (${View.name})`);
}

/** True when Material shows its dark (slate) scheme. */
export function isDark() {
  return document.body.getAttribute("data-md-color-scheme") === "slate";
}

/**
 * What mount() receives besides its root and data: a live region for words, a theme
 * watcher, and dispose() to undo listeners when the page changes.
 */
export function context(root) {
  const cleanups = [];
  let live = root.querySelector(".vb-live");
  if (!live) {
    live = document.createElement("p");
    live.className = "vb-live";
    live.setAttribute("aria-live", "polite");
    root.append(live);
  }
  return {
    root,
    id: root.dataset.explorer,
    live,
    say(text) {
      live.textContent = text;
    },
    onTheme(callback) {
      const observer = new MutationObserver(() => callback(isDark()));
      observer.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
      cleanups.push(() => observer.disconnect());
    },
    listen(target, type, handler, options) {
      target.addEventListener(type, handler, options);
      cleanups.push(() => target.removeEventListener(type, handler, options));
    },
    /** Call callback() whenever element's size changes (after layout, not on every frame). */
    onResize(element, callback) {
      const observer = new ResizeObserver(() => callback());
      observer.observe(element);
      cleanups.push(() => observer.disconnect());
    },
    /** Run undo() when the page changes (for timers, workers, object URLs). */
    cleanup(undo) {
      cleanups.push(undo);
    },
    dispose() {
      for (const undo of cleanups.splice(0)) undo();
    },
  };
}
