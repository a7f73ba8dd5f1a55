// The page of `kairos view` (docs/viewer.md): a recording's worlds frame by
// frame, and its per-step series. Plain JS, no build step, nothing fetched
// from outside the server that serves the page.
//
// Agents are rasterised by hand into one ImageData (a Uint32Array in its
// 0xAABBGGRR layout, the recording's own colour layout) at the current
// zoom's resolution: fields first, as cell rectangles, then agents in array
// order; region and rank overlays and labels are drawn over it with the
// canvas API.
//
// For tests, window.kairosViewer exposes the state and a few controls
// (frameIndex, time, setFrame, worldToScreen, drawnFrames, lastDrawMs, fps).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  const SHAPES = ['circle', 'square', 'triangle', 'diamond'];
  const RANK_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
    '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const SERIES_COLOURS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed',
    '#0891b2', '#db2777', '#4b5563', '#65a30d', '#9333ea'];
  const CACHE_BYTES = 384 * 1024 * 1024;
  const OUTSIDE = 0xfff3f0ee; // around the world: #eef0f3 as 0xAABBGGRR
  const WHITE = 0xffffffff;

  // ---------------------------------------------------------------- state

  let resolveReady, rejectReady;
  const api = {
    ready: new Promise((res, rej) => { resolveReady = res; rejectReady = rej; }),
    isReady: false,
    error: null,
    world: 0,
    frameIndex: 0,     // the frame asked for (slider)
    drawnFrame: -1,    // the frame whose picture is on the canvas
    time: 0,
    field: -1,
    drawnFrames: 0,
    lastDrawMs: 0,
    fps: 0,
    playing: false,
    manifest: null,
    useIndex: true,    // zoomed in on many agents, draw only those near the window

    setFrame: (i) => setFrame(i),
    setWorld: (w) => setWorld(w),
    setField: (f) => setField(f),
    play: () => play(),
    pause: () => pause(),
    fit: () => { fitView(); requestDraw(); },
    worldToScreen: (x, y) => [x * view.scale + view.tx, y * view.scale + view.ty],
    screenToWorld: (px, py) => [(px - view.tx) / view.scale, (py - view.ty) / view.scale],
    // Draws the current frame n times in a row; returns the mean time of one
    // drawing in ms (what the rasteriser alone costs at this zoom).
    benchmarkDraw: (n = 20) => {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) draw();
      return (performance.now() - t0) / n;
    },
  };
  window.kairosViewer = api;
  api.ready.catch(() => {}); // reported on the page; a test awaits it itself

  let manifest = null;
  let worldIdx = 0;
  let frameIdx = 0;
  let current = null;      // decoded frame on screen
  let fieldIdx = -1;       // field drawn, -1 none
  const view = { scale: 1, tx: 0, ty: 0, user: false }; // CSS px = world * scale + t
  let canvas, ctx, image = null, image32 = null, dpr = 1;
  let cssW = 0, cssH = 0;
  let series = null;       // {names, steps, raw[row][col], values[col][row], dt}
  let plots = [];
  let drawToken = 0;
  let playing = false, rafId = 0, busy = false, lastAdvance = 0;
  const drawTimes = [];
  let fpsShownAt = 0;

  // ---------------------------------------------------------------- colours

  function parseColour(s) {
    // "#rrggbb" or "#rrggbbaa" -> 0xAABBGGRR
    const h = String(s).replace(/^#/, '');
    const r = parseInt(h.slice(0, 2), 16), g = parseInt(h.slice(2, 4), 16), b = parseInt(h.slice(4, 6), 16);
    const a = h.length >= 8 ? parseInt(h.slice(6, 8), 16) : 255;
    return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
  }

  function cssColour(c) {
    const r = c & 255, g = (c >>> 8) & 255, b = (c >>> 16) & 255, a = (c >>> 24) & 255;
    return `rgba(${r},${g},${b},${(a / 255).toFixed(3)})`;
  }

  // The colour of value v in a field's map: stops spread evenly over
  // [min, max], linear per channel, clamped; NaN -> 0 (not drawn).
  function colourOf(stops, min, max, v) {
    if (Number.isNaN(v)) return 0;
    const k = stops.length;
    if (k === 1) return stops[0];
    let t = max > min ? (v - min) / (max - min) : (v < min ? 0 : 1);
    if (!(t > 0)) return stops[0];
    if (t >= 1) return stops[k - 1];
    const pos = t * (k - 1);
    const i = Math.floor(pos), f = pos - i;
    const a = stops[i], b = stops[i + 1];
    let out = 0;
    for (let sh = 0; sh < 32; sh += 8) {
      const ca = (a >>> sh) & 255, cb = (b >>> sh) & 255;
      out |= Math.round(ca + (cb - ca) * f) << sh;
    }
    return out >>> 0;
  }

  // ---------------------------------------------------------------- frames

  function decodeFrame(buf) {
    const dv = new DataView(buf);
    const magic = String.fromCharCode(dv.getUint8(0), dv.getUint8(1), dv.getUint8(2), dv.getUint8(3));
    if (magic !== 'KRVF') throw new Error('frame: not a KRVF answer');
    const version = dv.getUint32(4, true);
    if (version !== 1) throw new Error(`frame: version ${version}, expected 1`);
    const time = dv.getFloat64(8, true);
    const n = dv.getUint32(16, true), nf = dv.getUint32(20, true);
    const W = dv.getUint32(24, true), H = dv.getUint32(28, true), L = dv.getUint32(32, true);
    let off = 40;
    const x = new Float32Array(buf, off, n); off += 4 * n;
    const y = new Float32Array(buf, off, n); off += 4 * n;
    const size = new Float32Array(buf, off, n); off += 4 * n;
    const rgba = new Uint32Array(buf, off, n); off += 4 * n;
    const shape = new Uint8Array(buf, off, n); off += n;
    const layer = new Uint8Array(buf, off, n); off += n;
    off = (off + 3) & ~3;
    const fields = [];
    for (let f = 0; f < nf; f++) { fields.push(new Float32Array(buf, off, W * H)); off += 4 * W * H; }
    const labels = [];
    const end = off + L;
    if (end > buf.byteLength) throw new Error('frame: shorter than its header says');
    const td = new TextDecoder();
    while (off + 8 <= end) {
      const agent = dv.getUint32(off, true), len = dv.getUint32(off + 4, true);
      off += 8;
      labels.push({ agent, text: td.decode(new Uint8Array(buf, off, len)) });
      off = (off + len + 3) & ~3;
    }
    return { time, n, x, y, size, rgba, shape, layer, W, H, fields, labels, bytes: buf.byteLength, colours: [] };
  }

  const cache = new Map(); // "w:i" -> {promise, bytes}; Map order = use order
  let cacheBytes = 0;

  function loadFrame(w, i) {
    const key = `${w}:${i}`;
    let e = cache.get(key);
    if (e) { cache.delete(key); cache.set(key, e); return e.promise; }
    e = { bytes: 0, promise: null };
    e.promise = fetch(`/api/frame?world=${w}&index=${i}`)
      .then((r) => {
        if (!r.ok) throw new Error(`/api/frame?world=${w}&index=${i}: HTTP ${r.status}`);
        return r.arrayBuffer();
      })
      .then((buf) => {
        const fr = decodeFrame(buf);
        e.bytes = fr.bytes; cacheBytes += fr.bytes;
        trimCache(key);
        return fr;
      })
      .catch((err) => { cache.delete(key); throw err; });
    cache.set(key, e);
    return e.promise;
  }

  function trimCache(keep) {
    for (const [k, e] of cache) {
      if (cacheBytes <= CACHE_BYTES) break;
      if (k === keep || e.bytes === 0) continue;
      cache.delete(k); cacheBytes -= e.bytes;
    }
  }

  // ---------------------------------------------------------------- drawing

  function worldOf() { return manifest.worlds[worldIdx]; }

  function sizeCanvas() {
    const panel = $('world-panel');
    const w = Math.max(1, Math.floor(panel.clientWidth)), h = Math.max(1, Math.floor(panel.clientHeight));
    const d = window.devicePixelRatio || 1;
    if (w === cssW && h === cssH && d === dpr && image) return false;
    cssW = w; cssH = h; dpr = d;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    canvas.width = Math.round(w * d);
    canvas.height = Math.round(h * d);
    image = ctx.createImageData(canvas.width, canvas.height);
    image32 = new Uint32Array(image.data.buffer);
    return true;
  }

  function fitView() {
    const b = worldOf().bounds;
    const bw = Math.max(1e-9, b[2] - b[0]), bh = Math.max(1e-9, b[3] - b[1]);
    const pad = 16, top = 28; // room for the frame rate at the top right
    view.scale = Math.max(1e-9, Math.min((cssW - 2 * pad) / bw, (cssH - pad - top) / bh));
    view.tx = Math.round((cssW - bw * view.scale) / 2 - b[0] * view.scale);
    view.ty = Math.round(top + (cssH - pad - top - bh * view.scale) / 2 - b[1] * view.scale);
    view.user = false;
  }

  let drawPending = false;
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; draw(); });
  }

  function blendPixel(buf, i, c) {
    const a = (c >>> 24) / 255, d = buf[i];
    const r = Math.round((c & 255) * a + (d & 255) * (1 - a));
    const g = Math.round(((c >>> 8) & 255) * a + ((d >>> 8) & 255) * (1 - a));
    const b = Math.round(((c >>> 16) & 255) * a + ((d >>> 16) & 255) * (1 - a));
    buf[i] = (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
  }

  function fillSpan(buf, s, e, c) {
    if ((c >>> 24) === 255) {
      if (e - s > 24) buf.fill(c, s, e);
      else for (let i = s; i < e; i++) buf[i] = c;
    } else {
      for (let i = s; i < e; i++) blendPixel(buf, i, c);
    }
  }

  function fieldColours(fr, f) {
    if (fr.colours[f]) return fr.colours[f];
    const spec = worldOf().fields[f];
    const stops = (spec.colormap || ['#000000ff', '#ffffffff']).map(parseColour);
    const min = Number(spec.min), max = Number(spec.max);
    const vals = fr.fields[f];
    const out = new Uint32Array(vals.length);
    for (let i = 0; i < vals.length; i++) out[i] = colourOf(stops, min, max, vals[i]);
    fr.colours[f] = out;
    return out;
  }

  function drawField(fr, buf, W, H) {
    const world = worldOf();
    const grid = world.grid;
    if (!grid || fieldIdx < 0 || fieldIdx >= fr.fields.length || fr.W === 0 || fr.H === 0) return;
    const colours = fieldColours(fr, fieldIdx);
    const cell = Number(grid.cell) || 1;
    const ox = grid.origin ? Number(grid.origin[0]) : 0, oy = grid.origin ? Number(grid.origin[1]) : 0;
    const S = view.scale * dpr, TX = view.tx * dpr, TY = view.ty * dpr;
    const gw = fr.W, gh = fr.H;
    // The cell under each pixel's centre, per column and per row.
    const col = new Int32Array(W);
    for (let px = 0; px < W; px++) {
      const c = Math.floor(((px + 0.5 - TX) / S - ox) / cell);
      col[px] = c >= 0 && c < gw ? c : -1;
    }
    let lo = 0, hi = W;
    while (lo < W && col[lo] < 0) lo++;
    while (hi > lo && col[hi - 1] < 0) hi--;
    if (lo >= hi) return;
    let prevRow = -2, prevStart = 0;
    for (let py = 0; py < H; py++) {
      const r = Math.floor(((py + 0.5 - TY) / S - oy) / cell);
      if (r < 0 || r >= gh) continue;
      const rowStart = py * W;
      if (r === prevRow) { // same cells as the row above: copy it
        buf.copyWithin(rowStart + lo, prevStart + lo, prevStart + hi);
        continue;
      }
      const base = r * gw;
      for (let px = lo; px < hi; px++) {
        const c = col[px];
        if (c < 0) continue;
        const v = colours[base + c];
        const a = v >>> 24;
        if (a === 255) buf[rowStart + px] = v;
        else if (a !== 0) blendPixel(buf, rowStart + px, v);
      }
      prevRow = r; prevStart = rowStart;
    }
  }

  function drawAgents(fr, buf, W, H) {
    const S = view.scale * dpr, TX = view.tx * dpr, TY = view.ty * dpr;
    const { n, x, y, size, rgba, shape } = fr;
    if (fr.maxSize === undefined) {
      let m = 0;
      for (let i = 0; i < n; i++) if (size[i] > m) m = size[i];
      fr.maxSize = m;
    }
    // The world window on screen, widened by the largest radius (and a
    // pixel): agents outside it are not looked at further.
    const reach = fr.maxSize / 2 + 2 / S;
    const wx0 = -TX / S - reach, wx1 = (W - TX) / S + reach;
    const wy0 = -TY / S - reach, wy1 = (H - TY) / S + reach;
    // Zoomed in on many agents: only those of the buckets in the window,
    // in array order still.
    const picked = visibleAgents(fr, wx0, wy0, wx1, wy1);
    fr.draws = (fr.draws || 0) + 1;
    const m = picked ? picked.length : n;
    for (let k = 0; k < m; k++) {
      const i = picked ? picked[k] : k;
      const xi = x[i];
      if (!(xi >= wx0 && xi <= wx1)) continue;
      const yi = y[i];
      if (!(yi >= wy0 && yi <= wy1)) continue;
      const c = rgba[i];
      if ((c >>> 24) === 0) continue;
      const cx = xi * S + TX, cy = yi * S + TY;
      const d = size[i] * S;
      if (!(d > 1.5)) { // one pixel: the one holding the centre
        const px = Math.floor(cx), py = Math.floor(cy);
        if (px >= 0 && px < W && py >= 0 && py < H) {
          if ((c >>> 24) === 255) buf[py * W + px] = c;
          else blendPixel(buf, py * W + px, c);
        }
        continue;
      }
      const r = d / 2;
      if (cx + r < 0 || cy + r < 0 || cx - r >= W || cy - r >= H) continue;
      const sh = shape[i];
      if (sh === 1) { // square
        const x0 = Math.max(0, Math.round(cx - r)), x1 = Math.min(W, Math.round(cx + r));
        const y0 = Math.max(0, Math.round(cy - r)), y1 = Math.min(H, Math.round(cy + r));
        for (let py = y0; py < y1; py++) fillSpan(buf, py * W + x0, py * W + x1, c);
        continue;
      }
      // circle, triangle (apex up), diamond: per row, the pixels whose
      // centres fall inside.
      const y0 = Math.max(0, Math.ceil(cy - r - 0.5)), y1 = Math.min(H - 1, Math.floor(cy + r - 0.5));
      const r2 = r * r;
      let drew = false;
      for (let py = y0; py <= y1; py++) {
        const dy = py + 0.5 - cy;
        let half;
        if (sh === 2) half = (dy + r) / 2;
        else if (sh === 3) half = r - Math.abs(dy);
        else { const q = r2 - dy * dy; half = q > 0 ? Math.sqrt(q) : 0; }
        if (half < 0) continue;
        const x0 = Math.max(0, Math.ceil(cx - half - 0.5)), x1 = Math.min(W - 1, Math.floor(cx + half - 0.5));
        if (x0 > x1) continue;
        fillSpan(buf, py * W + x0, py * W + x1 + 1, c);
        drew = true;
      }
      if (!drew) {
        const px = Math.floor(cx), py = Math.floor(cy);
        if (px >= 0 && px < W && py >= 0 && py < H) fillSpan(buf, py * W + px, py * W + px + 1, c);
      }
    }
  }

  // A frame's agents bucketed on a grid over the world's bounds: `order` holds the agent
  // indices bucket by bucket, ascending in each, `start` where each bucket
  // begins.
  const INDEX_MIN_AGENTS = 50000;
  function spatialIndex(fr) {
    if (fr.index) return fr.index;
    const b = worldOf().bounds, n = fr.n, x = fr.x, y = fr.y;
    const G = Math.max(8, Math.min(512, Math.round(Math.sqrt(n / 8))));
    const gx = G / Math.max(1e-9, b[2] - b[0]), gy = G / Math.max(1e-9, b[3] - b[1]);
    const bucket = new Uint32Array(n), start = new Uint32Array(G * G + 1);
    for (let i = 0; i < n; i++) {
      let cx = Math.floor((x[i] - b[0]) * gx), cy = Math.floor((y[i] - b[1]) * gy);
      cx = cx < 0 ? 0 : cx >= G ? G - 1 : cx | 0;
      cy = cy < 0 ? 0 : cy >= G ? G - 1 : cy | 0;
      const k = cy * G + cx;
      bucket[i] = k;
      start[k + 1]++;
    }
    for (let k = 0; k < G * G; k++) start[k + 1] += start[k];
    const fill = start.slice(0, G * G), order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[fill[bucket[i]]++] = i;
    fr.index = { G, gx, gy, b0: b[0], b1: b[1], start, order };
    return fr.index;
  }

  // The agents (indices, ascending) that may be in the world window
  // [x0, x1] x [y0, y1], or null when the window shows most of the world
  // (then a plain pass over all agents is as fast).
  function visibleAgents(fr, x0, y0, x1, y1) {
    if (fr.n < INDEX_MIN_AGENTS || !api.useIndex) return null;
    // Built from the second drawing of a frame on (panning, zooming): a
    // frame drawn once while playing is not worth it.
    if (!fr.index && !(fr.draws > 0)) return null;
    const b = worldOf().bounds;
    const ww = b[2] - b[0], wh = b[3] - b[1];
    const fx = (Math.min(x1, b[2]) - Math.max(x0, b[0])) / ww, fy = (Math.min(y1, b[3]) - Math.max(y0, b[1])) / wh;
    if (!(ww > 0 && wh > 0) || Math.max(0, fx) * Math.max(0, fy) > 0.3) return null;
    const ix = spatialIndex(fr), G = ix.G;
    const clamp = (v) => (v < 0 ? 0 : v >= G ? G - 1 : v | 0);
    const bx0 = clamp(Math.floor((x0 - ix.b0) * ix.gx)), bx1 = clamp(Math.floor((x1 - ix.b0) * ix.gx));
    const by0 = clamp(Math.floor((y0 - ix.b1) * ix.gy)), by1 = clamp(Math.floor((y1 - ix.b1) * ix.gy));
    let total = 0;
    for (let by = by0; by <= by1; by++) total += ix.start[by * G + bx1 + 1] - ix.start[by * G + bx0];
    const out = new Uint32Array(total);
    let o = 0;
    for (let by = by0; by <= by1; by++) {
      const s = ix.start[by * G + bx0], e = ix.start[by * G + bx1 + 1];
      out.set(ix.order.subarray(s, e), o);
      o += e - s;
    }
    return out.sort();
  }

  function simRect(world, sim) {
    // A simulator's area in world units: its cells, or the whole world.
    const b = world.bounds;
    if (!sim.rect) return [b[0], b[1], b[2], b[3]];
    const g = world.grid || { cell: 1, origin: [b[0], b[1]] };
    const cell = Number(g.cell) || 1, o = g.origin || [0, 0];
    return [o[0] + sim.rect[0] * cell, o[1] + sim.rect[1] * cell, o[0] + sim.rect[2] * cell, o[1] + sim.rect[3] * cell];
  }

  function drawOverlays(fr) {
    const world = worldOf();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const w2s = api.worldToScreen;
    const b = world.bounds;
    const [bx0, by0] = w2s(b[0], b[1]), [bx1, by1] = w2s(b[2], b[3]);
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#9aa4b1';
    ctx.strokeRect(Math.round(bx0) - 0.5, Math.round(by0) - 0.5, Math.round(bx1 - bx0) + 1, Math.round(by1 - by0) + 1);
    const sims = world.simulators || [];
    if ($('show-ranks').checked) {
      for (const sim of sims) {
        const r = simRect(world, sim);
        const [x0, y0] = w2s(r[0], r[1]), [x1, y1] = w2s(r[2], r[3]);
        ctx.globalAlpha = 0.22;
        ctx.fillStyle = RANK_COLOURS[(sim.rank | 0) % RANK_COLOURS.length];
        ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
        ctx.globalAlpha = 1;
      }
    }
    if ($('show-regions').checked) {
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'top';
      for (const sim of sims) {
        const r = simRect(world, sim);
        const [x0, y0] = w2s(r[0], r[1]), [x1, y1] = w2s(r[2], r[3]);
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5;
        ctx.strokeStyle = '#111827';
        ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
        ctx.setLineDash([]);
        const label = `${sim.name} · rank ${sim.rank}`;
        const tw = ctx.measureText(label).width;
        ctx.fillStyle = 'rgba(255,255,255,0.85)';
        ctx.fillRect(x0 + 3, y0 + 3, tw + 6, 15);
        ctx.fillStyle = '#111827';
        ctx.fillText(label, x0 + 6, y0 + 5);
      }
    }
    // Labels, when there are not too many on screen.
    if (fr.labels.length) {
      const shown = [];
      for (const l of fr.labels) {
        if (l.agent >= fr.n) continue;
        const [px, py] = w2s(fr.x[l.agent], fr.y[l.agent]);
        if (px < -50 || py < -20 || px > cssW + 50 || py > cssH + 20) continue;
        shown.push([px + Math.max(2, fr.size[l.agent] * view.scale / 2 + 2), py, l.text]);
        if (shown.length > 400) return;
      }
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.lineJoin = 'round';
      ctx.lineWidth = 3;
      ctx.strokeStyle = 'rgba(255,255,255,0.9)';
      ctx.fillStyle = '#111827';
      for (const [px, py, t] of shown) { ctx.strokeText(t, px, py); ctx.fillText(t, px, py); }
    }
  }

  function draw() {
    if (!manifest || !canvas) return;
    const t0 = performance.now();
    if (sizeCanvas() && !view.user) fitView();
    const W = canvas.width, H = canvas.height, buf = image32;
    // Outside the world a light grey, inside white.
    buf.fill(OUTSIDE);
    const b = worldOf().bounds;
    const S = view.scale * dpr;
    const wx0 = Math.max(0, Math.round(b[0] * S + view.tx * dpr)), wx1 = Math.min(W, Math.round(b[2] * S + view.tx * dpr));
    const wy0 = Math.max(0, Math.round(b[1] * S + view.ty * dpr)), wy1 = Math.min(H, Math.round(b[3] * S + view.ty * dpr));
    for (let py = wy0; py < wy1; py++) buf.fill(WHITE, py * W + wx0, py * W + wx1);
    const fr = current;
    if (fr) {
      drawField(fr, buf, W, H);
      drawAgents(fr, buf, W, H);
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.putImageData(image, 0, 0);
    if (fr) drawOverlays(fr);
    api.lastDrawMs = performance.now() - t0;
    api.drawnFrames++;
    if (playing) noteFps();
    else showFps();
  }

  // ---------------------------------------------------------------- frames on screen

  function timeLabel(i) {
    const t = manifest.times[i];
    return `t = ${fmtNum(t)}  (${i + 1}/${manifest.times.length})`;
  }

  function fmtNum(v) {
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v)) return String(v);
    return Number(v.toPrecision(6)).toString();
  }

  // Shows frame i of the current world; resolves once drawn (or once a
  // later request has taken its place).
  function setFrame(i) {
    if (!manifest) return api.ready.then(() => setFrame(i));
    const nt = manifest.times.length;
    i = Math.max(0, Math.min(nt - 1, Math.round(Number(i)) || 0));
    const w = worldIdx;
    const token = ++drawToken;
    frameIdx = i;
    api.frameIndex = i;
    api.time = manifest.times[i];
    const slider = $('time-slider');
    if (Number(slider.value) !== i) slider.value = String(i);
    $('time-label').textContent = timeLabel(i);
    updateReadout();
    redrawPlots();
    return loadFrame(w, i).then((fr) => {
      if (token !== drawToken) return false;
      current = fr;
      api.frameTime = fr.time;
      api.drawnFrame = i;
      showStatus('');
      draw();
      return true;
    }, (err) => {
      if (token === drawToken) showStatus(String(err.message || err));
      throw err;
    });
  }

  function setWorld(w) {
    w = Math.max(0, Math.min(manifest.worlds.length - 1, Number(w) | 0));
    worldIdx = w;
    api.world = w;
    $('world-select').value = String(w);
    current = null;
    api.drawnFrame = -1;
    fieldIdx = worldOf().fields && worldOf().fields.length ? 0 : -1;
    api.field = fieldIdx;
    buildFieldSelect();
    buildLegend();
    buildPlots(); // their height depends on the legend's
    fitView();
    return setFrame(frameIdx);
  }

  function setField(f) {
    const nf = (worldOf().fields || []).length;
    fieldIdx = Number(f) >= 0 && Number(f) < nf ? Number(f) : -1;
    api.field = fieldIdx;
    $('field-select').value = String(fieldIdx);
    buildLegend();
    draw();
  }

  function showStatus(msg, info) {
    const s = $('status');
    s.textContent = msg;
    s.className = info ? 'info' : '';
  }

  // ---------------------------------------------------------------- playing

  function speed() {
    const v = $('speed-select').value;
    return v === 'max' ? Infinity : Number(v);
  }

  function play() {
    if (playing || !manifest) return;
    if (frameIdx >= manifest.times.length - 1) setFrame(0);
    playing = true; api.playing = true;
    drawTimes.length = 0;
    lastAdvance = performance.now();
    const b = $('play');
    b.classList.add('playing'); b.innerHTML = '&#10074;&#10074;'; b.setAttribute('aria-label', 'Pause');
    rafId = requestAnimationFrame(tick);
  }

  function pause() {
    playing = false; api.playing = false;
    cancelAnimationFrame(rafId);
    const b = $('play');
    b.classList.remove('playing'); b.innerHTML = '&#9654;'; b.setAttribute('aria-label', 'Play');
    showFps();
  }

  function tick(now) {
    if (!playing) return;
    rafId = requestAnimationFrame(tick);
    if (busy) return;
    const interval = 1000 / speed();
    if (now - lastAdvance < interval - 2) return;
    lastAdvance = Number.isFinite(interval) && now - lastAdvance < 2 * interval ? lastAdvance + interval : now;
    const nt = manifest.times.length;
    const next = frameIdx + 1;
    if (next >= nt) { pause(); return; }
    busy = true;
    setFrame(next).catch(() => pause()).finally(() => { busy = false; });
    for (let k = 1; k <= 3 && next + k < nt; k++) loadFrame(worldIdx, next + k).catch(() => {});
  }

  function noteFps() {
    const now = performance.now();
    drawTimes.push(now);
    while (drawTimes.length > 2 && now - drawTimes[0] > 2000) drawTimes.shift();
    if (drawTimes.length >= 2) {
      api.fps = (drawTimes.length - 1) * 1000 / (now - drawTimes[0]);
    }
    if (now - fpsShownAt > 250) { fpsShownAt = now; showFps(); }
  }

  function showFps() {
    const ms = api.lastDrawMs.toFixed(1);
    $('fps').textContent = playing && drawTimes.length >= 2
      ? `${api.fps.toFixed(1)} fps · ${ms} ms`
      : `${current ? current.n.toLocaleString('en') : 0} agents · ${ms} ms`;
  }

  // ---------------------------------------------------------------- legend

  function shapeSvg(shape, colour, px = 16) {
    const c = colour, h = px / 2, r = px / 2 - 1.5;
    let body;
    switch (shape) {
      case 'square': body = `<rect x="${h - r}" y="${h - r}" width="${2 * r}" height="${2 * r}"/>`; break;
      case 'triangle': body = `<polygon points="${h},${h - r} ${h + r},${h + r} ${h - r},${h + r}"/>`; break;
      case 'diamond': body = `<polygon points="${h},${h - r} ${h + r},${h} ${h},${h + r} ${h - r},${h}"/>`; break;
      default: body = `<circle cx="${h}" cy="${h}" r="${r}"/>`;
    }
    return `<svg width="${px}" height="${px}" viewBox="0 0 ${px} ${px}" fill="${c}" stroke="rgba(0,0,0,0.25)" stroke-width="0.75">${body}</svg>`;
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[ch]));
  }

  function buildLegend() {
    const world = worldOf();
    const layers = world.layers || [];
    $('legend-layers').innerHTML = layers.length
      ? layers.map((l, k) => `<div class="legend-row" data-layer="${k}">${shapeSvg(l.shape, cssColour(parseColour(l.colour)))}` +
        `<span class="name">${esc(l.name)}</span><span class="detail">${esc(l.shape)}, ⌀ ${fmtNum(Number(l.size))}</span></div>`).join('')
      : '<div class="empty-note">no layers</div>';
    const fields = world.fields || [];
    $('legend-fields').innerHTML = fields.map((f, k) => {
      const stops = (f.colormap || []).map((s) => cssColour(parseColour(s)));
      const grad = stops.length > 1 ? `linear-gradient(to right, ${stops.join(', ')})` : (stops[0] || '#000');
      return `<div class="field-legend${k === fieldIdx ? '' : ' inactive'}" data-field="${k}">` +
        `<div class="legend-row"><span class="name">${esc(f.name)}</span><span class="detail">field${k === fieldIdx ? ', shown' : ''}</span></div>` +
        `<div class="ramp" style="background: ${grad}"></div>` +
        `<div class="range mono"><span>${fmtNum(Number(f.min))}</span><span>${fmtNum(Number(f.max))}</span></div></div>`;
    }).join('');
    const ranks = new Map();
    for (const s of world.simulators || []) {
      if (!ranks.has(s.rank)) ranks.set(s.rank, []);
      ranks.get(s.rank).push(s.name);
    }
    const lr = $('legend-ranks');
    lr.innerHTML = [...ranks.keys()].sort((a, b) => a - b).map((r) =>
      `<div class="legend-row" data-rank="${r}"><span class="swatch" style="background:${RANK_COLOURS[(r | 0) % RANK_COLOURS.length]}; opacity: 0.6"></span>` +
      `<span class="name">rank ${r}</span><span class="detail">${esc(ranks.get(r).join(', '))}</span></div>`).join('');
    lr.hidden = !$('show-ranks').checked;
  }

  function buildFieldSelect() {
    const fields = worldOf().fields || [];
    const sel = $('field-select');
    sel.innerHTML = fields.map((f, k) => `<option value="${k}">${esc(f.name)}</option>`).join('') + '<option value="-1">none</option>';
    sel.value = String(fieldIdx);
    $('field-choice').hidden = fields.length === 0;
  }

  // ---------------------------------------------------------------- series

  function parseCsv(text) {
    const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
    if (lines.length === 0) return null;
    const names = lines[0].split(',');
    const rows = lines.slice(1).map((l) => l.split(','));
    const steps = rows.map((r) => Number(r[0]));
    const values = names.map((_, c) => rows.map((r) => {
      const v = Number(r[c]);
      return r[c] === undefined || r[c] === '' || Number.isNaN(v) ? null : v;
    }));
    return { names, rows, steps, values };
  }

  // The series row for model time t: the last step whose time is <= t.
  function seriesRow(t) {
    if (!series || series.steps.length === 0) return -1;
    const target = t / series.dt + 1e-9 * Math.max(1, Math.abs(t / series.dt));
    let lo = 0, hi = series.steps.length - 1, best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (series.steps[mid] <= target) { best = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return best;
  }

  function buildReadout() {
    const body = $('series-readout').querySelector('tbody');
    if (!series) {
      body.innerHTML = '<tr><td colspan="2" class="empty-note">no series in this recording</td></tr>';
      return;
    }
    body.innerHTML = series.names.slice(1).map((n, k) =>
      `<tr data-name="${esc(n)}"><td class="name"><span class="key" style="background:${SERIES_COLOURS[k % SERIES_COLOURS.length]}"></span>${esc(n)}</td><td class="value"></td></tr>`).join('');
  }

  function updateReadout() {
    if (!series) return;
    const row = seriesRow(api.time);
    api.seriesRow = row;
    $('series-step').textContent = row >= 0 ? `step ${series.rows[row][0]}` : '';
    const trs = $('series-readout').querySelectorAll('tbody tr');
    trs.forEach((tr, k) => {
      const v = row >= 0 ? series.rows[row][k + 1] : undefined;
      tr.querySelector('.value').textContent = v === undefined ? '–' : v;
    });
  }

  function cursorPlugin() {
    return {
      hooks: {
        draw: [(u) => {
          if (!manifest) return;
          const x = u.valToPos(api.time, 'x', true);
          if (!Number.isFinite(x) || x < u.bbox.left - 1 || x > u.bbox.left + u.bbox.width + 1) return;
          const c = u.ctx;
          c.save();
          c.strokeStyle = '#111827';
          c.lineWidth = Math.max(1, devicePixelRatio || 1);
          c.setLineDash([4 * (devicePixelRatio || 1), 3 * (devicePixelRatio || 1)]);
          c.beginPath();
          c.moveTo(Math.round(x) + 0.5, u.bbox.top);
          c.lineTo(Math.round(x) + 0.5, u.bbox.top + u.bbox.height);
          c.stroke();
          c.restore();
        }],
      },
    };
  }

  function nearestFrame(t) {
    const ts = manifest.times;
    let best = 0;
    for (let i = 1; i < ts.length; i++) if (Math.abs(ts[i] - t) < Math.abs(ts[best] - t)) best = i;
    return best;
  }

  function buildPlots() {
    const holder = $('series-plots');
    holder.innerHTML = '';
    plots.forEach((p) => p.destroy());
    plots = [];
    if (!series) return;
    if (typeof window.uPlot !== 'function') {
      holder.innerHTML = '<div class="empty-note">uPlot did not load (is viewer/node_modules installed?): no plots</div>';
      return;
    }
    const xs = series.steps.map((s) => s * series.dt);
    const width = Math.max(200, holder.clientWidth || 300);
    const n = series.names.length - 1;
    // Fill what the side panel has left below the legend and the readout.
    const panel = $('side-panel');
    const avail = panel.getBoundingClientRect().bottom - holder.getBoundingClientRect().top - 16;
    const height = Math.max(80, Math.min(180, Math.floor(avail / Math.max(1, n)) - 20));
    for (let k = 1; k <= n; k++) {
      const colour = SERIES_COLOURS[(k - 1) % SERIES_COLOURS.length];
      const title = document.createElement('div');
      title.className = 'plot-title';
      title.textContent = series.names[k];
      holder.appendChild(title);
      const opts = {
        width, height,
        legend: { show: false },
        cursor: { sync: { key: 'kairos-series' }, drag: { x: false, y: false } },
        scales: { x: { time: false } },
        axes: [
          { size: 28, font: '10px system-ui, sans-serif', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d9dde3' } },
          { size: 52, space: 18, font: '10px system-ui, sans-serif', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d9dde3' } },
        ],
        series: [{ label: 'time' }, { label: series.names[k], stroke: colour, width: 1.5, points: { show: false } }],
        plugins: [cursorPlugin()],
      };
      const u = new window.uPlot(opts, [xs, series.values[k]], holder);
      u.over.addEventListener('click', () => {
        if (u.cursor.left == null || u.cursor.left < 0) return;
        setFrame(nearestFrame(u.posToVal(u.cursor.left, 'x')));
      });
      u.over.style.cursor = 'pointer';
      plots.push(u);
    }
  }

  function redrawPlots() {
    for (const u of plots) u.redraw(false, false);
  }

  // ---------------------------------------------------------------- input

  function attachInput() {
    $('time-slider').addEventListener('input', (e) => { setFrame(Number(e.target.value)).catch(() => {}); });
    $('play').addEventListener('click', () => (playing ? pause() : play()));
    $('world-select').addEventListener('change', (e) => { setWorld(Number(e.target.value)).catch(() => {}); });
    $('field-select').addEventListener('change', (e) => setField(Number(e.target.value)));
    $('show-regions').addEventListener('change', () => draw());
    $('show-ranks').addEventListener('change', () => { $('legend-ranks').hidden = !$('show-ranks').checked; draw(); });
    $('fit').addEventListener('click', () => { fitView(); draw(); });
    $('speed-select').addEventListener('change', () => { drawTimes.length = 0; });

    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const mx = e.clientX - rect.left, my = e.clientY - rect.top;
      const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
      const factor = Math.exp(-e.deltaY * unit * 0.0015);
      const b = worldOf().bounds;
      const fit = Math.min(cssW / Math.max(1e-9, b[2] - b[0]), cssH / Math.max(1e-9, b[3] - b[1]));
      const s = Math.max(fit / 8, Math.min(fit * 5000, view.scale * factor));
      const [wx, wy] = api.screenToWorld(mx, my);
      view.scale = s;
      view.tx = mx - wx * s;
      view.ty = my - wy * s;
      view.user = true;
      requestDraw();
    }, { passive: false });

    let drag = null;
    canvas.addEventListener('pointerdown', (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, tx: view.tx, ty: view.ty };
      canvas.setPointerCapture(e.pointerId);
      canvas.classList.add('dragging');
    });
    canvas.addEventListener('pointermove', (e) => {
      if (drag) {
        view.tx = drag.tx + (e.clientX - drag.x);
        view.ty = drag.ty + (e.clientY - drag.y);
        view.user = true;
        requestDraw();
      }
      showHover(e);
    });
    const endDrag = () => { drag = null; canvas.classList.remove('dragging'); };
    canvas.addEventListener('pointerup', endDrag);
    canvas.addEventListener('pointercancel', endDrag);
    canvas.addEventListener('pointerleave', () => { $('hover-info').textContent = ''; });
    canvas.addEventListener('dblclick', () => { fitView(); draw(); });

    document.addEventListener('keydown', (e) => {
      if (e.target instanceof HTMLSelectElement || (e.target instanceof HTMLInputElement && e.target.type !== 'range' && e.target.type !== 'checkbox')) return;
      if (e.key === ' ') { e.preventDefault(); playing ? pause() : play(); } else if (e.target.type !== 'range') {
        if (e.key === 'ArrowRight') { setFrame(frameIdx + 1); e.preventDefault(); } else if (e.key === 'ArrowLeft') { setFrame(frameIdx - 1); e.preventDefault(); } else if (e.key === 'Home') setFrame(0);
        else if (e.key === 'End') setFrame(manifest.times.length - 1);
      }
    });

    let resizeTimer = 0;
    window.addEventListener('resize', () => {
      requestDraw();
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => { buildPlots(); }, 150);
    });
  }

  function showHover(e) {
    if (!manifest) return;
    const rect = canvas.getBoundingClientRect();
    const [wx, wy] = api.screenToWorld(e.clientX - rect.left, e.clientY - rect.top);
    let text = `x ${wx.toFixed(2)}  y ${wy.toFixed(2)}`;
    const g = worldOf().grid;
    if (g && current && fieldIdx >= 0 && current.fields[fieldIdx]) {
      const cell = Number(g.cell) || 1, o = g.origin || [0, 0];
      const cx = Math.floor((wx - o[0]) / cell), cy = Math.floor((wy - o[1]) / cell);
      if (cx >= 0 && cy >= 0 && cx < current.W && cy < current.H) {
        const v = current.fields[fieldIdx][cy * current.W + cx];
        text += `   cell ${cx},${cy}  ${worldOf().fields[fieldIdx].name} ${Number.isNaN(v) ? '–' : fmtNum(v)}`;
      }
    }
    $('hover-info').textContent = text;
  }

  // ---------------------------------------------------------------- start

  async function start() {
    canvas = $('world');
    ctx = canvas.getContext('2d', { alpha: false });
    showStatus('loading the recording…', true);
    const r = await fetch('/recording/manifest.json');
    if (!r.ok) throw new Error(`/recording/manifest.json: HTTP ${r.status}`);
    manifest = await r.json();
    if (manifest.format !== 'kairos-frames') throw new Error('manifest.json: not a kairos-frames recording');
    if (manifest.version !== 1) throw new Error(`manifest.json: version ${manifest.version}, this page reads 1`);
    if (!Array.isArray(manifest.worlds) || manifest.worlds.length === 0) throw new Error('manifest.json: no world');
    if (!Array.isArray(manifest.times) || manifest.times.length === 0) throw new Error('manifest.json: no frame');
    api.manifest = manifest;
    document.title = `kairos view · ${manifest.model || ''}`;
    $('model-name').textContent = `${manifest.model || ''}${manifest.seed !== undefined ? ` · seed ${manifest.seed}` : ''}` +
      `${manifest.ranks ? ` · ${manifest.ranks} rank${manifest.ranks === 1 ? '' : 's'}` : ''}`;

    const ws = $('world-select');
    ws.innerHTML = manifest.worlds.map((w, k) => `<option value="${k}">${esc(w.name)}</option>`).join('');
    $('world-choice').hidden = manifest.worlds.length < 2;
    const slider = $('time-slider');
    slider.max = String(manifest.times.length - 1);

    if (manifest.series) {
      try {
        const sr = await fetch('/recording/series.csv');
        if (!sr.ok) throw new Error(`HTTP ${sr.status}`);
        series = parseCsv(await sr.text());
        if (series) series.dt = Number(manifest.series_step) > 0 ? Number(manifest.series_step) : 1;
      } catch (err) {
        series = null;
        console.warn('series.csv:', err);
      }
    }
    buildReadout();
    attachInput();
    sizeCanvas();

    // ?world=W&frame=N&field=NAME|none&regions=1&ranks=1 (for links and screenshots)
    const q = new URLSearchParams(location.search);
    if (q.get('regions') === '1') $('show-regions').checked = true;
    if (q.get('ranks') === '1') $('show-ranks').checked = true;
    if (q.get('speed')) $('speed-select').value = q.get('speed');
    frameIdx = Number(q.get('frame')) || 0;
    worldIdx = Number(q.get('world')) || 0;
    await setWorld(worldIdx);
    if (q.has('field')) {
      const name = q.get('field');
      setField((worldOf().fields || []).findIndex((f) => f.name === name));
    }
    api.isReady = true;
    resolveReady(api);
  }

  function fail(err) {
    api.error = String(err && err.message ? err.message : err);
    showStatus(api.error);
    rejectReady(err);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => start().catch(fail));
  else start().catch(fail);
})();
