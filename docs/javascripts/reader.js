// The reader's page: what every page of the book runs. Kept small, and out of the way of the
// first paint: nothing here lays the page out while it loads (a phone's main thread is the
// budget, see benchmarks/lighthouse.py).

// Long pages render in pieces. book.css lets the browser skip the blocks of the text below the
// first few on load (content-visibility: auto: a block is styled and laid out only when it
// comes near the screen). Here they are rendered a few at a time while the page is idle, so that
// the load stays short and afterwards the page is laid out in full: anchors land exactly, focus
// outlines are not clipped by the skipping's containment, and tools that read the layout (axe,
// find in page) see all of it. Each block rendered is checked for what scrolls (below).
// Keyboard access to what scrolls: a wide table, listing, formula or notebook cell that
// overflows its column gets tabindex="0", so it can be focused and scrolled with the arrow
// keys (WCAG 2.1.1); checked again when the window changes size. All sizes of a block are read
// before any attribute is written, so a block is laid out once, not once per element.
(() => {
  const SCROLLERS = [
    ".md-typeset__scrollwrap", ".md-typeset table", ".md-typeset pre > code", ".vb-eq-body",
    ".md-typeset div.arithmatex",
    ".highlight-ipynb", ".jp-OutputArea-output", ".jp-OutputArea-output pre",
  ].join(", ");
  const scrollersIn = (root) => {
    const inside = [...root.querySelectorAll(SCROLLERS)];
    return root.matches && root.matches(SCROLLERS) ? [root, ...inside] : inside;
  };
  const mark = (elements) => {
    const found = [];
    for (const el of elements) {
      if (el.hasAttribute("tabindex")) continue;
      if (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1) {
        const style = getComputedStyle(el);
        if (/(auto|scroll)/.test(style.overflowX + style.overflowY)) found.push(el);
      }
    }
    for (const el of found) el.setAttribute("tabindex", "0");
  };
  const name = () => {
    // names for Material's widgets that have none: the progress bar and the search dialog
    const bar = document.querySelector(".md-progress:not([aria-label])");
    if (bar) bar.setAttribute("aria-label", "Loading the page");
    const search = document.querySelector('.md-search[role="dialog"]:not([aria-label])');
    if (search) search.setAttribute("aria-label", "Search");
  };
  const idle = window.requestIdleCallback
    ? (fn) => window.requestIdleCallback(fn, { timeout: 4000 })
    : (fn) => setTimeout(() => {
      const end = performance.now() + 12;
      fn({ timeRemaining: () => end - performance.now(), didTimeout: false });
    }, 50);
  // A slice of 10 ms here is 40 ms on a phone four times slower (Lighthouse's mobile
  // emulation), under the 50 ms from which a task counts as blocking.
  const SLICE_MS = 10;
  let run = 0;
  const render = () => {
    const mine = ++run; // a newer page (instant navigation) stops this one's rendering
    const blocks = [...document.querySelectorAll(".md-content__inner > *")];
    delete document.documentElement.dataset.vbRendered;
    let i = 0;
    const step = (deadline) => {
      if (mine !== run) return;
      // at least one block per slice, so that a busy page still finishes, and blocks for
      // about SLICE_MS at most
      const until = performance.now() + SLICE_MS;
      do {
        const el = blocks[i++];
        if (el && el.isConnected) {
          el.style.contentVisibility = "visible";
          mark(scrollersIn(el)); // lays the block out inside this slice
        }
      } while (i < blocks.length && deadline.timeRemaining() > 4 && performance.now() < until);
      if (i < blocks.length) idle(step);
      else {
        mark(document.querySelectorAll(SCROLLERS)); // what is outside the text (notebooks)
        document.documentElement.dataset.vbRendered = "true"; // all laid out (tests read it)
        document.dispatchEvent(new Event("vb:rendered")); // explorers/index.js waits for it
      }
    };
    idle(step);
  };
  // Material mounts a code block when it first comes near the screen (content.lazy in
  // mkdocs.yml), and on a device without hover it takes the block's tabindex away. A phone or
  // tablet can have a keyboard: give it back when the block still overflows. Material writes
  // the attribute only when the block's overflow changes, so the two do not alternate.
  new MutationObserver((records) => {
    const bare = [];
    for (const r of records) {
      if (!r.target.hasAttribute("tabindex") && r.target.matches(SCROLLERS)) bare.push(r.target);
    }
    if (bare.length) mark(bare);
  }).observe(document.body, { attributes: true, attributeFilter: ["tabindex"], subtree: true });
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => mark(document.querySelectorAll(SCROLLERS)), 200);
  });
  const start = () => {
    name();
    render();
  };
  // A link to a place in the page (#anchor): the blocks above it stand in at a guessed height
  // until rendered, so the browser's jump lands off the target. Such a visit lays the whole text
  // out at once and jumps again; a visit without an anchor keeps the fast first paint.
  const land = () => {
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!target) return;
    for (const el of document.querySelectorAll(".md-content__inner > *")) {
      el.style.contentVisibility = "visible";
    }
    target.scrollIntoView();
  };
  // a new page is not laid out yet: the flag goes at once, before the explorers look at it
  const page = () => {
    delete document.documentElement.dataset.vbRendered;
    land();
    idle(start);
  };
  if (window.document$) document$.subscribe(page);
  else window.addEventListener("load", page);
})();

