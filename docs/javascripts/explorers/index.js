// Mounts the book's explorers. A page places one with {{ explorer("chNN/id", ...) }}, which
// writes <div class="vb-explorer" data-explorer="chNN/id" data-src=".../chNN/id.explorer.bin">
// around the static figure. This module loads ./chNN-id.js and its data and calls
// mount(root, data, ctx). Material's instant navigation swaps pages without a reload, so
// explorers are mounted again on every page change (document$), and unmounted before.
import { loadExplorerData, context } from "./core.js";

const mounted = new Set();

async function mountOne(root) {
  const id = root.dataset.explorer;
  try {
    const [mod, data] = await Promise.all([
      import(new URL(`./${id.replace("/", "-")}.js`, import.meta.url)),
      loadExplorerData(root.dataset.src),
    ]);
    const ctx = context(root);
    const unmount = mod.mount(root, data, ctx);
    root.classList.add("vb-explorer--live");
    mounted.add(() => {
      ctx.dispose();
      if (typeof unmount === "function") unmount();
    });
  } catch (err) {
    // the static figure stays: the page is still complete without the explorer
    console.error(`explorer ${id} failed to mount`, err);
  }
}

function mountAll() {
  for (const dispose of mounted) dispose();
  mounted.clear();
  for (const root of document.querySelectorAll(".vb-explorer[data-explorer]")) mountOne(root);
}

if (window.document$) window.document$.subscribe(mountAll);
else document.addEventListener("DOMContentLoaded", mountAll);
