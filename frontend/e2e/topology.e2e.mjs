// End-to-end through the browser against a running `flowbroker up`: the topology drawn as a graph,
// a group's HTTP port, the ESQL editor's module skeleton and wide panel, export with the subflows a flow uses, and an
// import whose name is taken (rename or overwrite, never the other flow's live counts).
// Prints one JSON line of step results; exits 1 when any step fails.
import { readFileSync } from 'node:fs';
import { launch, login, rest as restCall, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? 'test-output/e2e-topology';

let page = null;
const { step, shot, finish } = stepRunner(out, () => page, { chained: true });

const rest = (method, path, body) => restCall(page, method, path, body);

async function expectStatus(what, response, status) {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Bounded polling of a condition evaluated in this script. */
async function until(what, predicate, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await predicate();
    if (last) return last;
    await page.waitForTimeout(300);
  }
  throw new Error(`${what} not met within ${timeout / 1000} s (last: ${JSON.stringify(last)})`);
}

const stamp = Date.now();
const flowName = `Topo${stamp}Flow`;
const subName = `Topo${stamp}Sub`;
const inQueue = `TOPO.${stamp % 100000}.IN`;
const outQueue = `TOPO.${stamp % 100000}.OUT`;
let flowId = null;
let deploymentId = null;
let bundle = null;

const subflow = {
  name: subName,
  nodes: [
    { id: 'entry', type: 'Input', name: 'in', properties: { terminalName: 'in' }, position: { x: 0, y: 0 } },
    { id: 'put', type: 'MQOutput', name: 'PUT', properties: { queueName: outQueue }, position: { x: 250, y: 0 } },
  ],
  connections: [{ from: { node: 'entry', terminal: 'out' }, to: { node: 'put', terminal: 'in' } }],
};
const flow = {
  name: flowName,
  nodes: [
    { id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: inQueue }, position: { x: 0, y: 0 } },
    { id: 'sub1', type: 'Subflow', name: 'SUB', properties: { flow: { name: subName } }, position: { x: 250, y: 0 } },
  ],
  connections: [{ from: { node: 'in1', terminal: 'out' }, to: { node: 'sub1', terminal: 'in' } }],
};

/** Node ids of the canvas showing a live message count. */
const countedNodes = () => page.locator('[data-testid^="count-"]').evaluateAll((els) => els.map((e) => e.dataset.testid));

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());

