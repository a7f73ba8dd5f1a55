// The viewer's browser test (issue 21, docs/viewer.md).
//
//   node tests/viewer/check_viewer.mjs KAIROS_BINARY [--model FILE] [--keep]
//   node tests/viewer/check_viewer.mjs KAIROS_BINARY --frames-dir DIR
//   node tests/viewer/check_viewer.mjs --url http://127.0.0.1:PORT/
//
// Records examples/ecology.json (`kairos run MODEL --frames DIR`), serves it
// (`kairos view DIR --port 0`, with KAIROS_VIEWER_DIR set to this tree's
// viewer/ unless it is set already), opens the page in headless Chromium
// (/usr/bin/chromium, or $CHROMIUM) through playwright-core (viewer's npm
// devDependency) and checks, on screenshots and against the data the server
// gives:
//   (a) the world is drawn: the screenshot pixel at an agent of each layer
//       (one no later agent covers) has the agent's colour, and a pixel of
//       a field cell that no agent covers has the cell's colour;
//   (b) stepping the slider to the next frame (keyboard, which fires the
//       range's `input`) draws the next frame: the same checks on it, and at
//       least one agent pixel that changed from the previous picture;
//   (c) the series readout shows, figure by figure, the very text of
//       series.csv's row for the frame's time.
// With --frames-dir it serves a recording made beforehand instead of making
// one; with --url it checks a server that is already running (both for
// developing the page). Prints one line; exits 1 with the reason on failure.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const started = Date.now();
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOLERANCE = 6;   // per channel, in 0-255
const VIEWPORT = { width: 1280, height: 800 };

class Failure extends Error {}
const fail = (msg) => { throw new Failure(msg); };

// ------------------------------------------------------------------ arguments

const args = process.argv.slice(2);
let kairos = null, url = null, keep = false, framesDir = null;
let model = path.join(root, 'examples', 'ecology.json');
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--url') url = args[++i];
  else if (a === '--model') model = path.resolve(args[++i]);
  else if (a === '--keep') keep = true;
  else if (a === '--frames-dir') framesDir = path.resolve(args[++i]);
  else if (a.startsWith('-')) usage(`unknown option ${a}`);
  else if (!kairos) kairos = path.resolve(a);
  else usage(`unexpected argument ${a}`);
}
if (!kairos && !url) usage('no kairos binary');

function usage(msg) {
  console.error(`check_viewer: ${msg}\nusage: node tests/viewer/check_viewer.mjs KAIROS_BINARY [--model FILE] [--keep]\n` +
    '       node tests/viewer/check_viewer.mjs KAIROS_BINARY --frames-dir DIR\n' +
    '       node tests/viewer/check_viewer.mjs --url http://127.0.0.1:PORT/');
  process.exit(2);
}

// ------------------------------------------------------------------ helpers

function run(cmd, argv, opts, timeoutMs) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Failure(`${path.basename(cmd)} ${argv.join(' ')}: no end after ${timeoutMs / 1000} s`)); }, timeoutMs);
    p.on('error', (e) => { clearTimeout(timer); reject(new Failure(`${cmd}: ${e.message}`)); });
    p.on('close', (code, sig) => { clearTimeout(timer); resolve({ code, sig, out, err }); });
  });
}

// Starts `kairos view DIR --port 0` and resolves with its URL, read from
// its line "kairos view: serving DIR at http://127.0.0.1:PORT/".
function startView(dir) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    if (!env.KAIROS_VIEWER_DIR) env.KAIROS_VIEWER_DIR = path.join(root, 'viewer');
    const p = spawn(kairos, ['view', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '', err = '', done = false;
    const finish = (f) => { if (!done) { done = true; clearTimeout(timer); f(); } };
    const timer = setTimeout(() => finish(() => { p.kill('SIGKILL'); reject(new Failure(`kairos view: no "serving … at URL" line within 10 s; stdout: ${out.trim()} stderr: ${err.trim()}`)); }), 10000);
    p.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^kairos view: serving .* at (http:\/\/\S+)\s*$/m);
      if (m) finish(() => resolve({ proc: p, url: m[1].endsWith('/') ? m[1] : `${m[1]}/` }));
    });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', (e) => finish(() => reject(new Failure(`kairos view: ${e.message}`))));
    p.on('close', (code) => finish(() => reject(new Failure(`kairos view exited (${code}) before serving; stdout: ${out.trim()} stderr: ${err.trim()}`))));
  });
}

