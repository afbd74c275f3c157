// End-to-end through the browser against a running `flowbroker up`:
// log in, draw MQInput → Compute → MQOutput, set the queues, type ESQL with an error and fix it,
// save, deploy, put a message, get the transformed one, and see monitoring count it.
// Prints one JSON line of step results; exits 1 when a step that the backend supports fails.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, login } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? 'test-output/e2e';
mkdirSync(out, { recursive: true });

const steps = [];
let failed = false;
const record = (name, status, detail = '') => steps.push({ name, status, detail });

async function step(name, run) {
  try {
    const result = await run();
    if (result && result.waiting) record(name, 'waiting', result.waiting);
    else record(name, 'passed');
    return true;
  } catch (err) {
    failed = true;
    record(name, 'failed', String(err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : err));
    return false;
  }
}

async function shot(page, name) {
  await page.screenshot({ path: join(out, `${name}.png`) });
}

/** Drag a palette entry onto the canvas at (x, y) relative to the canvas. */
async function dropNode(page, type, x, y) {
  await page.locator(`.palette-item[data-type="${type}"]`).dragTo(page.getByTestId('canvas'), {
    targetPosition: { x, y },
  });
}

async function wire(page, fromNode, fromTerminal, toNode, toTerminal) {
  const source = page.locator(`[data-id="${fromNode}"] .react-flow__handle[data-handleid="${fromTerminal}"]`);
  const target = page.locator(`[data-id="${toNode}"] .react-flow__handle[data-handleid="${toTerminal}"]`);
  const a = await source.boundingBox();
  const b = await target.boundingBox();
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 5 });
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 5 });
  await page.mouse.up();
}

async function edgeCount(page) {
  return page.evaluate(() => window.__designer.getState().edges.length);
}

const { context, close } = await launch();
const page = context.pages()[0] ?? (await context.newPage());
const flowName = `E2E_${Date.now()}`;
const inQueue = 'E2E.IN';
const outQueue = 'E2E.OUT';
let deployed = false;
let queuesServed = false;
let flowId = null;