try {
  await step('login', async () => {
    await login(page, base, username, password);
  });

  await step('a flow using a subflow, deployed, with a message through it', async () => {
    for (const name of [inQueue, outQueue]) await expectStatus(`defining ${name}`, await rest('POST', '/api/queues', { name }), 201);
    await expectStatus('saving the subflow', await rest('POST', '/api/flows', subflow), 201);
    flowId = (await expectStatus('saving the flow', await rest('POST', '/api/flows', flow), 201)).id;
    deploymentId = (await expectStatus('deploying', await rest('POST', '/api/deployments', { flowId }), 202)).id;
    await until('the deployment running', async () => (await rest('GET', `/api/deployments/${deploymentId}`)).body.status === 'running', 60000);
    await expectStatus('putting', await rest('POST', `/api/queues/${inQueue}/messages`, { body: '<Order/>' }), 201);
  });

  await step('the topology page draws brokers, groups, deployed flows and the queues they read and write', async () => {
    await page.goto(`${base}/#/topology`);
    const graph = page.getByTestId('topology-graph');
    for (const id of ['topo-broker-default', 'topo-group-default', `topo-flow-${flowName}`, `topo-queue-${inQueue}`, `topo-queue-${outQueue}`])
      await graph.getByTestId(id).waitFor({ timeout: 15000 });
    // the queue the subflow writes counts as written by the flow that uses it
    for (const edge of [`queue:${inQueue}->flow:${deploymentId}`, `flow:${deploymentId}->queue:${outQueue}`, 'broker:1->group:1'])
      await graph.locator(`.react-flow__edge[data-id="${edge}"]`).waitFor({ state: 'attached', timeout: 5000 });
    await graph.locator('.react-flow__edge-text', { hasText: 'reads' }).first().waitFor();
    await graph.locator('.react-flow__edge-text', { hasText: 'writes' }).first().waitFor();
    // the table stays, below the drawing
    await page.getByTestId(`deployed-${flowName}`).waitFor();
    const drawn = await graph.boundingBox();
    const table = await page.locator('table.grid').first().boundingBox();
    if (!(drawn && table && table.y > drawn.y)) throw new Error(`graph at ${JSON.stringify(drawn)}, table at ${JSON.stringify(table)}`);
    await shot('topology-graph');
  });

  await step("a group's HTTP port set, refused when invalid, and cleared on the topology page", async () => {
    const port = 18000 + (stamp % 1000);
    const httpPort = async () =>
      (await rest('GET', '/api/brokers')).body.flatMap((b) => b.groups).find((g) => g.name === 'default')?.httpPort;
    const field = page.getByTestId('group-http-port-default');
    await field.fill(String(port));
    await field.press('Enter');
    await until('the port saved', async () => (await httpPort()) === port);
    await until('the field showing it', async () => (await field.inputValue()) === String(port));
    await field.fill('70000');
    await field.press('Enter');
    await page.locator('.error', { hasText: 'httpPort' }).first().waitFor({ timeout: 10000 });
    if ((await httpPort()) !== port) throw new Error('an invalid port changed the group');
    await until('the field back to the saved port', async () => (await field.inputValue()) === String(port));
    // empty: back to the worker's FLOWBROKER_HTTP_PORT
    await field.fill('');
    await field.press('Enter');
    await until('the port cleared', async () => (await httpPort()) === null);
  });

  await step('the ESQL editor inserts the module skeleton and opens in a wide panel', async () => {
    await page.goto(`${base}/#/designer`);
    await page.locator('.palette-item[data-type="Compute"]').click();
    const node = await until('a Compute node', () =>
      page.evaluate(() => window.__designer.getState().nodes.find((n) => n.data.type === 'Compute')),
    );
    await page.locator(`[data-id="${node.id}"]`).click();
    await page.getByTestId('esql-editor').locator('.cm-content').waitFor();
    await page.getByRole('button', { name: 'Insert module skeleton' }).click();
    const esql = () => page.evaluate((id) => window.__designer.getState().nodes.find((n) => n.id === id).data.properties.esql ?? '', node.id);
    const module = `NewFlow_${node.data.name.replace(/[^A-Za-z0-9_]/g, '_')}`;
    const text = (await esql()).replace(/\s+/g, ' ').trim();
    const expected = `CREATE COMPUTE MODULE ${module} CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN CALL CopyEntireMessage(); RETURN TRUE; END; CREATE PROCEDURE CopyEntireMessage() BEGIN SET OutputRoot = InputRoot; END; END MODULE;`;
    if (text !== expected) throw new Error(`the skeleton is ${JSON.stringify(text)}`);
    if (await page.getByRole('button', { name: 'Insert module skeleton' }).count()) throw new Error('the skeleton is still offered');
    // the backend's checker finds nothing wrong with it
    await page.waitForTimeout(1200);
    const problems = await page.locator('.problems li').allInnerTexts();
    if (problems.some((p) => /ESQL|esql|\d+:\d+/.test(p))) throw new Error(`the skeleton has problems: ${problems.join(' / ')}`);

    const narrow = await page.getByTestId('esql-editor').boundingBox();
    await page.getByRole('button', { name: 'Expand' }).click();
    const dialog = page.getByRole('dialog', { name: /^ESQL of / });
    const wide = dialog.getByTestId('esql-editor-wide');
    await wide.locator('.cm-content').waitFor();
    const box = await wide.boundingBox();
    if (!(box && narrow && box.width > 2.5 * narrow.width && box.height > 400))
      throw new Error(`the wide editor is ${JSON.stringify(box)}, the panel's ${JSON.stringify(narrow)}`);
    await wide.locator('.cm-line').last().click();
    await page.keyboard.press('End');
    await page.keyboard.type('-- edited wide');
    await until('the wide edit in the flow', async () => (await esql()).includes('-- edited wide'), 5000);
    await until('the wide edit in the panel editor', async () =>
      (await page.getByTestId('esql-editor').locator('.cm-content').innerText()).includes('-- edited wide'), 5000,
    );
    await shot('esql-wide');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });
  });

  await step('export carries the subflows the flow uses', async () => {
    await page.goto(`${base}/#/designer/${flowId}`);
    // the saved flow shows its own live counts
    await page.getByTestId('count-in1').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }), page.getByRole('button', { name: 'Export' }).click()]);
    bundle = JSON.parse(readFileSync(await download.path(), 'utf8'));
    const carried = (bundle.subflows ?? []).map((s) => s.name);
    if (JSON.stringify(carried) !== JSON.stringify([subName])) throw new Error(`the export carries subflows ${JSON.stringify(carried)}`);
    if (bundle.flow?.name !== flowName) throw new Error(`the export's flow is ${bundle.flow?.name}`);
    if (!JSON.stringify(bundle.subflows[0].document).includes(outQueue)) throw new Error('the subflow document is not the saved one');
  });

  const importBundle = async () => {
    await page.getByTestId('import-file').setInputFiles({
      name: `${flowName}.json`,
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(bundle)),
    });
    const dialog = page.getByRole('dialog', { name: 'Import conflicts' });
    await dialog.waitFor({ timeout: 10000 });
    return dialog;
  };

  await step('import of a taken name brings the subflows back and offers a free name', async () => {
    await expectStatus('deleting the subflow', await rest('DELETE', `/api/flows/${(await rest('GET', `/api/flows/names?name=${subName}`)).body.flowId}`), 204);
    const dialog = await importBundle();
    await dialog.getByTestId('import-conflicts').getByText(flowName, { exact: true }).waitFor();
    const suggested = await dialog.getByLabel('Import the flow as').inputValue();
    if (suggested !== `${flowName}_2`) throw new Error(`suggested ${suggested}`);
    await shot('import-conflict');
    await dialog.getByRole('button', { name: 'Rename' }).click();
    await page.getByTestId('flow-title').filter({ hasText: `${flowName}_2` }).waitFor();
    const back = (await rest('GET', `/api/flows/names?name=${subName}`)).body;
    if (!back.taken) throw new Error('the subflow was not brought back');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: `Saved ${flowName}_2 version 1` }).waitFor();
  });

  await step('import can overwrite: a new version of the flow, never showing its live counts', async () => {
    // a fresh page: the address may still name the flow the import replaced on the canvas
    await page.goto(`${base}/#/topology`);
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.reload();
    await page.getByTestId('count-in1').filter({ hasText: /^[1-9]/ }).waitFor({ timeout: 20000 });
    const dialog = await importBundle();
    await dialog.getByRole('button', { name: 'Overwrite' }).click();
    await page.getByTestId('flow-title').filter({ hasText: `${flowName} · v1` }).waitFor();
    // longer than the statistics refresh: the running flow's counts must not land on this document
    await page.waitForTimeout(4000);
    const counted = await countedNodes();
    if (counted.length) throw new Error(`the imported document shows live counts on ${counted.join(', ')}`);
    await shot('import-overwrite');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: `Saved ${flowName} version 2` }).waitFor();
    const saved = (await rest('GET', `/api/flows/${flowId}`)).body;
    if (saved.currentVersion !== 2) throw new Error(`the flow is at version ${saved.currentVersion}`);
  });
} finally {
  await close();
}

finish();
