// Mounts the book's explorers. A page places one with {{ explorer("chNN/id", ...) }}, which
// writes <div class="vb-explorer" data-explorer="chNN/id" data-src=".../chNN/id.explorer.bin">
// around the static figure. This module loads ./chNN-id.js and its data and calls
// mount(root, data, ctx), when the explorer comes near the screen: until then the static
// figure is what the reader sees, and a reader who never scrolls that far downloads nothing
// of it. Material's instant navigation swaps pages without a reload, so explorers are watched
// again on every page change (document$), and unmounted before.
import { loadExplorerData, context } from "./core.js";

const mounted = new Set();
let watcher = null;

async function mountOne(root) {
  const id = root.dataset.explorer;
  try {
    const [mod, data] = await Promise.all([
      import(new URL(`./${id.replace("/", "-")}.js`, import.meta.url)),
      loadExplorerData(root.dataset.src),
    ]);
    if (!root.isConnected) return; // the reader left the page meanwhile
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
  if (watcher) watcher.disconnect();
  const roots = document.querySelectorAll(".vb-explorer[data-explorer]");
  if (!("IntersectionObserver" in window)) {
    for (const root of roots) mountOne(root);
    return;
  }
  // start loading a screen's height ahead, so the explorer is usually live when it arrives
  watcher = new IntersectionObserver(
    (entries, observer) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        mountOne(entry.target);
      }
    },
    { rootMargin: "100% 0px 100% 0px" },
  );
  // Watch once the page is laid out in full (docs/javascripts/reader.js says when). Before, the
  // blocks the browser skipped on load stand in at a guessed height, which pulls an explorer far
  // down the page up to the screen, and it would load on a first visit. A page without the
  // reader's script waits a few seconds at most.
  let started = false;
  const observe = () => {
    if (started) return;
    started = true;
    for (const root of roots) watcher.observe(root);
  };
  if (document.documentElement.dataset.vbRendered === "true") observe();
  else {
    document.addEventListener("vb:rendered", observe, { once: true });
    setTimeout(observe, 8000);
  }
}

if (window.document$) window.document$.subscribe(mountAll);
else document.addEventListener("DOMContentLoaded", mountAll);
