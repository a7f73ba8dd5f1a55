// How fast the page draws a recording, in headless Chromium (viewer/README.md).
//
//   node viewer/measure_fps.mjs KAIROS_BINARY RECORDING_DIR [--world W]
//   node viewer/measure_fps.mjs http://127.0.0.1:PORT/ [--world W]
//
// Starts `kairos view RECORDING_DIR --port 0` (or uses the server at the
// URL), opens the page at 1280 x 800 CSS pixels, device pixel ratio 1, and
// prints:
//   * draw: the mean time of one drawing of the frame on screen (rasterising
//     agents and field, putImageData, overlays), fitted and zoomed in 8x;
//   * play: frames per second while playing at "max" speed from the first
//     frame to the last, twice: first pass (each frame fetched from the
//     server and decoded) and second pass (frames the page still holds);
//     the figure the page itself shows (kairosViewer.fps) is printed too.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { chromium } = createRequire(path.join(here, 'package.json'))('playwright-core');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const args = process.argv.slice(2);
let world = 0;
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--world') world = Number(args[++i]);
  else pos.push(args[i]);
}
if (pos.length < 1) {
  console.error('usage: node viewer/measure_fps.mjs KAIROS_BINARY RECORDING_DIR [--world W] | URL [--world W]');
  process.exit(2);
}

let url = pos[0], server = null;
if (!/^https?:/.test(url)) {
  const env = { ...process.env, KAIROS_VIEWER_DIR: process.env.KAIROS_VIEWER_DIR || here };
  server = spawn(path.resolve(pos[0]), ['view', path.resolve(pos[1]), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env });
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/ at (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    server.on('close', (c) => reject(new Error(`kairos view exited (${c})`)));
  });
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const t0 = Date.now();
  await page.goto(`${url}?world=${world}`);
  await page.evaluate(() => window.kairosViewer.ready);
  await page.waitForFunction(() => window.kairosViewer.drawnFrame === 0);
  const info = await page.evaluate(() => {
    const v = window.kairosViewer;
    return { frames: v.manifest.times.length, ready: 0, firstDrawMs: v.lastDrawMs };
  });
  info.ready = Date.now() - t0;
  const agents = await page.evaluate(() => document.getElementById('fps').textContent);
  const drawFit = await page.evaluate(() => window.kairosViewer.benchmarkDraw(20));
  const box = await page.locator('#world').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  for (let k = 0; k < 8; k++) await page.mouse.wheel(0, -200); // 8 x e^0.3: about 11x
  await page.waitForTimeout(200);
  const drawZoom = await page.evaluate(() => window.kairosViewer.benchmarkDraw(20));
  await page.evaluate(() => window.kairosViewer.fit());

  const pass = async () => {
    await page.evaluate(() => window.kairosViewer.setFrame(0));
    await page.selectOption('#speed-select', 'max');
    return page.evaluate(() => new Promise((resolve) => {
      const v = window.kairosViewer;
      const d0 = v.drawnFrames, t = performance.now();
      let shown = 0;
      v.play();
      const poll = setInterval(() => {
        if (v.playing) { shown = v.fps; return; }
        clearInterval(poll);
        const dt = performance.now() - t;
        resolve({ drawn: v.drawnFrames - d0, seconds: dt / 1000, fps: (v.drawnFrames - d0) / (dt / 1000), shown });
      }, 20);
    }));
  };
  const first = await pass();
  const second = await pass();
  console.log(`${url} world ${world}: ${agents.split('·')[0].trim()}, ${info.frames} frames, page ready in ${info.ready} ms`);
  console.log(`draw: ${drawFit.toFixed(1)} ms fitted (${(1000 / drawFit).toFixed(0)} draws/s), ${drawZoom.toFixed(1)} ms zoomed in`);
  console.log(`play, first pass (fetch + decode + draw): ${first.fps.toFixed(1)} fps (${first.drawn} frames in ${first.seconds.toFixed(2)} s; page shows ${first.shown.toFixed(1)})`);
  console.log(`play, second pass (frames held by the page): ${second.fps.toFixed(1)} fps (${second.drawn} frames in ${second.seconds.toFixed(2)} s; page shows ${second.shown.toFixed(1)})`);
} finally {
  await browser.close();
  if (server) server.kill('SIGTERM');
}
