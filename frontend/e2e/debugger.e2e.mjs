// End-to-end through the browser against a running `flowbroker up`: the step debugger. A production
// group refuses to pause; the group is marked as a development group on the topology page; a
// breakpoint on a connection holds a message, one of its fields is edited in the tree and the
// message resumed, and the edited value arrives on the output queue; an ESQL breakpoint shows the
// variables in scope.
// Prints one JSON line of step results; exits 1 when any step fails.
import { launch, login, rest as restCall, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? 'test-output/e2e-debugger';

let page = null;
const { step, shot, finish } = stepRunner(out, () => page, { chained: true });

const rest = (method, path, body) => restCall(page, method, path, body);

async function expectStatus(what, response, status) {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

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
const flowName = `Dbg${stamp}Flow`;
const inQueue = `DBG.${stamp % 100000}.IN`;
const outQueue = `DBG.${stamp % 100000}.OUT`;
const esql = [
  'CREATE COMPUTE MODULE Shout',
  '  CREATE FUNCTION Main() RETURNS BOOLEAN',
  '  BEGIN',
  '    DECLARE who CHARACTER InputRoot.XMLNSC.r.name;',
  '    SET OutputRoot = InputRoot;',
  '    SET OutputRoot.XMLNSC.r.name = UPPER(who);',
  '    RETURN TRUE;',
  '  END;',
  'END MODULE;',
].join('\n');
const flow = {
  name: flowName,
  nodes: [
    { id: 'in1', type: 'MQInput', name: 'IN', properties: { queueName: inQueue, messageDomain: 'XMLNSC' }, position: { x: 0, y: 0 } },
    { id: 'calc', type: 'Compute', name: 'SHOUT', properties: { esql }, position: { x: 250, y: 0 } },
    { id: 'out1', type: 'MQOutput', name: 'OUT', properties: { queueName: outQueue }, position: { x: 500, y: 0 } },
  ],
  connections: [
    { from: { node: 'in1', terminal: 'out' }, to: { node: 'calc', terminal: 'in' } },
    { from: { node: 'calc', terminal: 'out' }, to: { node: 'out1', terminal: 'in' } },
  ],
};
let flowId = null;
let deploymentId = null;

const panel = () => page.getByTestId('debug-panel');

async function openDebugger() {
  await page.goto(`${base}/#/designer/${flowId}`);
  await panel().locator('summary').click();
}

async function takeOutput() {
  const got = await expectStatus('getting the output', await rest('POST', `/api/queues/${outQueue}/get?wait=20`), 200);
  if (!got) throw new Error('no message arrived on the output queue');
  return got.body;
}

const { close } = await launch().then(async (browser) => {
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  return browser;
});

try {
  await step('login', async () => {
    await login(page, base, username, password);
  });

  await step('a flow deployed to a production group, which refuses to pause', async () => {
    for (const name of [inQueue, outQueue]) await expectStatus(`defining ${name}`, await rest('POST', '/api/queues', { name }), 201);
    flowId = (await expectStatus('saving the flow', await rest('POST', '/api/flows', flow), 201)).id;
    deploymentId = (await expectStatus('deploying', await rest('POST', '/api/deployments', { flowId }), 202)).id;
    await until('the deployment running', async () => (await rest('GET', `/api/deployments/${deploymentId}`)).body.status === 'running', 60000);
    const refused = await rest('PUT', `/api/deployments/${deploymentId}/breakpoints`, { connections: ['in1.out->calc.in'], esql: [] });
    if (refused.status !== 409 || refused.body.code !== 'production_group') throw new Error(`expected 409: ${JSON.stringify(refused)}`);
    await openDebugger();
    await page.getByTestId('debug-production').waitFor();
  });

  await step('the group marked as a development group on the topology page', async () => {
    await page.goto(`${base}/#/topology`);
    const box = page.getByTestId('group-development-default');
    // the box shows the group's flag as the server has it, once the change is saved
    await box.click();
    await until('the group marked', async () => {
      const brokers = (await rest('GET', '/api/brokers')).body;
      return brokers.some((b) => b.groups.some((g) => g.name === 'default' && g.development));
    });
    await until('the box shown checked', () => box.isChecked());
  });

  await step('a breakpoint on a connection, armed by the worker', async () => {
    await openDebugger();
    const box = panel().getByLabel('Break on in1.out->calc.in');
    await box.click();
    await until('the breakpoint shown set', () => box.isChecked());
    await panel().getByTestId('breakpoints-state').filter({ hasText: 'armed' }).waitFor({ timeout: 30000 });
  });

  await step('a message paused at the breakpoint, a field edited, resumed: the edited value arrives', async () => {
    await expectStatus('putting', await rest('POST', `/api/queues/${inQueue}/messages`, { body: '<r><name>ada</name></r>' }), 201);
    const pause = panel().getByTestId('debug-pause');
    await pause.waitFor({ timeout: 30000 });
    const where = await pause.getByTestId('pause-where').textContent();
    if (!where.includes('IN.out → SHOUT.in') && !where.includes('in1.out → calc.in')) throw new Error(`paused at ${where}`);
    const row = pause.locator('li[data-path$=".r.name"]').first();
    if ((await row.getByTestId('field-value').first().textContent()) !== 'ada') throw new Error('the paused message does not show ada');
    // nothing leaves while the message is held
    const early = await expectStatus('looking at the output', await rest('POST', `/api/queues/${outQueue}/get?wait=0`), 200);
    if (early) throw new Error('a message left while paused');
    await row.getByRole('button', { name: /^Edit / }).first().click();
    await row.getByLabel(/^Value of /).first().fill('grace');
    await row.getByRole('button', { name: 'Set' }).click();
    await until('the edit applied by the worker', async () => {
      const text = await pause.locator('li[data-path$=".r.name"]').first().getByTestId('field-value').first().textContent();
      return text === 'grace';
    });
    await shot('paused-edited');
    await pause.getByRole('button', { name: 'Resume' }).click();
    const body = await takeOutput();
    if (body !== '<r><name>GRACE</name></r>') throw new Error(`output was ${body}`);
    await until('no pause left', async () => (await panel().getByTestId('debug-pause').count()) === 0);
  });

  await step('an ESQL breakpoint shows the variables in scope', async () => {
    const box = panel().getByLabel('Break on in1.out->calc.in');
    await box.click();
    await until('the breakpoint shown cleared', async () => !(await box.isChecked()));
    // a click in the Compute editor's breakpoint gutter, beside line 6
    await page.locator('[data-id="calc"]').click();
    const editor = page.getByTestId('esql-editor');
    await editor.locator('.cm-content').waitFor();
    const number = editor.locator('.cm-lineNumbers .cm-gutterElement').filter({ hasText: /^6$/ });
    const gutter = editor.locator('.cm-breakpoint-gutter');
    const at = await number.boundingBox();
    const column = await gutter.boundingBox();
    await page.mouse.click(column.x + column.width / 2, at.y + at.height / 2);
    await editor.locator('.cm-breakpoint').waitFor();
    if ((await panel().getByLabel('ESQL lines of SHOUT').inputValue()) !== '6') throw new Error('the panel does not show line 6');
    await until('ESQL breakpoint armed', async () => {
      const b = (await rest('GET', `/api/deployments/${deploymentId}/breakpoints`)).body;
      return b.armed && b.esql.length === 1 && b.connections.length === 0;
    });
    await expectStatus('putting', await rest('POST', `/api/queues/${inQueue}/messages`, { body: '<r><name>bob</name></r>' }), 201);
    const pause = panel().getByTestId('debug-pause');
    await pause.waitFor({ timeout: 30000 });
    const where = await pause.getByTestId('pause-where').textContent();
    if (!where.includes('ESQL line 6')) throw new Error(`paused at ${where}`);
    const who = await pause.getByTestId('variable-who').textContent();
    if (!who.includes('bob')) throw new Error(`variable who shows ${who}`);
    await shot('esql-variables');
    await pause.getByRole('button', { name: 'Resume' }).click();
    const body = await takeOutput();
    if (body !== '<r><name>BOB</name></r>') throw new Error(`output was ${body}`);
  });
} finally {
  await close();
}
finish();