try {
  await step('login', async () => {
    await page.goto(base + '/');
    await shot(page, '01-login');
    await login(page, base, username, password);
  });

  await step('define the flow\'s queues on the Queues page', async () => {
    await page.getByRole('link', { name: 'Queues' }).click();
    await page.getByRole('heading', { name: 'Queues' }).waitFor();
    await page.waitForTimeout(500);
    if (await page.getByText('The queue service is not available on this server yet.').isVisible())
      return { waiting: 'queue REST routes are not served' };
    queuesServed = true;
    for (const name of [inQueue, outQueue]) {
      await page.getByLabel('New queue').fill(name);
      await page.getByRole('button', { name: 'Define' }).click();
      await page.getByTestId(`depth-${name}`).waitFor();
    }
    await page.getByRole('link', { name: 'Designer' }).click();
  });

  await step('drag MQInput, Compute and MQOutput onto the canvas', async () => {
    await page.locator('.palette-item[data-type="MQInput"]').waitFor();
    await dropNode(page, 'MQInput', 120, 160);
    await dropNode(page, 'Compute', 380, 160);
    await dropNode(page, 'MQOutput', 640, 160);
    for (const id of ['mqinput1', 'compute1', 'mqoutput1']) await page.locator(`[data-id="${id}"]`).waitFor();
  });

  await step('connect the terminals', async () => {
    await wire(page, 'mqinput1', 'out', 'compute1', 'in');
    await wire(page, 'compute1', 'out', 'mqoutput1', 'in');
    const n = await edgeCount(page);
    if (n !== 2) throw new Error(`expected 2 connections, found ${n}`);
  });

  await step('a connection the spec does not allow is refused', async () => {
    // An output terminal cannot feed an input node (MQInput has no input terminal).
    const before = await edgeCount(page);
    await wire(page, 'mqoutput1', 'out', 'mqinput1', 'out');
    const after = await edgeCount(page);
    if (after !== before) throw new Error('a connection into an output terminal was accepted');
  });

  await step('set the flow name and the queue names', async () => {
    await page.getByTestId('canvas').click({ position: { x: 40, y: 560 } });
    await page.getByLabel('Name', { exact: true }).fill(flowName);
    await page.locator('[data-id="mqinput1"]').click();
    await page.locator('#prop-mqinput1-queueName').fill(inQueue);
    await page.locator('#prop-mqinput1-messageDomain').selectOption('XMLNSC');
    await page.locator('[data-id="mqoutput1"]').click();
    await page.locator('#prop-mqoutput1-queueName').fill(outQueue);
    await shot(page, '02-designer-wired');
  });

  await step('type ESQL with an error, see the diagnostic, fix it', async () => {
    await page.locator('[data-id="compute1"]').click();
    const editor = page.locator('.esql-editor .cm-content');
    await editor.waitFor();
    await editor.click();
    await page.keyboard.press('Control+a');
    await page.keyboard.type('SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Status = ;\n');
    await page.locator('.cm-lintRange-error').first().waitFor({ timeout: 10000 });
    const problems = page.locator('.problems li', { hasText: 'line 2' });
    await problems.first().waitFor({ timeout: 10000 });
    await shot(page, '03-esql-diagnostic');
    // Completion offers the backend's correlation names and built-in functions.
    await page.keyboard.press('Control+End');
    await page.keyboard.type('-- Inpu');
    await page.keyboard.press('Control+Space');
    await page.locator('.cm-tooltip-autocomplete', { hasText: 'InputRoot' }).waitFor({ timeout: 10000 });
    await page.keyboard.press('Escape');
    await editor.click();
    await page.keyboard.press('Control+a');
    await page.keyboard.type("SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Status = 'DONE';\n");
    await page.locator('.cm-lintRange-error').first().waitFor({ state: 'detached', timeout: 10000 });
    await page.locator('.problems li', { hasText: 'line 2' }).first().waitFor({ state: 'detached', timeout: 10000 });
  });

  await step('save', async () => {
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: 'Saved' }).waitFor();
    flowId = await page.evaluate(() => window.__designer.getState().meta.flowId);
    await shot(page, '04-saved');
  });

  await step('save a second version and diff it with the first', async () => {
    await page.locator('[data-id="mqoutput1"]').click();
    await page.locator('#prop-mqoutput1-queueName').fill('E2E.OTHER');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: 'version 2' }).waitFor();
    await page.getByRole('button', { name: 'Versions' }).click();
    const dialog = page.getByRole('dialog', { name: 'Version history' });
    await dialog.locator('tr.changed', { hasText: 'queueName' }).filter({ hasText: 'E2E.OTHER' }).waitFor();
    await shot(page, '04b-version-diff');
    await dialog.getByRole('button', { name: 'Close' }).click();
    // Put the queue back so the deployed flow writes where the rest of the script reads.
    await page.locator('[data-id="mqoutput1"]').click();
    await page.locator('#prop-mqoutput1-queueName').fill(outQueue);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: 'version 3' }).waitFor();
  });

  await step('deploy', async () => {
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Deploy' });
    await dialog.getByRole('button', { name: 'Deploy', exact: true }).click();
    const outcome = await Promise.race([
      dialog.getByTestId('deploy-status').filter({ hasText: /: (running|failed|stopped)$/ }).waitFor({ timeout: 60000 }).then(() => 'status'),
      dialog.getByRole('alert').waitFor({ timeout: 30000 }).then(() => 'alert'),
    ]);
    await shot(page, '05-deploy');
    const text =
      outcome === 'alert' ? await dialog.getByRole('alert').innerText() : await dialog.getByTestId('deploy-status').innerText();
    await dialog.getByRole('button', { name: 'Close' }).click();
    if (outcome === 'status' && /running$/.test(text)) {
      deployed = true;
      return;
    }
    if (outcome === 'status') {
      const problems = await page.locator('.problems li').allInnerTexts();
      throw new Error(`deployment ended ${text}; problems: ${problems.join(' / ')}`);
    }
    if (/not served by this backend yet/.test(text)) return { waiting: `deployment service: ${text}` };
    throw new Error(`deploy refused: ${text}`);
  });

  await step('topology page', async () => {
    await page.getByRole('link', { name: 'Topology' }).click();
    await page.getByRole('heading', { name: 'Topology' }).waitFor();
    await page.getByText('Broker default').waitFor();
    await page.getByTestId(`deployed-${flowName}`).waitFor({ timeout: deployed ? 15000 : 1 }).catch((err) => {
      if (deployed) throw err;
    });
    await shot(page, '06-topology');
    const group = `g${Date.now() % 100000}`;
    await page.getByLabel('New execution group').fill(group);
    await page.getByRole('button', { name: 'Create' }).click();
    const row = page.getByRole('row', { name: new RegExp(`^${group}`) });
    await row.waitFor();
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
  });

  await step('put a message on the Queues page', async () => {
    await page.getByRole('link', { name: 'Queues' }).click();
    await page.getByRole('heading', { name: 'Queues' }).waitFor();
    if (!queuesServed) {
      await shot(page, '07-queues');
      return { waiting: 'queue REST routes (GET/POST /api/queues…) are not served yet' };
    }
    await page.getByLabel('Queue', { exact: true }).fill(inQueue);
    await page.getByLabel('Message body').fill('<Order><Item>Widget</Item></Order>');
    await page.getByRole('button', { name: 'Put' }).click();
    await page.getByRole('status').filter({ hasText: 'Put one message' }).waitFor();
    await shot(page, '07-queues');
  });

  await step('get the transformed message', async () => {
    if (!queuesServed || !deployed) return { waiting: 'needs the queue routes and a deployed flow' };
    await page.getByLabel('Queue', { exact: true }).fill(outQueue);
    await page.getByRole('button', { name: 'Get' }).click();
    await page.getByTestId('message').filter({ hasText: 'DONE' }).waitFor({ timeout: 20000 });
    await shot(page, '08-got-message');
  });

  await step('monitoring page', async () => {
    await page.getByRole('link', { name: 'Monitoring' }).click();
    await page.getByRole('heading', { name: 'Monitoring' }).waitFor();
    await page.getByText('configuration-manager').waitFor();
    await shot(page, '09-monitoring');
    if (!deployed || !queuesServed) return { waiting: 'counting a message needs a deployed flow and a message put through the queue routes' };
    await page.getByTestId(`flow-messages-${flowName}`).filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    await page.getByRole('button', { name: flowName }).click();
    await page.getByRole('table', { name: 'Node statistics' }).waitFor();
    await shot(page, '10-monitoring-counted');
  });

  await step('the designer shows live per-node counts of the deployed flow', async () => {
    if (!deployed || !queuesServed) return { waiting: 'needs a deployed flow that processed a message' };
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.getByTestId('count-compute1').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    await shot(page, '12-designer-live-counts');
  });

  await step('import, keyboard copy/paste/undo, auto-layout and make a subflow', async () => {
    await page.goto(`${base}/#/designer`);
    await page.locator('.palette-item').first().waitFor();
    const state = () => page.evaluate(() => {
      const s = window.__designer.getState();
      return { nodes: s.nodes.length, edges: s.edges.length, name: s.meta.name };
    });
    await page.getByTestId('import-file').setInputFiles({
      name: 'broken.json',
      mimeType: 'application/json',
      buffer: Buffer.from('{"name": "X", "nodes": [ {'),
    });
    await page.locator('.problems li', { hasText: 'import refused: broken.json: not JSON' }).waitFor();
    const doc = {
      name: `Imported_${Date.now()}`,
      nodes: [
        { id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: 'IMP.IN' }, position: { x: 0, y: 0 } },
        { id: 'c1', type: 'Compute', name: 'C1', properties: { esql: 'SET OutputRoot = InputRoot;' }, position: { x: 250, y: 0 } },
        { id: 'c2', type: 'Compute', name: 'C2', properties: { esql: 'SET OutputRoot = InputRoot;' }, position: { x: 500, y: 0 } },
        { id: 'out1', type: 'MQOutput', name: 'OUT', properties: { queueName: 'IMP.OUT' }, position: { x: 750, y: 0 } },
      ],
      connections: [
        { from: { node: 'in1', terminal: 'out' }, to: { node: 'c1', terminal: 'in' } },
        { from: { node: 'c1', terminal: 'out' }, to: { node: 'c2', terminal: 'in' } },
        { from: { node: 'c2', terminal: 'out' }, to: { node: 'out1', terminal: 'in' } },
      ],
    };
    await page.getByTestId('import-file').setInputFiles({
      name: 'flow.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(doc)),
    });
    await page.locator('[data-id="c2"]').waitFor();
    let s = await state();
    if (s.nodes !== 4 || s.edges !== 3 || s.name !== doc.name) throw new Error(`import gave ${JSON.stringify(s)}`);

    await page.getByTestId('canvas').click({ position: { x: 30, y: 500 } });
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Control+c');
    await page.keyboard.press('Control+v');
    s = await state();
    if (s.nodes !== 8 || s.edges !== 6) throw new Error(`paste gave ${JSON.stringify(s)}`);
    await page.keyboard.press('Control+z');
    s = await state();
    if (s.nodes !== 4 || s.edges !== 3) throw new Error(`undo gave ${JSON.stringify(s)}`);
    await page.keyboard.press('Control+y');
    s = await state();
    if (s.nodes !== 8) throw new Error(`redo gave ${JSON.stringify(s)}`);
    // The pasted copies are the selection: Delete removes them and their connections.
    await page.keyboard.press('Delete');
    s = await state();
    if (s.nodes !== 4 || s.edges !== 3) throw new Error(`delete left ${JSON.stringify(s)}`);
    await page.keyboard.press('Control+z');
    await page.keyboard.press('Control+z');
    s = await state();
    if (s.nodes !== 4 || s.edges !== 3) throw new Error(`undoing delete and paste gave ${JSON.stringify(s)}`);

    await page.getByRole('button', { name: 'Layout' }).click();
    await page.waitForFunction(() => {
      const n = window.__designer.getState().nodes;
      return n.length === 4 && new Set(n.map((x) => Math.round(x.position.y))).size >= 1 && n.every((x) => x.position.x >= 0);
    });

    await page.getByTestId('canvas').click({ position: { x: 30, y: 500 } });
    await page.locator('[data-id="c1"]').click();
    await page.locator('[data-id="c2"]').click({ modifiers: ['Shift'] });
    page.once('dialog', (d) => void d.accept(`${doc.name}_Sub`));
    await page.getByRole('button', { name: 'Make subflow' }).click();
    await page.locator('[data-id="subflow1"]').waitFor();
    s = await state();
    if (s.nodes !== 3 || s.edges !== 2) throw new Error(`make subflow gave ${JSON.stringify(s)}`);
    await shot(page, '13-subflow-made');
  });

  await step('a viewer sees no edit or deploy actions', async () => {
    const viewer = `viewer${Date.now()}`;
    const created = await page.evaluate(async ([name, pass]) => {
      const token = JSON.parse(sessionStorage.getItem('flowbroker.session')).token;
      const r = await fetch('/api/users', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: name, password: pass, role: 'viewer' }),
      });
      return r.status;
    }, [viewer, 'Viewer-pass-12']);
    if (created !== 201) throw new Error(`creating the viewer answered ${created}`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await login(page, base, viewer, 'Viewer-pass-12');
    await page.getByRole('link', { name: 'Designer' }).click();
    await page.locator('.palette-item').first().waitFor();
    for (const name of ['Save', 'Deploy', 'Undo', 'Import', 'Make subflow'])
      if (await page.getByRole('button', { name, exact: true }).count()) throw new Error(`a viewer sees ${name}`);
    if (!(await page.locator('.palette-item').first().isDisabled())) throw new Error('a viewer can add nodes');
    await shot(page, '11-viewer-designer');
    await page.getByRole('link', { name: 'Topology' }).click();
    await page.getByText('Broker default').waitFor();
    if (await page.getByRole('button', { name: 'Delete' }).count()) throw new Error('a viewer sees Delete');
  });
} finally {
  await close();
}

console.log(JSON.stringify({ failed, steps }));
process.exit(failed ? 1 : 0);
