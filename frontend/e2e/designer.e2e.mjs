// End-to-end through the browser against a running `flowbroker up`: every step is required.
// Log in, draw MQInput → Compute → MQOutput (by mouse and from the keyboard), see the specs refuse
// a connection, type ESQL with an error and fix it, save with a comment, deploy, stop and start the
// flow and a new execution group, put a message with MQRFH2 folders and get the transformed one,
// send a failing one to the dead-letter queue and back, watch monitoring count it, chart it and
// trace it, and check what a developer and a viewer are offered.
// Prints one JSON line of step results; exits 1 when any step fails.
import { launch, login, rest, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? 'test-output/e2e';

let page = null;
const { step, shot: photograph, finish } = stepRunner(out, () => page, { chained: true });
const shot = (_page, name) => photograph(name);

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
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2 + 40, { steps: 5 });
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 5 });
  await page.mouse.up();
}

async function edgeCount(page) {
  return page.evaluate(() => window.__designer.getState().edges.length);
}


async function page_(page, name) {
  await page.getByRole('link', { name }).click();
  await page.getByRole('heading', { name, exact: true }).waitFor();
}

/** On the topology page: wait until the flow's status reads `status`. */
async function flowStatus(page, flow, status, timeout = 30000) {
  await page.getByTestId(`flow-status-${flow}`).filter({ hasText: new RegExp(`^${status}$`) }).waitFor({ timeout });
}

async function createUser(page, role) {
  const name = `${role}${Date.now()}`;
  const created = await rest(page, 'POST', '/api/users', { username: name, password: `${role}-Pass-1234`, role });
  if (created.status !== 201) throw new Error(`creating the ${role} answered ${created.status}`);
  return [name, `${role}-Pass-1234`];
}

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());
const flowName = `E2E_${Date.now()}`;
const inQueue = 'E2E.IN';
const outQueue = 'E2E.OUT';
const dlq = 'SYSTEM.DEAD.LETTER.QUEUE';
let flowId = null;

