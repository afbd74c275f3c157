// Times the designer in headless Chromium: open a saved flow (navigation → every node in the
// store and the first ones drawn), then drag a node (mouse down → the moved node painted).
// Prints one JSON line: {openMs: [...], dragMs: [...]}.
import { launch, login } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const flowId = Number(process.env.FLOW_ID);
const nodes = Number(process.env.FLOW_NODES ?? 300);
const repeats = Number(process.env.REPEATS ?? 5);

const { context, close } = await launch();
const page = context.pages()[0] ?? (await context.newPage());
const openMs = [];
const dragMs = [];
try {
  await login(page, base, process.env.FLOWBROKER_USER ?? 'admin', process.env.FLOWBROKER_PASSWORD ?? '');
  for (let i = 0; i < repeats; i += 1) {
    await page.goto(`${base}/#/topology`);
    await page.getByRole('heading', { name: 'Topology' }).waitFor();
    const start = Date.now();
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.waitForFunction(
      (n) => window.__designer?.getState().nodes.length === n && document.querySelectorAll('.react-flow__node').length > 0,
      nodes,
      { polling: 'raf', timeout: 60000 },
    );
    // One more frame so the measured time includes painting what was laid out.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
    openMs.push(Date.now() - start);

    const node = page.locator('.react-flow__node').first();
    const id = await node.getAttribute('data-id');
    const box = await node.boundingBox();
    const before = await page.evaluate((nid) => window.__designer.getState().nodes.find((n) => n.id === nid).position, id);
    const dragStart = Date.now();
    await page.mouse.move(box.x + 20, box.y + 10);
    await page.mouse.down();
    await page.mouse.move(box.x + 60, box.y + 50, { steps: 4 });
    await page.mouse.move(box.x + 100, box.y + 90, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(
      ([nid, x]) => window.__designer.getState().nodes.find((n) => n.id === nid).position.x !== x,
      [id, before.x],
      { polling: 'raf', timeout: 30000 },
    );
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
    dragMs.push(Date.now() - dragStart);
  }
} finally {
  await close();
}
console.log(JSON.stringify({ openMs, dragMs }));
