// Launches the machine's Chromium (never a downloaded browser) headless with a fresh profile.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Runs in every page before its scripts: `window.__designer` finds the designer's store the way
 * React's developer tools find a component's state, from the designer's element through React's
 * own fiber links to the provider of the store. The built designer has no test hook of its own,
 * so the scripts drive the very bundle that ships; undefined while no designer is on the page.
 */
function designerProbe() {
  const isDesignerStore = (value) => {
    if (!value || typeof value.getState !== 'function') return false;
    const state = value.getState();
    return !!state && typeof state.undo === 'function' && 'meta' in state && Array.isArray(state.nodes);
  };
  Object.defineProperty(window, '__designer', {
    configurable: true,
    get() {
      const element = document.querySelector('.designer');
      const key = element && Object.keys(element).find((k) => k.startsWith('__reactFiber$'));
      for (let fiber = key ? element[key] : null; fiber; fiber = fiber.return) {
        const value = fiber.memoizedProps?.value;
        if (isDesignerStore(value)) return value;
      }
      return undefined;
    },
  });
}

export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'fb-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  await context.addInitScript(designerProbe);
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function login(page, base, username, password) {
  await page.goto(base + '/');
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByTestId('who').waitFor();
}

/**
 * Named steps of a browser script: each is recorded as passed or failed (with its stack's first
 * lines and a screenshot `failed-step-N.png` in `out`); with `chained`, the steps build on each
 * other, so a step after a failure is recorded as not run. `currentPage` gives the page to
 * photograph. `finish()` prints the one JSON line the pytest wrappers read and exits 1 on a failure.
 */
export function stepRunner(out, currentPage, { chained = false } = {}) {
  mkdirSync(out, { recursive: true });
  const steps = [];
  let failed = false;
  async function shot(name) {
    await currentPage().screenshot({ path: join(out, `${name}.png`) });
  }
  async function step(name, run) {
    if (chained && failed) {
      steps.push({ name, status: 'failed', detail: 'not run: an earlier step failed' });
      return;
    }
    try {
      await run();
      steps.push({ name, status: 'passed', detail: '' });
    } catch (err) {
      failed = true;
      const detail = String(err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : err);
      steps.push({ name, status: 'failed', detail });
      await shot(`failed-step-${steps.length}`).catch(() => undefined);
    }
  }
  function finish() {
    console.log(JSON.stringify({ failed, steps }));
    process.exit(failed ? 1 : 0);
  }
  return { steps, step, shot, finish };
}

/** A REST call with the page's own session, as a user's tools would make it. */
export async function rest(page, method, path, body) {
  return page.evaluate(
    async ([m, p, b]) => {
      const token = JSON.parse(sessionStorage.getItem('flowbroker.session')).token;
      const headers = { Authorization: `Bearer ${token}` };
      if (b !== null) headers['Content-Type'] = 'application/json';
      const r = await fetch(p, { method: m, headers, body: b === null ? undefined : JSON.stringify(b) });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : null };
    },
    [method, path, body ?? null],
  );
}