async function getBytes(base, route) {
  const r = await fetch(new URL(route, base));
  if (!r.ok) fail(`${route}: HTTP ${r.status}`);
  return Buffer.from(await r.arrayBuffer());
}

// The KRVF answer of /api/frame (docs/viewer.md).
function decodeFrame(buf, where) {
  if (buf.length < 40 || buf.toString('latin1', 0, 4) !== 'KRVF') fail(`${where}: not a KRVF answer`);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const u32 = (o) => dv.getUint32(o, true);
  const f = { version: u32(4), time: dv.getFloat64(8, true), n: u32(16), nf: u32(20), W: u32(24), H: u32(28), L: u32(32) };
  const n = f.n;
  let off = 40;
  const need = 40 + 18 * n + 4 * f.nf * f.W * f.H + f.L;
  if (buf.length < need) fail(`${where}: ${buf.length} bytes, its header needs ${need}`);
  const arr = (k, bytes) => { const a = []; for (let i = 0; i < n; i++) a.push(k(off + bytes * i)); off += bytes * n; return a; };
  f.x = arr((o) => dv.getFloat32(o, true), 4);
  f.y = arr((o) => dv.getFloat32(o, true), 4);
  f.size = arr((o) => dv.getFloat32(o, true), 4);
  f.rgba = arr((o) => u32(o), 4);
  f.shape = arr((o) => dv.getUint8(o), 1);
  f.layer = arr((o) => dv.getUint8(o), 1);
  off = (off + 3) & ~3;
  f.fields = [];
  for (let k = 0; k < f.nf; k++) {
    const v = new Float32Array(f.W * f.H);
    for (let i = 0; i < v.length; i++) v[i] = dv.getFloat32(off + 4 * i, true);
    f.fields.push(v); off += 4 * f.W * f.H;
  }
  f.labels = [];
  const end = off + f.L;
  while (off + 8 <= end) {
    const agent = u32(off), len = u32(off + 4);
    f.labels.push({ agent, text: buf.toString('utf8', off + 8, off + 8 + len) });
    off = (off + 8 + len + 3) & ~3;
  }
  return f;
}

// An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are).
function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) fail('screenshot: not a PNG');
  let off = 8, width = 0, height = 0, depth = 0, type = 0, interlace = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off), kind = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    off += 12 + len;
    if (kind === 'IHDR') { width = data.readUInt32BE(0); height = data.readUInt32BE(4); depth = data[8]; type = data[9]; interlace = data[12]; }
    else if (kind === 'IDAT') idat.push(data);
    else if (kind === 'IEND') break;
  }
  const bpp = type === 6 ? 4 : type === 2 ? 3 : 0;
  if (depth !== 8 || !bpp || interlace) fail(`screenshot: PNG of depth ${depth}, colour type ${type}, interlace ${interlace}: not read here`);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * bpp, out = Buffer.alloc(height * stride);
  for (let y = 0, p = 0; y < height; y++) {
    const ft = raw[p++], row = y * stride, prev = row - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[row + x - bpp] : 0, b = y > 0 ? out[prev + x] : 0, c = x >= bpp && y > 0 ? out[prev + x - bpp] : 0;
      let v = raw[p++];
      if (ft === 1) v += a;
      else if (ft === 2) v += b;
      else if (ft === 3) v += (a + b) >> 1;
      else if (ft === 4) { const q = a + b - c, pa = Math.abs(q - a), pb = Math.abs(q - b), pc = Math.abs(q - c); v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      out[row + x] = v & 255;
    }
  }
  return { width, height, pixel: (x, y) => { const o = y * stride + x * bpp; return [out[o], out[o + 1], out[o + 2]]; } };
}

const rgbOf = (c) => [c & 255, (c >>> 8) & 255, (c >>> 16) & 255];
const overWhite = (c) => { const a = (c >>> 24) / 255; return rgbOf(c).map((v) => Math.round(v * a + 255 * (1 - a))); };
const near = (p, q, tol = TOLERANCE) => p.every((v, i) => Math.abs(v - q[i]) <= tol);
const hex = (p) => `#${p.map((v) => v.toString(16).padStart(2, '0')).join('')}`;