// Figures: each comes in a light and a dark variant; the one the current theme hides keeps its
// file names in data-vb-src/data-vb-srcset, so it is downloaded only when the reader switches.
// Every <source> of the picture is filled in, the phone variant's (media query) included.
(() => {
  const fill = () => {
    const scheme = document.body.getAttribute("data-md-color-scheme");
    const theme = scheme === "slate" ? "vb-dark" : "vb-light";
    for (const pic of document.querySelectorAll(`picture.${theme}`)) {
      for (const el of pic.querySelectorAll("[data-vb-srcset]")) {
        el.setAttribute("srcset", el.getAttribute("data-vb-srcset"));
        el.removeAttribute("data-vb-srcset");
      }
      for (const el of pic.querySelectorAll("[data-vb-src]")) {
        el.setAttribute("src", el.getAttribute("data-vb-src"));
        el.removeAttribute("data-vb-src");
      }
    }
  };
  new MutationObserver(fill).observe(document.body, {
    attributes: true, attributeFilter: ["data-md-color-scheme"],
  });
  if (window.document$) document$.subscribe(fill);
  else window.addEventListener("DOMContentLoaded", fill);
})();

// The lightbox (GLightbox, mkdocs-glightbox) opens a figure's link: point that link at the
// variant the reader sees, the phone one on a narrow screen (drawn for it, with larger text)
// and the desktop one otherwise, each in the theme of its <picture>, as full-size WebP. The
// media query is the pictures' own (vitbook/site/macros.py, PHONE_MEDIA).
/* global lightbox */
(() => {
  const phone = window.matchMedia("screen and (max-width: 44.9375em)");
  const point = () => {
    for (const a of document.querySelectorAll("a.glightbox[data-gallery^='vb-']")) {
      const png = a.dataset.vbPng || a.getAttribute("href");
      if (!/\.png$/.test(png)) continue;
      a.dataset.vbPng = png;
      const wanted = phone.matches ? png.replace(/(\.dark)?\.png$/, ".phone$1.png") : png;
      a.setAttribute("href", wanted.replace(/\.png$/, ".webp"));
    }
  };
  phone.addEventListener("change", () => {
    point();
    if (typeof lightbox !== "undefined") lightbox.reload();
  });
  // before mkdocs-glightbox's own subscription (its script comes last), which reloads the links
  if (window.document$) document$.subscribe(point);
  else window.addEventListener("DOMContentLoaded", point);
})();
