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

/** Read figures/chNN/<id>.explorer.bin: {meta, arrays: {name: {data: TypedArray, shape}}}. */
export async function loadExplorerData(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return parseExplorerData(await response.arrayBuffer());
}

export function parseExplorerData(buffer) {
  const n = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
  const base = 4 + n;
  const arrays = {};
  for (const [name, h] of Object.entries(header.arrays)) {
    const View = VIEWS[h.dtype];
    // copy out, so a view never depends on the alignment of the whole buffer
    const bytes = buffer.slice(base + h.offset, base + h.offset + h.length * View.BYTES_PER_ELEMENT);
    arrays[name] = { data: new View(bytes), shape: h.shape };
  }
  return { meta: header.meta, arrays };
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
