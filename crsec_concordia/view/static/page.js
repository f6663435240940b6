// crsec view: the page's own script (no library). Reads the data embedded
// in #crsec-data (crsec_concordia/view/extract.py) and draws a run: places
// as panels, agents as marks, one scrubber over the slots, the slot's
// records, agents' details on click, per target norm its adoption curves
// and its diffusion graph (inline SVG). Served by `crsec view --serve`, it
// polls live.json (crsec_concordia/view/live.py) and follows the run.
"use strict";
(function () {
  let PAGE = JSON.parse(document.getElementById("crsec-data").textContent);
  // How often a served page asks whether the run has moved on (ms).
  const POLL = 1000;
  const COLOURS = ["#16a34a", "#e11d48", "#0891b2", "#ca8a04", "#7c3aed",
                   "#ea580c", "#0d9488", "#db2777"];
  // Above this many agents, panels show aggregates; marks on demand.
  const MANY = 150;
  const LIST_CAP = 80;
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  let R = null;          // the run shown
  let slot = 0;          // index into R.steps
  let timer = null;
  let openAgent = null;
  let expanded = new Set();   // panels whose marks are shown in a big run
  let graphFilter = {};       // target index -> "all" | "target"

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const name = (i) => (i === null || i === undefined) ? "?" :
    (typeof i === "number" ? R.agents[i].n : String(i));
  const placeName = (p) => (p === null || p === undefined) ? "" :
    (R.places[p].id || R.places[p].desc);
  function who(i) {
    if (typeof i !== "number") return el("span", {}, name(i));
    return el("span", {class: "who", "data-agent": R.agents[i].n,
      onclick: () => showAgent(i)}, R.agents[i].n);
  }
  function tag(text, cls) { return el("span", {class: "tag " + (cls || "")}, text); }
  function colour(mask) {
    const on = R.targets.map((_, t) => t).filter((t) => mask & (1 << t));
    if (!on.length) return "var(--none)";
    if (on.length === 1) return COLOURS[on[0] % COLOURS.length];
    const part = 100 / on.length;
    return "conic-gradient(" + on.map((t, k) =>
      `${COLOURS[t % COLOURS.length]} ${k * part}% ${(k + 1) * part}%`).join(",") + ")";
  }
  const stepLabel = (k) => `slot ${R.steps[k].s} · ${R.steps[k].t}`;

  // ---- run picker and set-up ------------------------------------------
  function init() {
    $("title").textContent = PAGE.title;
    if (PAGE.runs.length > 1) {
      $("picker-box").hidden = false;
      PAGE.runs.forEach((r, i) => $("picker").append(el("option", {value: i}, r.label)));
    }
    $("picker").addEventListener("change", (e) => pick(+e.target.value));
    $("first").onclick = () => go(0);
    $("back").onclick = () => go(slot - 1);
    $("next").onclick = () => go(slot + 1);
    $("play").onclick = play;
    $("pause").onclick = pause;
    $("scrub").addEventListener("input", (e) => go(+e.target.value));
    $("agent-close").onclick = () => { $("agent").hidden = true; openAgent = null; };
    $("dialog-close").onclick = () => { $("dialog").hidden = true; };
    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
      if (e.key === "ArrowRight") go(slot + 1);
      if (e.key === "ArrowLeft") go(slot - 1);
      if (e.key === "Escape") { $("agent").hidden = true; $("dialog").hidden = true; }
    });
    pick(0);
  }

  function pick(i) {
    pause();
    expanded = new Set();
    graphFilter = {};
    $("agent").hidden = true;
    openAgent = null;
    show(i);
    go(0);
  }
  // Run i's header, legend, ticks and target cards (the slot is drawn by go).
  function show(i) {
    R = PAGE.runs[i];
    R.byAgent = null;
    const m = R.meta;
    $("meta").textContent = [m.scenario, m.arm, m.seed !== null ? `seed ${m.seed}` : null,
      m.model ? `model ${m.model}` : null, `${R.agents.length} agents`,
      `${R.steps.length} slots`, R.places.length > 1 ? `${R.places.length} places` : null,
      m.path].filter(Boolean).join(" · ");
    progress();
    $("notes").replaceChildren(...R.notes.map((n) => el("li", {}, n)));
    $("scrub").max = Math.max(0, R.steps.length - 1);
    document.body.dataset.slots = R.steps.length;
    legend();
    drawMarks();
    drawTargets();
  }
  // How far the run is: run.json's status as it says it, slots, calls, tokens.
  function progress() {
    const p = R.progress || {};
    const box = $("progress");
    box.dataset.status = p.status || "";
    box.dataset.completed = p.completed || 0;
    box.replaceChildren(el("b", {}, p.status || "status unknown"),
      ` · slot ${p.completed || 0}` + (p.max ? ` of ${p.max}` : "") +
      ` · ${(p.calls || 0).toLocaleString("en")} calls · ${(p.tokens || 0).toLocaleString("en")} tokens` +
      (PAGE.live !== undefined ? " · following the run" : ""));
  }

  // ---- following a run (a page served by `crsec view --serve`) -----------
  // New data replaces the old; the slot shown stays, or moves on with the
  // run when the last slot was shown; the open agent stays open.
  function update(fresh) {
    const i = Math.max(0, fresh.runs.findIndex((r) => r.meta.path === R.meta.path));
    const last = !R.steps.length || slot === R.steps.length - 1;
    PAGE = fresh;
    $("title").textContent = PAGE.title;
    if (PAGE.runs.length > 1) {  // A sweep's runs, as they start; their labels say their state.
      $("picker-box").hidden = false;
      $("picker").replaceChildren(...PAGE.runs.map((r, k) => el("option", {value: k}, r.label)));
      $("picker").value = i;
    }
    show(i);
    go(last ? R.steps.length - 1 : slot);
  }
  function follow() {
    if (PAGE.live === undefined || !location.protocol.startsWith("http")) return;
    const poll = () => fetch(`live.json?v=${encodeURIComponent(PAGE.live)}`, {cache: "no-store"})
      .then((r) => r.ok ? r.json() : null)
      .then((got) => {
        if (got && got.page) { got.page.live = got.v; update(got.page); }
      })
      .catch(() => {})  // The server stopped: the page stays as it was.
      .finally(() => setTimeout(poll, POLL));
    setTimeout(poll, POLL);
  }

  function legend() {
    const items = R.targets.map((t, k) => el("span", {},
      el("span", {class: "swatch", style: `background:${COLOURS[k % COLOURS.length]}`}),
      `holds "${t.text}"`));
    items.push(el("span", {class: "none-label"}, el("span", {class: "swatch", style: "background:var(--none)"}),
      R.meta.loading ? "not read yet: the run's sentence embedder is loading" : "holds no target norm"));
    items.push(el("span", {}, el("span", {class: "swatch", style: "background:#fff;border:2px solid #111"}),
      "moved this slot"));
    if ((R.away || []).some((a) => a.length)) items.push(el("span", {},
      el("span", {class: "swatch", style: "background:#fff;border:2px dashed var(--none)"}), "away: not yet arrived, or left"));
    items.push(el("span", {}, el("span", {class: "swatch", style: "background:var(--bad)"}), "failure"));
    items.push(el("span", {}, el("span", {class: "swatch", style: "background:var(--int)"}), "intervention"));
    items.push(el("span", {}, el("span", {class: "swatch", style: "background:var(--talk)"}), "talk"));
    $("legend").replaceChildren(...items);
  }

  // Failures, interventions and talks as ticks under the scrubber.
  function drawMarks() {
    const box = $("marks");
    box.replaceChildren();
    const n = R.steps.length;
    box.setAttribute("viewBox", "0 0 1000 14");
    R.events.forEach((evs, k) => {
      // Under the range thumb: the thumb travels inside ~8px at each end.
      const x = 8 + (n > 1 ? k / (n - 1) : 0.5) * 984;
      const count = (kind) => evs.filter((e) => e.k === kind).length;
      const f = count("failure"), iv = count("intervention"), t = count("talk");
      if (t) box.append(svg("rect", {x: x - 2, y: 0, width: 4, height: 4, fill: "var(--talk)",
        class: "tick-talk"}, svg("title", {}, `${t} talk(s) at ${stepLabel(k)}`)));
      if (f) box.append(svg("rect", {x: x - 2, y: 5, width: 4, height: 4, fill: "var(--bad)",
        class: "tick-failure"}, svg("title", {}, `${f} failure(s) at ${stepLabel(k)}`)));
      if (iv) box.append(svg("rect", {x: x - 2, y: 10, width: 4, height: 4, fill: "var(--int)",
        class: "tick-intervention"}, svg("title", {}, `intervention at ${stepLabel(k)}`)));
    });
  }

  // ---- the scrubber -----------------------------------------------------
  function go(k) {
    if (!R.steps.length) { $("slot-label").textContent = "no slot played"; return; }
    slot = Math.max(0, Math.min(R.steps.length - 1, k));
    $("scrub").value = slot;
    $("slot-label").textContent = stepLabel(slot);
    document.body.dataset.slot = R.steps[slot].s;
    drawPlaces();
    drawSlot();
    updateTargets();
    if (openAgent !== null) showAgent(openAgent);
    if (slot === R.steps.length - 1) pause();
  }
  function play() {
    if (slot >= R.steps.length - 1) go(0);
    $("play").hidden = true; $("pause").hidden = false;
    timer = setInterval(() => go(slot + 1), 1200);
  }
  function pause() {
    if (timer) clearInterval(timer);
    timer = null;
    $("play").hidden = false; $("pause").hidden = true;
  }

  // ---- places -----------------------------------------------------------
  // Agent index -> why it is away at slot k (not yet arrived, or left).
  function awayAt(k) { return new Map((R.away && R.away[k]) || []); }
  function agentMark(i, cls, attrs, title) {
    const a = R.agents[i], hold = R.hold[slot] || [];
    return el("span", {class: "mark " + a.r + (cls ? " " + cls : ""), "data-agent": a.n,
      "data-hold": hold[i] || 0, ...attrs, title, onclick: () => showAgent(i)},
      el("span", {class: "dot", style: `background:${colour(hold[i] || 0)}`}),
      el("span", {class: "nm"}, a.n));
  }
  function drawPlaces() {
    const pos = R.pos[slot] || [], prev = slot > 0 ? R.pos[slot - 1] : pos;
    const away = awayAt(slot), wasAway = slot > 0 ? awayAt(slot - 1) : away;
    const hold = R.hold[slot] || [];
    const members = R.places.map(() => []);
    pos.forEach((p, i) => { if (!away.has(i)) members[p].push(i); });
    const many = R.agents.length > MANY;
    const panels = R.places.map((pl, p) => {
      const here = members[p];
      const head = el("h2", {}, el("span", {}, pl.id || pl.desc),
        el("span", {class: "count"}, `${here.length} here`));
      const body = [head];
      if (pl.id) body.push(el("div", {class: "desc"}, pl.desc));
      const came = here.filter((i) => prev[i] !== p || wasAway.has(i)).length;
      const left = prev.filter((q, i) => q === p && !wasAway.has(i) && (pos[i] !== p || away.has(i))).length;
      if (slot > 0 && (came || left)) body.push(el("div", {class: "flow"}, `${came} came, ${left} left this slot`));
      if (R.targets.length) {
        const bars = el("div", {class: "bars"});
        R.targets.forEach((t, k) => {
          const n = here.filter((i) => hold[i] & (1 << k)).length;
          const share = here.length ? n / here.length : 0;
          bars.append(el("div", {class: "bar", title: `${n} of ${here.length} here hold "${t.text}"`},
            el("div", {style: `width:${(share * 100).toFixed(1)}%;background:${COLOURS[k % COLOURS.length]}`})));
        });
        body.push(bars);
      }
      if (!many || expanded.has(p)) {
        const marks = el("div", {class: "marks"});
        here.forEach((i) => {
          const moved = prev[i] !== pos[i] && !wasAway.has(i);
          marks.append(agentMark(i, moved ? "moved" : "", {"data-place": pl.id},
            `${R.agents[i].n} (${R.agents[i].r})` + (moved ? ` came from ${placeName(prev[i])}` : "")));
        });
        body.push(marks);
        if (many) body.push(el("button", {class: "more", onclick: () => { expanded.delete(p); drawPlaces(); }}, "hide agents"));
      } else {
        body.push(el("button", {class: "more", onclick: () => { expanded.add(p); drawPlaces(); }},
          `show the ${here.length} agents`));
      }
      return el("div", {class: "place", "data-place": pl.id}, body);
    });
    if (away.size) panels.push(drawAway(away, many));
    $("places").replaceChildren(...panels);
  }
  // The agents taking no part in this slot, greyed: in no place.
  function drawAway(away, many) {
    const body = [el("h2", {}, el("span", {}, "away"),
      el("span", {class: "count"}, `${away.size} not here`)),
      el("div", {class: "desc"}, "not yet arrived, or left: in no place, counted in no share")];
    if (!many || expanded.has("away")) {
      body.push(el("div", {class: "marks"}, [...away].map(([i, why]) =>
        agentMark(i, "away", {"data-away": why}, `${R.agents[i].n}: ${why}`))));
      if (many) body.push(el("button", {class: "more", onclick: () => { expanded.delete("away"); drawPlaces(); }}, "hide agents"));
    } else {
      body.push(el("button", {class: "more", onclick: () => { expanded.add("away"); drawPlaces(); }},
        `show the ${away.size} agents`));
    }
    return el("div", {class: "place away", "data-away": "1"}, body);
  }

  // ---- the slot's records -----------------------------------------------
  function capped(items, render) {
    const ul = el("ul");
    const show = (n) => {
      ul.replaceChildren(...items.slice(0, n).map(render));
      if (items.length > n) ul.append(el("li", {}, el("button", {class: "more",
        onclick: () => show(items.length)}, `show all ${items.length}`)));
    };
    show(LIST_CAP);
    return ul;
  }
  function actionText(e) {
    if (e.x !== undefined) return e.x;
    const k = R.steps.findIndex((s) => s.s === e.c);
    const orig = k >= 0 ? R.events[k].find((o) => o.k === "action" && o.a === e.a && o.x !== undefined) : null;
    return orig ? orig.x : "(continues)";
  }
  function transcript(e) {
    $("dialog-body").replaceChildren(
      el("h2", {}, `${name(e.a)} talks with ${name(e.w)}`),
      el("div", {class: "muted"}, `${stepLabel(slot)} · about "${e.n || e.topic || ""}"`),
      ...e.turns.map((t) => el("div", {class: "turn"}, el("b", {}, name(t[0]) + ":"), t[1])),
      el("div", {class: "muted"}, e.ended ? `ended: ${e.ended}` : ""));
    $("dialog").hidden = false;
  }
  function normLine(e) {
    const li = el("li", {}, who(e.a), " ");
    if (e.k === "created") li.append(e.ok === false ? tag("rejected at creation", "bad") : tag("created", "ok"),
      ` ${e.n}`, e.ok === false && e.why ? el("span", {class: "muted"}, ` (${e.why})`) : "");
    if (e.k === "candidate") li.append(tag(e.o === "conversation" ? "heard" : e.o === "observation" ? "watched" : e.o,
      e.o === "conversation" ? "talk" : "obs"), ` ${e.n}`, e.w !== null && e.w !== undefined ? el("span", {class: "muted"}, " from ", who(e.w)) : "");
    if (e.k === "verdict") li.append(tag(e.ok ? "qualified" : "rejected", e.ok ? "ok" : "bad"),
      ` ${e.n}`, !e.ok && e.why ? el("span", {class: "muted"}, ` (${e.why})`) : "");
    if (e.k === "synthesis") li.append(tag(e.ok ? "synthesised" : "synthesis rejected", e.ok ? "ok" : "bad"),
      ` ${e.n}`, el("span", {class: "muted"}, ` replaces ${e.src.join(", ")}`));
    return li;
  }
  function drawSlot() {
    const evs = R.events[slot] || [];
    const st = R.steps[slot];
    const of = (...kinds) => evs.filter((e) => kinds.includes(e.k));
    const deeds = of("action"), fresh = deeds.filter((e) => e.x !== undefined);
    const parts = [el("h2", {}, stepLabel(slot)),
      el("div", {class: "muted"}, st.partial ? "slot not completed" :
        `${st.calls} model calls, ${st.tokens} tokens` + (st.cached ? `, ${st.cached} from the cache` : "") +
        (st.failed ? `, ${st.failed} failed` : ""))];
    const iv = of("intervention");
    if (iv.length) parts.push(el("h3", {}, `Interventions (${iv.length})`),
      capped(iv, (e) => el("li", {}, tag("intervention", "int"), " ", JSON.stringify(e.x))));
    const moves = deeds.filter((e) => e.m !== undefined && e.m !== null);
    parts.push(el("h3", {}, `Deeds (${fresh.length} new, ${deeds.length - fresh.length} continued)`),
      capped(fresh, (e) => el("li", {class: "deed"}, who(e.a), " ", e.x,
        ...e.b.map((b) => tag(b, "bad")), e.ev ? el("span", {class: "muted"}, ` evidence: ${e.ev}`) : "",
        R.places.length > 1 && e.p !== undefined && e.p !== null ? el("span", {class: "muted"}, ` @ ${placeName(e.p)}`) : "")));
    if (moves.length) parts.push(el("h3", {}, `Moves (${moves.length})`),
      capped(moves, (e) => el("li", {}, who(e.a), ` ${placeName(e.m)} → ${placeName(e.p)}`)));
    const conflicts = of("conflict");
    parts.push(el("h3", {}, `Conflicts (${conflicts.length})`),
      capped(conflicts, (e) => el("li", {class: "conflict"}, who(e.a), " noticed ", who(e.w), " break ",
        el("i", {}, `"${e.n}"`), el("div", {class: "muted"}, e.x))));
    const talks = of("talk"), dropped = of("dropped");
    parts.push(el("h3", {}, `Talks (${talks.length})`),
      capped(talks, (e) => el("li", {class: "talk"}, who(e.a), " → ", who(e.w), ` about "${e.n || e.topic}" `,
        el("span", {class: "link", onclick: () => transcript(e)}, `transcript (${e.turns.length} turns)`))));
    if (dropped.length) parts.push(el("div", {class: "muted"}, `${dropped.length} talk(s) dropped: not in the same place`));
    const ns = of("created", "candidate", "verdict", "synthesis");
    parts.push(el("h3", {}, `Norms (${ns.length})`), capped(ns, normLine));
    const replaced = [];
    R.norms.forEach((list, i) => list.forEach((n) => n.status.forEach(([s, status]) => {
      if (s === st.s && status === "replaced") replaced.push([i, n]);
    })));
    if (replaced.length) parts.push(el("h3", {}, `Replaced (${replaced.length})`),
      capped(replaced, ([i, n]) => el("li", {}, who(i), " ", tag("replaced", "bad"), ` ${n.content}`,
        n.by ? el("span", {class: "muted"}, ` by ${n.by}`) : "")));
    const failures = of("failure");
    parts.push(el("h3", {}, `Failures (${failures.length})`),
      capped(failures, (e) => el("li", {class: "failure"}, tag(e.op || "failure", "bad"), " ",
        e.a !== null && e.a !== undefined ? who(e.a) : "", " ", el("span", {class: "muted"}, e.x))));
    $("slot").replaceChildren(...parts);
  }

  // ---- one agent --------------------------------------------------------
  function agentIndex() {
    if (R.byAgent) return R.byAgent;
    R.byAgent = R.agents.map(() => []);
    R.events.forEach((evs, k) => evs.forEach((e) => {
      if (typeof e.a === "number") R.byAgent[e.a].push([k, e]);
      if (e.k === "talk" && typeof e.w === "number") R.byAgent[e.w].push([k, e]);
    }));
    return R.byAgent;
  }
  function statusAt(n, s) {
    // A norm no snapshot saw (a run without snapshots): its records only.
    if (!n.status.length) return n.first && n.first <= s ? "recorded" : null;
    let now = null;
    for (const [at, status] of n.status) if (at <= s) now = status;
    return now;
  }
  // Say (its rules stated at the end), hold (its final norms) and do (the
  // referee's tags over the run) per target, side by side.
  function sayHoldDo(i) {
    const rows = (R.shd || [])[i] || [];
    if (!R.targets.length || !rows.length) return [];
    const mark = (v) => el("td", {class: "shd-" + v.replace(/[^a-z]+/g, "-")}, v);
    return [el("h3", {}, "Say, hold, do"),
      el("table", {class: "shd"}, el("tr", {}, el("th", {}, "target norm"), el("th", {}, "says"),
        el("th", {}, "holds"), el("th", {}, "does")),
        rows.map(([say, hold, does], t) => el("tr", {"data-target": R.targets[t].id},
          el("td", {}, R.targets[t].text), mark(say), mark(hold), mark(does)))),
      el("div", {class: "muted"}, "says: its rules when asked after the last slot; holds: its norms " +
        "at the end; does: the referee's tags on its deeds over the whole run (docs/metrics.md).")];
  }
  function showAgent(i) {
    openAgent = i;
    const a = R.agents[i], s = R.steps[slot].s, mine = agentIndex()[i];
    const plan = mine.filter(([k, e]) => e.k === "plan" && k <= slot).pop();
    const body = [el("h2", {}, a.n), el("div", {class: "muted"},
      `${a.r}` + (a.g ? ` · group ${a.g}` : "") + (awayAt(slot).has(i) ? ` · away (${awayAt(slot).get(i)})`
        : ` · at ${placeName(R.pos[slot][i]) || "the venue"}`) + ` at ${stepLabel(slot)}`),
      el("p", {}, a.persona || "")];
    body.push(...sayHoldDo(i));
    body.push(el("h3", {}, "Day plan"));
    body.push(plan ? el("ul", {}, plan[1].items.map((it) => el("li", {}, `${it[0]}–${it[1]} ${it[2]}`)),
      plan[1].rev ? el("li", {class: "muted"}, `revised at ${stepLabel(plan[0])}`) : "")
      : el("div", {class: "muted"}, "no plan recorded yet"));
    body.push(el("h3", {}, `Norms (${R.norms[i].length})`));
    const rows = R.norms[i].map((n) => {
      const now = statusAt(n, s);
      const first = n.status.length ? n.status[0][0] : n.first;
      const from = R.agents.findIndex((x) => x.n === n.from);
      const source = from >= 0 ? who(from) : (n.from || "someone");
      const origin = n.origin === "conversation" ? ["talk with ", source]
        : n.origin === "observation" ? (n.from ? ["watching ", source] : ["observation"])
        : [n.origin || "?"];
      return el("tr", {class: "norm-row", "data-status": now || "later"},
        el("td", {}, n.content, ...n.t.map((t) => el("span", {class: "swatch", title: R.targets[t].text,
          style: `background:${COLOURS[t % COLOURS.length]};margin-left:4px`}))),
        el("td", {}, ...origin),
        el("td", {}, first ? `slot ${first}` : ""),
        el("td", {class: "status-" + (now || "none")}, now || "not yet",
          n.why && (now === "rejected") ? el("div", {class: "muted"}, n.why) : "",
          n.status.length > 1 ? el("div", {class: "muted"}, n.status.map(([x, y]) => `${x}: ${y}`).join(", ")) : ""));
    });
    body.push(rows.length ? el("table", {class: "norms"}, el("tr", {}, el("th", {}, "norm"),
      el("th", {}, "origin"), el("th", {}, "since"), el("th", {}, `status at slot ${s}`)), rows)
      : el("div", {class: "muted"}, "no norms"));
    body.push(el("h3", {}, "Actions"));
    const acts = mine.filter(([, e]) => e.k === "action");
    body.push(el("table", {}, acts.map(([k, e]) => el("tr", {class: k === slot ? "now" : ""},
      el("td", {}, R.steps[k].t), el("td", {}, actionText(e), ...e.b.map((b) => tag(b, "bad")))))));
    const other = mine.filter(([, e]) => ["talk", "conflict", "failure"].includes(e.k));
    if (other.length) {
      body.push(el("h3", {}, "Talks, conflicts, failures"));
      body.push(el("ul", {}, other.map(([k, e]) => el("li", {}, el("span", {class: "muted"}, R.steps[k].t + " "),
        e.k === "talk" ? [`talk ${name(e.a)} → ${name(e.w)} `, el("span", {class: "link", onclick: () => transcript(e)}, "transcript")]
        : e.k === "conflict" ? `noticed ${name(e.w)} break "${e.n}"` : [tag(e.op || "failure", "bad"), ` ${e.x}`]))));
    }
    body.push(el("h3", {}, "Model calls"));
    const st = R.steps[slot];
    body.push(el("div", {class: "muted"}, st.partial ? "this slot was not completed" :
      `This slot cost ${st.calls} calls and ${st.tokens} tokens for the whole society; ` +
      "the run does not record calls per agent (usage by operation is below)."));
    const tags = Object.entries(R.usage || {});
    if (tags.length) body.push(el("table", {}, el("tr", {}, el("th", {}, "operation"), el("th", {}, "calls"),
      el("th", {}, "cached"), el("th", {}, "tokens")), tags.map(([t, u]) => el("tr", {}, el("td", {}, t),
      el("td", {}, u.calls), el("td", {}, u.cached_calls), el("td", {}, (u.prompt_tokens || 0) + (u.completion_tokens || 0))))));
    $("agent-body").replaceChildren(...body);
    $("agent").hidden = false;
    $("agent").dataset.agent = a.n;
  }

  // ---- target norms: curves and diffusion graph -------------------------
  function drawTargets() {
    const box = $("targets");
    box.replaceChildren();
    const list = R.targets.length ? R.targets.map((t, k) => [t, k]) : [[{id: "", text: "all norms"}, -1]];
    list.forEach(([t, k]) => {
      const card = el("div", {class: "target", "data-target": t.id});
      card.append(el("h2", {}, k >= 0 ? el("span", {class: "swatch", style: `background:${COLOURS[k % COLOURS.length]}`}) : "",
        k >= 0 ? `Target norm "${t.text}"` : "Norms passed between agents"));
      const row = el("div", {class: "row"});
      if (k >= 0) row.append(el("div", {class: "chart-box"}));
      const gbox = el("div", {class: "graph-box"});
      if (k >= 0) {
        graphFilter[k] = graphFilter[k] || "target";
        const sel = el("select", {class: "graph-filter"},
          el("option", {value: "target"}, "norms meaning this target"),
          el("option", {value: "all"}, "every norm passed"));
        sel.value = graphFilter[k];
        sel.addEventListener("change", () => { graphFilter[k] = sel.value; updateTargets(); });
        gbox.append(el("div", {class: "muted"}, "Diffusion: ", sel));
      }
      gbox.append(el("div", {class: "graph-holder"}));
      row.append(gbox);
      card.append(row);
      box.append(card);
    });
  }
  function updateTargets() {
    document.querySelectorAll("#targets .target").forEach((card, idx) => {
      const k = R.targets.length ? idx : -1;
      if (k >= 0) card.querySelector(".chart-box").replaceChildren(chart(k));
      card.querySelector(".graph-holder").replaceChildren(graph(k));
    });
  }

  function chart(k) {
    const W = 380, H = 170, L = 34, B = 24, T = 8, Rr = 10;
    const n = R.steps.length;
    const x = (i) => L + (n > 1 ? i * (W - L - Rr) / (n - 1) : (W - L - Rr) / 2);
    const y = (v) => T + (1 - v) * (H - T - B);
    const t = R.targets[k];
    let series;
    if (R.curves) {
      series = [["belief", R.curves[t.id].belief, ""], ["behaviour", R.curves[t.id].behaviour, "5 3"]];
    } else {
      const held = R.hold.map((row) => row.length ? row.filter((m) => m & (1 << k)).length / row.length : null);
      series = [["holds (exact wording)", held, ""]];
    }
    const s = svg("svg", {class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-target": t.id});
    [0, 0.5, 1].forEach((v) => s.append(svg("line", {x1: L, x2: W - Rr, y1: y(v), y2: y(v), stroke: "#e5e7eb"}),
      svg("text", {x: 4, y: y(v) + 4}, `${v * 100}%`)));
    s.append(svg("text", {x: L, y: H - 6}, R.steps[0] ? R.steps[0].t : ""),
      svg("text", {x: W - Rr, y: H - 6, "text-anchor": "end"}, R.steps[n - 1] ? R.steps[n - 1].t : ""));
    const colour = COLOURS[k % COLOURS.length];
    series.forEach(([label, values, dash], j) => {
      let d = "", pen = false;
      values.forEach((v, i) => {
        if (v === null || v === undefined) { pen = false; return; }
        d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`; pen = true;
      });
      s.append(svg("path", {d, fill: "none", stroke: colour, "stroke-width": 2, "stroke-dasharray": dash || null,
        class: "curve", "data-curve": label}));
      s.append(svg("text", {x: L + 6 + j * 120, y: T + 10, fill: colour}, (dash ? "- - " : "— ") + label));
    });
    s.append(svg("line", {class: "cursor", x1: x(slot), x2: x(slot), y1: T, y2: H - B}));
    const tip = svg("text", {x: W - Rr, y: T + 24, "text-anchor": "end", class: "tip"}, "");
    s.append(tip);
    const pick = (ev) => {
      const r = s.getBoundingClientRect();
      const px = (ev.clientX - r.left) * W / r.width;
      return Math.max(0, Math.min(n - 1, Math.round((px - L) / ((W - L - Rr) / Math.max(n - 1, 1)))));
    };
    s.addEventListener("mousemove", (ev) => {
      const i = pick(ev);
      tip.textContent = `${R.steps[i].t}: ` + series.map(([label, values]) =>
        `${label} ${values[i] === null || values[i] === undefined ? "–" : Math.round(values[i] * 100) + "%"}`).join(", ");
    });
    s.addEventListener("mouseleave", () => { tip.textContent = ""; });
    s.addEventListener("click", (ev) => go(pick(ev)));
    return s;
  }

  function graph(k) {
    const mode = k < 0 ? "all" : graphFilter[k];
    const edges = R.edges.filter((e) => mode === "all" || e.t.includes(k));
    if (!edges.length) return el("div", {class: "muted graph-empty"}, k >= 0 && mode === "target" && !R.meta.reported && !R.meta.matcher
      ? "No norm meaning this target passed between agents by its exact wording (the run is not reported)."
      : "No norm passed from one agent to another.");
    const ids = [...new Set(edges.flatMap((e) => [e.s, e.r]))];
    const home = (i) => R.pos[0] ? R.pos[0][i] : 0;
    ids.sort((a, b) => home(a) - home(b) || a - b);
    const W = 640, H = 380, cx = W / 2, cy = H / 2 + 6, rad = Math.min(W - 300, H) / 2 - 30;
    const at = {};
    ids.forEach((i, j) => {
      const ang = -Math.PI / 2 + 2 * Math.PI * j / ids.length;
      at[i] = [cx + rad * Math.cos(ang), cy + rad * Math.sin(ang), ang];
    });
    const s = svg("svg", {class: "graph", width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-target": k >= 0 ? R.targets[k].id : ""});
    const defs = svg("defs");
    [["talk", "var(--talk)"], ["observation", "var(--obs)"]].forEach(([o, c]) => defs.append(
      svg("marker", {id: `arrow-${o}-${k}`, viewBox: "0 0 10 10", refX: 18, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse"},
        svg("path", {d: "M0,0L10,5L0,10z", fill: c}))));
    s.append(defs);
    const now = R.steps[slot].s;
    const seen = {};
    edges.forEach((e) => {
      const [x1, y1] = at[e.s], [x2, y2] = at[e.r];
      const key = `${e.s}-${e.r}`;
      seen[key] = (seen[key] || 0) + 1;
      const bend = 18 * seen[key];
      const mx = (x1 + x2) / 2 - (y2 - y1) * bend / 200, my = (y1 + y2) / 2 + (x2 - x1) * bend / 200;
      const cls = `edge ${e.o}` + (e.ok === false ? " rejected" : "") + (e.step > now ? " later" : "");
      s.append(svg("path", {d: `M${x1.toFixed(1)},${y1.toFixed(1)}Q${mx.toFixed(1)},${my.toFixed(1)} ${x2.toFixed(1)},${y2.toFixed(1)}`,
        class: cls, "marker-end": `url(#arrow-${e.o}-${k})`, "data-source": name(e.s), "data-receiver": name(e.r),
        "data-origin": e.o, "data-step": e.step, "data-norm": e.id},
        svg("title", {}, `${name(e.s)} → ${name(e.r)} by ${e.o === "talk" ? "talk" : "observation"} at slot ${e.step}` +
          (e.p !== null && e.p !== undefined && R.places.length > 1 ? ` in ${placeName(e.p)}` : "") +
          `: "${e.content}"` + (e.ok === false ? " (rejected)" : e.ok ? " (qualified)" : ""))));
      // When, on the edge itself, while the edges are few enough to read.
      if (edges.length <= 40) s.append(svg("text", {x: mx, y: my,
        "text-anchor": "middle", class: "edge-label" + (e.step > now ? " later" : "")}, `slot ${e.step}`));
    });
    const hold = R.hold[slot] || [];
    // A crowd of nodes: names on hover only.
    const labels = ids.length <= 60;
    ids.forEach((i) => {
      const [x, y, ang] = at[i];
      const mask = hold[i] || 0;
      const fill = k >= 0 ? (mask & (1 << k) ? COLOURS[k % COLOURS.length] : "#e5e7eb") : "#e5e7eb";
      const anchor = Math.cos(ang) > 0.3 ? "start" : Math.cos(ang) < -0.3 ? "end" : "middle";
      const lx = x + 12 * Math.cos(ang), ly = y + 12 * Math.sin(ang) + (Math.abs(Math.cos(ang)) <= 0.3 ? (Math.sin(ang) > 0 ? 10 : -4) : 4);
      s.append(svg("g", {class: "node", "data-agent": name(i), onclick: () => showAgent(i)},
        svg("circle", {cx: x, cy: y, r: labels ? 7 : 3, fill}),
        labels ? svg("text", {x: lx, y: ly, "text-anchor": anchor},
          name(i) + (R.places.length > 1 ? ` (${placeName(R.pos[slot][i])})` : "")) : null,
        svg("title", {}, name(i) + (R.places.length > 1 ? ` (${placeName(R.pos[slot][i])})` : ""))));
    });
    const key = svg("g", {}, svg("text", {x: 4, y: 12}, "— talk"), svg("text", {x: 4, y: 26}, "- - observation"),
      svg("text", {x: 4, y: 40}, "faded: after this slot"),
      svg("text", {x: 4, y: 54}, "thin: the receiver rejected it"));
    s.append(key);
    return s;
  }

  init();
  follow();
})();