try {
  await step('login', async () => {
    await page.goto(base + '/');
    await shot(page, '01-login');
    await login(page, base, username, password);
  });

  await step("define the flow's queues on the Queues page", async () => {
    await page_(page, 'Queues');
    // The input queue backs out nothing by itself: the MQInput node's own threshold decides, so a
    // failing message goes to the dead-letter queue through the flow, which records its origin.
    for (const [name, threshold] of [
      [inQueue, '0'],
      [outQueue, '2'],
    ]) {
      await page.getByLabel('New queue').fill(name);
      await page.getByLabel('Backout threshold').fill(threshold);
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

  await step('connect a terminal from the keyboard', async () => {
    await page.locator('[data-id="compute1"]').click();
    await page.keyboard.press('c');
    const dialog = page.getByRole('dialog', { name: 'Connect terminals' });
    await dialog.getByLabel('From terminal').selectOption('out1');
    await dialog.getByLabel('To node').selectOption('mqoutput1');
    await dialog.getByLabel('To terminal').selectOption('in');
    await shot(page, '02a-keyboard-connect');
    await dialog.getByRole('button', { name: 'Connect' }).click();
    await dialog.waitFor({ state: 'detached' });
    const edges = await page.evaluate(() => window.__designer.getState().edges.map((e) => e.id));
    if (!edges.includes('compute1.out1->mqoutput1.in')) throw new Error(`connections: ${edges.join(', ')}`);
  });

  await step('a connection the spec does not allow is refused', async () => {
    // Both are drags React Flow itself would accept (an output onto an input handle): the
    // designer's spec check refuses them and says why.
    const before = await edgeCount(page);
    await wire(page, 'compute1', 'out', 'compute1', 'in');
    await page.locator('.refusal', { hasText: 'a node cannot be wired to itself' }).waitFor();
    await wire(page, 'mqinput1', 'out', 'compute1', 'in');
    await page.locator('.refusal', { hasText: 'these terminals are already connected' }).waitFor();
    await shot(page, '02b-connection-refused');
    const after = await edgeCount(page);
    if (after !== before) throw new Error(`a refused connection was added: ${before} → ${after}`);
    await page.locator('.refusal').getByRole('button', { name: 'Dismiss' }).click();
  });

  await step('set the flow name and the queue names', async () => {
    await page.getByTestId('canvas').click({ position: { x: 40, y: 560 } });
    await page.getByLabel('Name', { exact: true }).fill(flowName);
    await page.locator('[data-id="mqinput1"]').click();
    await page.locator('#prop-mqinput1-queueName').fill(inQueue);
    await page.locator('#prop-mqinput1-messageDomain').selectOption('XMLNSC');
    await page.locator('#prop-mqinput1-backoutThreshold').fill('1');
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

  await step('save with a version comment', async () => {
    await page.getByLabel('Version comment').fill('first cut of the order flow');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: 'Saved' }).waitFor();
    flowId = await page.evaluate(() => window.__designer.getState().meta.flowId);
    if ((await page.getByLabel('Version comment').inputValue()) !== '') throw new Error('the comment was kept');
    await shot(page, '04-saved');
  });

  await step('save a second version and diff it with the first', async () => {
    await page.locator('[data-id="mqoutput1"]').click();
    await page.locator('#prop-mqoutput1-queueName').fill('E2E.OTHER');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: 'version 2' }).waitFor();
    await page.getByRole('button', { name: 'Versions' }).click();
    const dialog = page.getByRole('dialog', { name: 'Version history' });
    await dialog.getByRole('cell', { name: 'first cut of the order flow' }).waitFor();
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
    const status = dialog.getByTestId('deploy-status');
    await status.filter({ hasText: /: (running|failed|stopped)$/ }).waitFor({ timeout: 60000 });
    await shot(page, '05-deploy');
    const text = await status.innerText();
    await dialog.getByRole('button', { name: 'Close' }).click();
    if (!/running$/.test(text)) {
      const problems = await page.locator('.problems li').allInnerTexts();
      throw new Error(`deployment ended ${text}; problems: ${problems.join(' / ')}`);
    }
  });

  await step('topology: stop and start the flow, run and remove a new execution group', async () => {
    await page_(page, 'Topology');
    await page.getByText('Broker default').waitFor();
    await page.getByTestId('group-state-default').filter({ hasText: /^running$/ }).waitFor({ timeout: 30000 });
    const flow = page.getByTestId(`deployed-${flowName}`);
    await flowStatus(page, flowName, 'running');
    await flow.getByRole('button', { name: 'Stop flow' }).click();
    await flowStatus(page, flowName, 'stopped');
    await flow.getByRole('button', { name: 'Start flow' }).click();
    await flowStatus(page, flowName, 'running');
    await shot(page, '06-topology');

    const group = `g${Date.now() % 100000}`;
    await page.getByLabel('New execution group').fill(group);
    await page.getByRole('button', { name: 'Create' }).click();
    const row = page.getByTestId(`group-${group}`);
    await row.waitFor();
    // a real worker process is started for it
    await page.getByTestId(`group-state-${group}`).filter({ hasText: /^running$/ }).waitFor({ timeout: 60000 });
    await row.getByText(/pid \d+/).waitFor();
    await shot(page, '06b-topology-new-group');
    await row.getByRole('button', { name: 'Stop group' }).click();
    await page.getByTestId(`group-state-${group}`).filter({ hasText: /^stopped$/ }).waitFor({ timeout: 30000 });
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
  });

  await step('put a message with MQRFH2 folders on the Queues page', async () => {
    await page_(page, 'Queues');
    await page.getByLabel('Queue', { exact: true }).fill(inQueue);
    await page.getByLabel('Message body').fill('<Order><Item>Widget</Item></Order>');
    await page.getByLabel('mcd domain (empty: no RFH2)').selectOption('XMLNSC');
    await page.getByLabel('usr folder (name=value per line)').fill('Region=EU');
    await page.getByLabel('psc topics (one per line)').fill('orders/eu');
    await page.getByText('jms folder').click();
    await page.getByLabel('jms Dst: destination').fill(`queue:///${inQueue}`);
    await page.getByLabel('jms Pri: priority 0-9').fill('7');
    await page.getByRole('button', { name: 'Put' }).click();
    await page.getByRole('status').filter({ hasText: 'Put one message' }).waitFor();
    await shot(page, '07-queues');
  });

  await step('get the transformed message with its folders', async () => {
    await page.getByLabel('Queue', { exact: true }).fill(outQueue);
    await page.getByRole('button', { name: 'Get' }).click();
    const message = page.getByTestId('message').filter({ hasText: 'DONE' });
    await message.waitFor({ timeout: 20000 });
    const folders = JSON.parse(await message.getByTestId('rfh2').textContent());
    if (folders.usr?.Region !== 'EU' || folders.psc?.Topic !== 'orders/eu' || folders.jms?.Pri !== '7')
      throw new Error(`folders lost on the way: ${JSON.stringify(folders)}`);
    await shot(page, '08-got-message');
  });

  await step('a failing message reaches the dead-letter queue with its origin', async () => {
    await page.getByLabel('Queue', { exact: true }).fill(inQueue);
    await page.getByLabel('Body', { exact: true }).selectOption('text');
    await page.getByLabel('mcd domain (empty: no RFH2)').selectOption('');
    await page.getByLabel('Message body').fill('<Order><Item>never closed');
    await page.getByRole('button', { name: 'Put' }).click();
    await page.getByRole('status').filter({ hasText: 'Put one message' }).waitFor();
    await page.getByLabel('Queue', { exact: true }).fill(dlq);
    const dead = page.getByTestId('message').filter({ hasText: 'never closed' });
    for (let i = 0; i < 40 && !(await dead.count()); i += 1) {
      await page.getByRole('button', { name: 'Browse' }).click();
      await page.waitForTimeout(500);
    }
    await dead.getByTestId('dead-letter-reason').filter({ hasText: `Failed on ${inQueue}` }).waitFor();
    await dead.getByRole('button', { name: `Move back to ${inQueue}` }).waitFor();
    await shot(page, '08b-dead-letter');
  });

  await step('monitoring: counts, history charts on load, failed messages, user trace', async () => {
    await page_(page, 'Monitoring');
    await page.getByText('configuration-manager').waitFor();
    await page.getByTestId(`flow-messages-${flowName}`).filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    await page.getByTestId('dead-letter-depth').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    await page.getByTestId('charts').waitFor({ timeout: 30000 });
    await shot(page, '09-monitoring');
    // Opened again, the page shows the server's history at once, not only what it sees from now on.
    await page.reload();
    await page.getByRole('heading', { name: 'Monitoring', exact: true }).waitFor();
    const charts = page.getByTestId('charts');
    await charts.waitFor({ timeout: 5000 });
    if (Number(await charts.getAttribute('data-points')) < 1) throw new Error('the charts opened empty');
    await page.getByTestId(`flow-messages-${flowName}`).filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    await page.getByRole('button', { name: flowName }).click();
    await page.getByRole('table', { name: 'Node statistics' }).waitFor();
    const traceForm = page.getByRole('form', { name: 'User trace setting' });
    await traceForm.getByText('Now: none, fast').waitFor({ timeout: 20000 });
    await traceForm.getByLabel('Trace level').selectOption('normal');
    await traceForm.getByLabel('Mode').selectOption('safe');
    await traceForm.getByRole('button', { name: 'Set trace' }).click();
    await traceForm.getByText('Now: normal, safe').waitFor({ timeout: 20000 });
    const put = await rest(page, 'POST', `/api/queues/${inQueue}/messages`, { body: '<Order><Item>Traced</Item></Order>' });
    if (put.status !== 201) throw new Error(`put answered ${put.status}`);
    await page.getByLabel('User trace').filter({ hasText: /\S/ }).filter({ hasNotText: 'No user trace' }).waitFor({ timeout: 30000 });
    await shot(page, '10-monitoring-counted');
  });

  await step('move the dead letter back to the queue it came from', async () => {
    // The flow is stopped first, so the message waits on its queue instead of failing again.
    await page_(page, 'Topology');
    await page.getByTestId(`deployed-${flowName}`).getByRole('button', { name: 'Stop flow' }).click();
    await flowStatus(page, flowName, 'stopped');
    await page_(page, 'Queues');
    await page.getByLabel('Queue', { exact: true }).fill(dlq);
    await page.getByRole('button', { name: 'Browse' }).click();
    const dead = page.getByTestId('message').filter({ hasText: 'never closed' });
    await dead.getByRole('button', { name: `Move back to ${inQueue}` }).click();
    await page.getByRole('status').filter({ hasText: `Moved back to ${inQueue}` }).waitFor();
    await page.getByTestId(`depth-${inQueue}`).filter({ hasText: /^1$/ }).waitFor({ timeout: 10000 });
    await shot(page, '11-moved-back');
    const audit = await rest(page, 'GET', `/api/audit?target=queue:${dlq}&limit=1`);
    if (audit.body[0]?.action !== 'queue.move' || audit.body[0]?.detail?.to !== inQueue)
      throw new Error(`audit: ${JSON.stringify(audit.body)}`);
    await page_(page, 'Topology');
    await page.getByTestId(`deployed-${flowName}`).getByRole('button', { name: 'Start flow' }).click();
    await flowStatus(page, flowName, 'running');
  });

  await step('the designer shows live per-node counts of the deployed flow', async () => {
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

  await step('a developer edits and saves but is not offered Deploy', async () => {
    const [name, pass] = await createUser(page, 'developer');
    await page.getByRole('button', { name: 'Log out' }).click();
    await login(page, base, name, pass);
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.getByTestId('flow-title').filter({ hasText: flowName }).waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).waitFor();
    if (await page.getByRole('button', { name: 'Deploy', exact: true }).count()) throw new Error('a developer sees Deploy');
    if (await page.locator('.palette-item').first().isDisabled()) throw new Error('a developer cannot add nodes');
    await page_(page, 'Topology');
    await page.getByTestId(`deployed-${flowName}`).waitFor();
    for (const name of ['Stop flow', 'Undeploy', 'Stop group'])
      if (await page.getByRole('button', { name }).count()) throw new Error(`a developer sees ${name}`);
    await shot(page, '14-developer');
    await page.getByRole('button', { name: 'Log out' }).click();
    await login(page, base, username, password);
  });

  await step('a viewer sees no edit or deploy actions', async () => {
    const [viewer, pass] = await createUser(page, 'viewer');
    await page.getByRole('button', { name: 'Log out' }).click();
    await login(page, base, viewer, pass);
    await page.getByRole('link', { name: 'Designer' }).click();
    await page.locator('.palette-item').first().waitFor();
    for (const name of ['Save', 'Deploy', 'Undo', 'Import', 'Make subflow', 'Connect…'])
      if (await page.getByRole('button', { name, exact: true }).count()) throw new Error(`a viewer sees ${name}`);
    if (!(await page.locator('.palette-item').first().isDisabled())) throw new Error('a viewer can add nodes');
    await shot(page, '15-viewer-designer');
    await page_(page, 'Topology');
    await page.getByText('Broker default').waitFor();
    if (await page.getByRole('button', { name: 'Delete' }).count()) throw new Error('a viewer sees Delete');
    await page_(page, 'Queues');
    if (await page.getByRole('button', { name: 'Put' }).count()) throw new Error('a viewer sees Put');
  });
} finally {
  await close();
}

finish();
