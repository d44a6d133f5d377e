// Every number the book prints from its facts is a link to its entry in the Numbers appendix
// (a.vb-num, made by vitbook/site/provenance.py). Hovering it, focusing it or tapping it shows a
// short card: the fact's name, the function that computed it (linked to its source lines at the
// commit that built the page), the seeds and their spread for a trained result, whether it is
// computed or measured, and the CPU it was computed on. The data is the page's
// <template id="vb-numbers-data"> (JSON, one record per fact).
//
// The card is inserted right after the number, so that Tab moves from the number into the
// card's links; Escape closes it and returns to the number. The number describes itself by the
// card while it is open (aria-describedby). On a touch screen the first tap opens the card and a
// second tap on the number follows its link. Print never shows a card (print.css).
(() => {
  const KIND = {
    computed: "Computed: the code gives exactly this number on every run.",
    trained: "Trained: a result of training runs, kept frozen and retrained on a schedule.",
    measured: "Measured: a timing, which differs from run to run and machine to machine.",
    quoted: "Quoted: not computed by the book, but copied from the source named above.",
  };
  let dataEl = null;
  let data = null;
  let card = null;
  let owner = null;
  let timer = null;
  let touch = null;
  let touchOpen = false;
  let quiet = null;  // the number Escape closed the card of: focus alone does not reopen it

  const facts = () => {
    const el = document.getElementById("vb-numbers-data");
    if (el !== dataEl) {
      dataEl = el;
      try { data = el ? JSON.parse(el.content.textContent) : null; } catch { data = null; }
    }
    return data;
  };

  const span = (cls, parent) => {
    const el = document.createElement("span");
    el.className = cls;
    parent.appendChild(el);
    return el;
  };

  const link = (href, text, parent) => {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    parent.appendChild(a);
    return a;
  };

  const build = (num) => {
    const d = facts();
    const name = num.dataset.vbFact;
    const f = d && d.facts[name];
    if (!f) return null;
    const el = document.createElement("span");
    el.className = "vb-card";
    el.id = "vb-card";
    el.setAttribute("role", "group");
    el.setAttribute("aria-label", `Where ${name} comes from`);
    const head = span("vb-card-row vb-card-head", el);
    span("vb-card-name", head).textContent = name;
    head.append(` = ${f.t}`);
    const how = span("vb-card-row", el);
    if (f.q) {
      how.append(`Quoted from ${f.q}; recorded by `);
      if (d.src && f.f) link(`${d.src}${f.p}#L${f.l[0]}-L${f.l[1]}`, `${f.f}()`, how);
      else how.append(f.f ? `${f.f}()` : `item ${f.i}`);
    } else if (f.f) {
      how.append("Computed by ");
      if (d.src) link(`${d.src}${f.p}#L${f.l[0]}-L${f.l[1]}`, `${f.f}()`, how);
      else how.append(`${f.f}()`);
      how.append(` in ${f.p}, lines ${f.l[0]}–${f.l[1]}`);
    } else {
      how.append(`Computed by item ${f.i}`);
    }
    // a rounding error: the same on every run on one CPU, not across CPUs
    span("vb-card-row", el).textContent = f.b
      ? `Computed: a rounding error, the same on every run on one CPU; its last digits change with the CPU, so the chapters print it as a bound, below ${f.b}.`
      : KIND[f.k] || f.k;
    if (f.s || f.tol) {
      let text = f.s ? `Over ${f.s} seeds` : "Over several seeds";
      if (f.r) text += `: lowest ${f.r[0]}, highest ${f.r[1]}`;
      if (f.tol) text += `; another CPU may move it by up to ${f.tol}`;
      span("vb-card-row", el).textContent = `${text}.`;
    }
    if (f.k !== "quoted") {  // a quoted number was not computed on any CPU
      let cpu = f.c ? `CPU capability: ${f.c}` : "CPU capability: not recorded by this build";
      if (f.tc) cpu += `; its runs were trained on ${f.tc}`;
      span("vb-card-row", el).textContent = `${cpu}.`;
    }
    link(num.getAttribute("href"), "Its entry in the Numbers appendix", span("vb-card-row", el));
    return el;
  };

  const place = () => {
    if (!card || !owner) return;
    const r = owner.getBoundingClientRect();
    const w = Math.min(card.offsetWidth, window.innerWidth - 16);
    const left = Math.max(8, Math.min(r.left, window.innerWidth - w - 8));
    const below = r.bottom + 6;
    const top = below + card.offsetHeight > window.innerHeight && r.top > card.offsetHeight + 12
      ? r.top - card.offsetHeight - 6 : below;
    card.style.left = `${left}px`;
    card.style.top = `${top}px`;
  };

  const hide = () => {
    clearTimeout(timer);
    if (card) card.remove();
    if (owner) owner.removeAttribute("aria-describedby");
    card = null;
    owner = null;
  };

  const show = (num) => {
    clearTimeout(timer);
    if (owner === num && card) return;
    hide();
    const el = build(num);
    if (!el) return;
    num.after(el);
    card = el;
    owner = num;
    num.setAttribute("aria-describedby", "vb-card");
    place();
  };

  const later = (fn, ms) => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };

  const numberOf = (target) => (target instanceof Element ? target.closest("a.vb-num") : null);
  const inCard = (target) => card && target instanceof Node && card.contains(target);

  document.addEventListener("mouseover", (e) => {
    const num = numberOf(e.target);
    if (num) later(() => show(num), owner === num ? 0 : 120);
    else if (inCard(e.target)) clearTimeout(timer);
  });
  document.addEventListener("mouseout", (e) => {
    if ((numberOf(e.target) || inCard(e.target)) && !inCard(e.relatedTarget)
        && numberOf(e.relatedTarget) !== owner) {
      later(() => { if (!card || !card.contains(document.activeElement)) hide(); }, 300);
    }
  });
  document.addEventListener("focusin", (e) => {
    const num = numberOf(e.target);
    if (num && num !== quiet) show(num);
    else if (!num && !inCard(e.target)) hide();
  });
  document.addEventListener("focusout", (e) => {
    if (quiet && e.target === quiet) quiet = null;
    if (!owner) return;
    const next = e.relatedTarget;
    if (next && (next === owner || inCard(next))) return;
    later(hide, 100);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || !card) return;
    const back = inCard(document.activeElement) ? owner : null;
    quiet = owner;
    hide();
    if (back) back.focus({preventScroll: true});
  });
  document.addEventListener("pointerdown", (e) => {
    touch = e.pointerType === "mouse" ? null : numberOf(e.target);
    touchOpen = Boolean(touch && owner === touch && card);
    if (card && !inCard(e.target) && !numberOf(e.target)) hide();
  });
  document.addEventListener("click", (e) => {
    const num = numberOf(e.target);
    if (!num || touch !== num) return;
    if (!touchOpen) {  // the first tap opens the card; a second tap follows the link
      e.preventDefault();
      show(num);
    }
  });
  window.addEventListener("scroll", place, {passive: true});
  window.addEventListener("resize", place);
  if (window.document$) document$.subscribe(() => { hide(); dataEl = null; });
})();