function parseColour(s) {
  const h = String(s).replace(/^#/, '');
  const a = h.length >= 8 ? parseInt(h.slice(6, 8), 16) : 255;
  return ((a << 24) | (parseInt(h.slice(4, 6), 16) << 16) | (parseInt(h.slice(2, 4), 16) << 8) | parseInt(h.slice(0, 2), 16)) >>> 0;
}

// A field value's colour (docs/viewer.md): stops spread evenly over
// [min, max], linear per channel, clamped.
function colourOf(spec, v) {
  const stops = spec.colormap.map(parseColour), k = stops.length;
  const min = Number(spec.min), max = Number(spec.max);
  const t = max > min ? (v - min) / (max - min) : (v < min ? 0 : 1);
  if (!(t > 0)) return stops[0];
  if (t >= 1) return stops[k - 1];
  const pos = t * (k - 1), i = Math.floor(pos), f = pos - i;
  let out = 0;
  for (let sh = 0; sh < 32; sh += 8) {
    const a = (stops[i] >>> sh) & 255, b = (stops[i + 1] >>> sh) & 255;
    out |= Math.round(a + (b - a) * f) << sh;
  }
  return out >>> 0;
}

function parseCsv(text) {
  const lines = text.split(/\r?\n/).filter((l) => l.length);
  return { names: lines[0].split(','), rows: lines.slice(1).map((l) => l.split(',')) };
}

// ------------------------------------------------------------------ the checks

// The places to check on a picture of frame fr: for each layer, up to 3
// agents whose centre pixel no later agent, label or overlay can cover, and
// up to 3 points of field cells no agent covers. Each: {what, x, y, rgb}
// with x, y in page pixels.
function probes(fr, world, geo, accept = () => true) {
  const { scale, tx, ty, canvas, avoid } = geo;
  const px = (wx) => canvas.x + wx * scale + tx, py = (wy) => canvas.y + wy * scale + ty;
  const margin = 2 / scale; // world units of 2 px
  const b = world.bounds;
  const inside = (X, Y) => X >= canvas.x + 2 && Y >= canvas.y + 2 && X < canvas.x + canvas.w - 2 && Y < canvas.y + canvas.h - 2 &&
    X >= px(b[0]) + 2 && X < px(b[2]) - 2 && Y >= py(b[1]) + 2 && Y < py(b[3]) - 2 &&
    !avoid.some((r) => X >= r.x - 2 && X < r.x + r.w + 2 && Y >= r.y - 2 && Y < r.y + r.h + 2);
  // A grid of buckets of agents, to find quickly those near a point.
  let largest = 0;
  for (let a = 0; a < fr.n; a++) largest = Math.max(largest, fr.size[a]);
  const cellW = Math.max(1e-6, largest / 2 + margin);
  const buckets = new Map();
  const key = (i, j) => `${i},${j}`;
  for (let a = 0; a < fr.n; a++) {
    const k = key(Math.floor(fr.x[a] / cellW), Math.floor(fr.y[a] / cellW));
    if (!buckets.has(k)) buckets.set(k, []);
    buckets.get(k).push(a);
  }
  // Could an agent drawn after `after` (all agents: after = -1) cover the
  // pixel of page coordinates X, Y?
  const covered = (X, Y, after, self) => {
    const wx = (X + 0.5 - canvas.x - tx) / scale, wy = (Y + 0.5 - canvas.y - ty) / scale;
    const ci = Math.floor(wx / cellW), cj = Math.floor(wy / cellW);
    for (let di = -1; di <= 1; di++) for (let dj = -1; dj <= 1; dj++) {
      for (const a of buckets.get(key(ci + di, cj + dj)) || []) {
        if (a <= after || a === self) continue;
        const reach = Math.max(fr.size[a] / 2, 1 / scale) + margin;
        if (Math.abs(fr.x[a] - wx) <= reach && Math.abs(fr.y[a] - wy) <= reach) return true;
      }
    }
    return false;
  };
  const labelled = fr.labels.filter((l) => l.agent < fr.n).map((l) => {
    const X = px(fr.x[l.agent]), Y = py(fr.y[l.agent]);
    return { x: X - 4, y: Y - 10, w: 16 + 8 * l.text.length + fr.size[l.agent] * scale, h: 20 };
  });
  const underLabel = (X, Y) => labelled.some((r) => X >= r.x && X < r.x + r.w && Y >= r.y && Y < r.y + r.h);

  const out = [];
  const layers = world.layers || [];
  const byLayer = new Map();
  for (let a = 0; a < fr.n; a++) {
    if ((fr.rgba[a] >>> 24) !== 255) continue; // blended: its colour depends on what is under it
    if (!byLayer.has(fr.layer[a])) byLayer.set(fr.layer[a], []);
    byLayer.get(fr.layer[a]).push(a);
  }
  for (const [layer, agents] of [...byLayer].sort((p, q) => p[0] - q[0])) {
    const name = layers[layer] ? layers[layer].name : `layer ${layer}`;
    // Larger agents first (their centre pixel is theirs whatever the shape),
    // spread over the array.
    const order = agents.slice().sort((p, q) => (fr.size[q] * scale >= 4) - (fr.size[p] * scale >= 4));
    const step = Math.max(1, Math.floor(order.length / 50));
    let found = 0;
    for (let t = 0; t < order.length && found < 3; t++) {
      const a = order[(t % Math.ceil(order.length / step)) * step + Math.floor(t / Math.ceil(order.length / step))];
      if (a === undefined) continue;
      const X = Math.floor(px(fr.x[a])), Y = Math.floor(py(fr.y[a]));
      if (!inside(X, Y) || underLabel(X, Y) || covered(X, Y, a, a) || !accept(X, Y, rgbOf(fr.rgba[a]))) continue;
      out.push({ what: `${name} agent #${a} at (${fr.x[a]}, ${fr.y[a]})`, kind: 'agent', x: X, y: Y, rgb: rgbOf(fr.rgba[a]) });
      found++;
    }
    if (!found) out.push({ what: `${name}: no agent of this layer has a pixel no other agent covers`, kind: 'none' });
  }
  const fields = world.fields || [];
  if (fields.length && fr.nf && world.grid) {
    const g = world.grid, cell = Number(g.cell) || 1, o = g.origin || [0, 0];
    const spec = fields[0];
    let found = 0;
    // Cells spread over the grid: every step-th, then the ones after them.
    const cells = fr.W * fr.H, step = Math.max(1, Math.floor(cells / 97)), m = Math.ceil(cells / step);
    for (let t = 0; found < 3 && t < m * step; t++) {
      const s = (t % m) * step + Math.floor(t / m);
      if (s >= cells) continue;
      const v = fr.fields[0][s];
      if (Number.isNaN(v)) continue;
      const colour = overWhite(colourOf(spec, v));
      if (near(colour, [255, 255, 255], 30)) continue; // a blank canvas must not pass
      const cx = s % fr.W, cy = Math.floor(s / fr.W);
      let done = false;
      for (const fy of [0.25, 0.5, 0.75]) {
        for (const fx of [0.25, 0.5, 0.75]) {
          const X = Math.floor(px(o[0] + (cx + fx) * cell)), Y = Math.floor(py(o[1] + (cy + fy) * cell));
          if (!inside(X, Y) || underLabel(X, Y) || covered(X, Y, -1, -1)) continue;
          out.push({ what: `${spec.name} cell (${cx}, ${cy}) = ${v}`, kind: 'field', x: X, y: Y, rgb: colour });
          found++; done = true; break;
        }
        if (done) break;
      }
    }
    if (!found) out.push({ what: `field ${spec.name}: no cell with a pixel free of agents and far from white`, kind: 'none' });
  }
  return out;
}

async function geometry(page) {
  return page.evaluate(() => {
    const v = window.kairosViewer;
    const [x0, y0] = v.worldToScreen(0, 0), [x1] = v.worldToScreen(1, 1);
    const r = document.getElementById('world').getBoundingClientRect();
    const avoid = ['fps', 'hover-info', 'status'].map((id) => document.getElementById(id))
      .filter((e) => e && getComputedStyle(e).display !== 'none')
      .map((e) => { const q = e.getBoundingClientRect(); return { x: q.x, y: q.y, w: q.width, h: q.height }; });
    return { scale: x1 - x0, tx: x0, ty: y0, dpr: window.devicePixelRatio, canvas: { x: r.x, y: r.y, w: r.width, h: r.height }, avoid };
  });
}

async function shot(page) {
  return decodePng(await page.screenshot({ type: 'png' }));
}

function checkProbes(list, png, frameNo) {
  const bad = [];
  for (const p of list) {
    if (p.kind === 'none') { bad.push(`frame ${frameNo}: ${p.what}`); continue; }
    const got = png.pixel(p.x, p.y);
    p.got = got;
    if (!near(got, p.rgb)) bad.push(`frame ${frameNo}: ${p.what}: pixel (${p.x}, ${p.y}) is ${hex(got)}, expected ${hex(p.rgb)}`);
  }
  if (bad.length) fail(`the world is not drawn as recorded:\n  ${bad.join('\n  ')}`);
  if (!list.some((p) => p.kind === 'agent')) fail(`frame ${frameNo}: no agent to check`);
}

async function waitDrawn(page, index, what) {
  try {
    await page.waitForFunction((i) => window.kairosViewer.drawnFrame === i, index, { timeout: 10000 });
  } catch {
    const st = await page.evaluate(() => ({ f: window.kairosViewer.frameIndex, d: window.kairosViewer.drawnFrame, e: document.getElementById('status').textContent }));
    fail(`${what}: frame ${index} not drawn within 10 s (asked for ${st.f}, drawn ${st.d}; page says "${st.e}")`);
  }
}

async function readout(page) {
  return page.evaluate(() => [...document.querySelectorAll('#series-readout tr[data-name]')]
    .map((tr) => [tr.dataset.name, tr.querySelector('.value').textContent.trim()]));
}

function checkReadout(shown, csv, manifest, index) {
  const dt = Number(manifest.series_step) > 0 ? Number(manifest.series_step) : 1;
  const t = manifest.times[index];
  let row = null;
  for (const r of csv.rows) if (Number(r[0]) * dt <= t + 1e-9 * Math.max(1, Math.abs(t))) row = r;
  if (!row) fail(`series.csv has no row at or before time ${t}`);
  const want = csv.names.slice(1).map((n, k) => [n, row[k + 1]]);
  const got = new Map(shown);
  const bad = want.filter(([n, v]) => got.get(n) !== v).map(([n, v]) => `${n}: page shows ${JSON.stringify(got.get(n))}, series.csv step ${row[0]} has ${JSON.stringify(v)}`);
  if (shown.length !== want.length) bad.push(`page shows ${shown.length} figures, series.csv has ${want.length}`);
  if (bad.length) fail(`series readout at time ${t} (frame ${index}):\n  ${bad.join('\n  ')}`);
  return want.length;
}

// ------------------------------------------------------------------ main

async function main() {
  const require = createRequire(path.join(root, 'viewer', 'package.json'));
  let chromium;
  try { ({ chromium } = require('playwright-core')); } catch { fail('playwright-core is not installed in viewer/node_modules (scripts/setup)'); }
  if (!existsSync(CHROMIUM)) fail(`no Chromium at ${CHROMIUM} (scripts/setup installs the chromium package)`);

  let dir = null, view = null, browser = null;
  const cleanup = [];
  try {
    if (!url) {
      let frames = framesDir;
      if (!frames) {
        dir = mkdtempSync(path.join(tmpdir(), 'kairos-viewer-'));
        cleanup.push(() => { if (!keep) rmSync(dir, { recursive: true, force: true }); });
        frames = path.join(dir, 'frames');
        const r = await run(kairos, ['run', model, '--frames', frames, '--quiet'], { cwd: dir }, 60000);
        if (r.code !== 0) fail(`kairos run ${path.basename(model)} --frames: exit ${r.code ?? r.sig}\n${r.err.trim().split('\n').slice(0, 6).join('\n')}`);
        if (!existsSync(path.join(frames, 'manifest.json'))) fail(`kairos run --frames wrote no ${frames}/manifest.json`);
      }
      view = await startView(frames);
      cleanup.push(() => view.proc.kill('SIGTERM'));
      url = view.url;
    }
    const manifest = JSON.parse((await getBytes(url, 'recording/manifest.json')).toString('utf8'));
    const nt = manifest.times.length;
    if (nt < 2) fail(`the recording has ${nt} frame(s): the test needs two`);
    if (!manifest.series) fail('the recording has no series (manifest "series" is null)');
    const csv = parseCsv((await getBytes(url, 'recording/series.csv')).toString('utf8'));
    const world = manifest.worlds[0];

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'], headless: true });
    const page = await browser.newPage({ viewport: VIEWPORT, deviceScaleFactor: 1 });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const answer = await page.goto(url, { timeout: 15000 });
    if (!answer || !answer.ok()) fail(`GET ${url}: ${answer ? `HTTP ${answer.status()}` : 'no answer'}: the page is not served (KAIROS_VIEWER_DIR=${process.env.KAIROS_VIEWER_DIR || path.join(root, 'viewer')})`);
    let problem = null;
    try {
      await page.waitForFunction(() => window.kairosViewer && (window.kairosViewer.isReady || window.kairosViewer.error), null, { timeout: 15000 });
      problem = await page.evaluate(() => window.kairosViewer.error);
    } catch (e) {
      problem = e.message.split('\n')[0];
    }
    if (problem) fail(`the page did not get ready: ${problem}${errors.length ? `; page errors: ${errors.join('; ')}` : ''}`);
    await waitDrawn(page, 0, 'the first picture');

    // (a) frame K, reached through the slider's input event.
    const K = Math.min(nt - 2, Math.floor(nt / 3));
    await page.evaluate((k) => {
      const s = document.getElementById('time-slider');
      s.value = String(k);
      s.dispatchEvent(new Event('input', { bubbles: true }));
    }, K);
    await waitDrawn(page, K, 'slider set to frame K');
    const geo = await geometry(page);
    if (geo.dpr !== 1) fail(`devicePixelRatio ${geo.dpr}, the test expects 1`);
    const frK = decodeFrame(await getBytes(url, `api/frame?world=0&index=${K}`), `frame ${K}`);
    const shotK = await shot(page);
    const probesK = probes(frK, world, geo);
    checkProbes(probesK, shotK, K);
    const figures = checkReadout(await readout(page), csv, manifest, K);

    // (b) one step on: the keyboard on the slider.
    await page.focus('#time-slider');
    await page.keyboard.press('ArrowRight');
    await waitDrawn(page, K + 1, 'ArrowRight on the slider');
    const frN = decodeFrame(await getBytes(url, `api/frame?world=0&index=${K + 1}`), `frame ${K + 1}`);
    const geoN = await geometry(page);
    const shotN = await shot(page);
    const probesN = probes(frN, world, geoN);
    checkProbes(probesN, shotN, K + 1);
    // Agents of frame K+1 whose pixel was something else in frame K's picture.
    let changed = probesN.filter((p) => p.kind === 'agent' && !near(shotK.pixel(p.x, p.y), p.rgb));
    if (!changed.length) {
      // Look wider than the probes: any uncovered agent of frame K+1.
      changed = probes(frN, world, geoN, (X, Y, rgb) => !near(shotK.pixel(X, Y), rgb)).filter((p) => p.kind === 'agent');
      if (changed.length) checkProbes(changed, shotN, K + 1);
    }
    if (!changed.length) {
      let diff = 0;
      for (let y = 0; y < shotK.height; y++) for (let x = 0; x < shotK.width; x++) if (!near(shotK.pixel(x, y), shotN.pixel(x, y), 0)) diff++;
      fail(`frame ${K} → ${K + 1}: no checked agent of frame ${K + 1} is at a pixel that changed (${diff} pixels differ between the two screenshots)`);
    }
    checkReadout(await readout(page), csv, manifest, K + 1);
    if (errors.length) fail(`page errors: ${errors.join('; ')}`);

    const agents = probesK.concat(probesN).filter((p) => p.kind === 'agent').length;
    const cells = probesK.concat(probesN).filter((p) => p.kind === 'field').length;
    console.log(`check_viewer: ok: frames ${K} and ${K + 1} of ${nt} drawn as recorded (${agents} agent and ${cells} field pixels, ` +
      `${changed.length} changed), series readout = series.csv (${figures} figures), ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    if (browser) await browser.close().catch(() => {});
    for (const f of cleanup.reverse()) { try { f(); } catch { /* already gone */ } }
  }
}

const guard = setTimeout(() => { console.error('check_viewer: FAIL: no result after 90 s'); process.exit(1); }, 90000);
guard.unref();
main().then(() => process.exit(0), (e) => {
  console.error(`check_viewer: FAIL: ${e instanceof Failure ? e.message : (e && e.stack) || e}`);
  process.exit(1);
});
