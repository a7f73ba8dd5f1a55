// The screenshots of docs/viewer.md and the README, made from real runs:
//
//   node viewer/screenshots.mjs KAIROS_BINARY OUT_DIR
//
// Records examples/ecology.json (2 x 2 regions on 2 ranks) and
// examples/factory.json with --frames, serves each with `kairos view`,
// and saves the page at 1280 x 800 CSS pixels: OUT_DIR/viewer-ecology.png
// (frame 30, region and rank overlays on) and OUT_DIR/viewer-factory.png.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const { chromium } = createRequire(path.join(here, 'package.json'))('playwright-core');
const [kairos, out] = process.argv.slice(2).map((p) => p && path.resolve(p));
if (!kairos || !out) {
  console.error('usage: node viewer/screenshots.mjs KAIROS_BINARY OUT_DIR');
  process.exit(2);
}
const env = { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
              OMPI_MCA_rmaps_base_oversubscribe: '1', KAIROS_VIEWER_DIR: here };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kairos-shots-'));
fs.mkdirSync(out, { recursive: true });

function record(name, cmd) {
  const r = spawnSync(cmd[0], [...cmd.slice(1), '--frames', path.join(work, name), '--quiet'], { env, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${name}: the run failed`);
}

async function shot(name, query, file) {
  const server = spawn(kairos, ['view', path.join(work, name), '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => {
    server.stdout.on('data', (d) => {
      const m = /at (http:\S+)/.exec(String(d));
      if (m) resolve(m[1]);
    });
  });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
                                          args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  await page.goto(url + query);
  await page.waitForFunction(() => window.kairosViewer && window.kairosViewer.isReady);
  await page.waitForFunction(() => window.kairosViewer.drawnFrame === window.kairosViewer.frameIndex);
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(out, file) });
  await browser.close();
  server.kill('SIGINT');
  console.log(`screenshots: ${path.join(out, file)}`);
}

try {
  record('ecology', ['mpirun', '-np', '2', kairos, 'run', path.join(root, 'examples', 'ecology.json')]);
  record('factory', [kairos, 'run', path.join(root, 'examples', 'factory.json')]);
  await shot('ecology', '?frame=30&regions=1&ranks=1', 'viewer-ecology.png');
  await shot('factory', '?frame=40', 'viewer-factory.png');
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
