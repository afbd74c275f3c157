// End-to-end through the browser against a running `flowbroker up`: the flow exerciser. A flow
// (MQInput → Compute doubling <qty> → MQOutput) is saved and deployed; from the designer an
// operator records a message and clicks a connection to see its tree and body; a test message
// that does not parse is refused with the parser's line and column in the dialog; a test message
// sent from the canvas is kept with the flow and its path opens; a test case made from that
// recording passes in the Tests panel and fails once the ESQL is changed and saved; a viewer sees
// the recording but cannot record or send; and a 10 MB message is recorded cut short with a
// notice. The steps build on each other. Prints one JSON line of step results; exits 1 when any
// step fails.
import { launch, login, rest as restCall, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? '/tmp/exerciser';

let page = null;
const { step, shot, finish } = stepRunner(out, () => page, { chained: true });
const rest = (method, path, body) => restCall(page, method, path, body);
const stamp = Date.now();

const DOUBLE = `CREATE COMPUTE MODULE Double
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot = InputRoot;
    SET OutputRoot.XMLNSC.order.qty = CAST(InputRoot.XMLNSC.order.qty AS INTEGER) * 2;
    RETURN TRUE;
  END;
END MODULE;
`;
const BIG = `CREATE COMPUTE MODULE Big
  CREATE FUNCTION Main() RETURNS BOOLEAN
  BEGIN
    SET OutputRoot.Properties = InputRoot.Properties;
    SET OutputRoot.MQMD = InputRoot.MQMD;
    SET OutputRoot.BLOB.BLOB = REPLICATE(X'41', 10485760);
    RETURN TRUE;
  END;
END MODULE;
`;

function document(name, queueIn, queueOut, domain, esql) {
  return {
    name,
    nodes: [
      { id: 'in', type: 'MQInput', name: 'Orders in', properties: { queueName: queueIn, messageDomain: domain }, position: { x: 40, y: 80 } },
      { id: 'c', type: 'Compute', name: 'Work', properties: { esql }, position: { x: 320, y: 80 } },
      { id: 'out', type: 'MQOutput', name: 'Orders out', properties: { queueName: queueOut }, position: { x: 600, y: 80 } },
    ],
    connections: [
      { from: { node: 'in', terminal: 'out' }, to: { node: 'c', terminal: 'in' } },
      { from: { node: 'c', terminal: 'out' }, to: { node: 'out', terminal: 'in' } },
    ],
  };
}

/** Save and deploy a flow over REST; its flow id once the group runs it. */
async function deployed(doc) {
  for (const queue of [doc.nodes[0].properties.queueName, doc.nodes[2].properties.queueName]) {
    await rest('POST', '/api/queues', { name: queue });
  }
  const saved = await rest('POST', '/api/flows', doc);
  if (saved.status !== 201) throw new Error(`saving answered ${saved.status}: ${JSON.stringify(saved.body)}`);
  const created = await rest('POST', '/api/deployments', { flowId: saved.body.id });
  if (created.status !== 202) throw new Error(`deploying answered ${created.status}: ${JSON.stringify(created.body)}`);
  for (let i = 0; i < 600; i++) {
    const d = await rest('GET', `/api/deployments/${created.body.id}`);
    if (d.body.status === 'running') return saved.body.id;
    if (d.body.status === 'failed') throw new Error(`deployment failed: ${JSON.stringify(d.body.diagnostics)}`);
    await page.waitForTimeout(100);
  }
  throw new Error('the deployment did not run within 60 s');
}

async function openFlow(flowId) {
  await page.goto(`${base}/#/designer/${flowId}`);
  await page.reload();
  await page.locator('[data-id="c"]').waitFor();
  await openPanel();
  await page.locator('section[aria-label="Flow exerciser"]').getByText('default/default v1').waitFor({ timeout: 15000 });
}

const panel = () => page.locator('section[aria-label="Flow exerciser"]');

/** The panel starts closed (floating in the corner); once opened it stays open. */
async function openPanel() {
  const toggle = panel().getByRole('button', { name: 'Flow exerciser' });
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
}

async function clickEdge(id) {
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  await page.waitForTimeout(300);
  await page.locator(`.react-flow__edge[data-id="${id}"]`).click({ force: true });
  await page.getByTestId('connection-crossings').getByRole('heading', { name: id }).waitFor();
}

async function fieldValue(path) {
  return page.locator(`[data-path="${path}"] > .message-field [data-testid="field-value"]`).first().innerText();
}

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());
await page.setViewportSize({ width: 1440, height: 1000 });
page.on('dialog', (d) => void d.accept());
const flowName = `Exercised_${stamp}`;
const queueIn = `EX.IN.${stamp}`;
const queueOut = `EX.OUT.${stamp}`;
let flowId = 0;

try {
  await login(page, base, username, password);

  await step('a deployed flow opens in the designer with the exerciser under the canvas', async () => {
    flowId = await deployed(document(flowName, queueIn, queueOut, 'XMLNSC', DOUBLE));
    await openFlow(flowId);
    await panel().getByRole('button', { name: 'Record' }).waitFor();
    await shot('exerciser-01-panel');
  });

  await step('Record, a message arrives, a click on a connection shows its tree and body', async () => {
    await panel().getByLabel('Messages to record').fill('1');
    await panel().getByRole('button', { name: 'Record' }).click();
    await panel().getByText(/· recording ·/).first().waitFor({ timeout: 15000 });
    const put = await rest('POST', `/api/queues/${queueIn}/messages`, { body: '<order><qty>21</qty></order>', format: 'XML', persistent: false });
    if (put.status !== 201) throw new Error(`the put answered ${put.status}`);
    await panel().getByText('Ended: 1 message recorded').waitFor({ timeout: 20000 });
    await clickEdge('c.out->out.in');
    await page.getByTestId('message-view').waitFor();
    const qty = await fieldValue('Root.XMLNSC.order.qty');
    if (qty !== '42') throw new Error(`qty after the compute reads ${qty}`);
    const body = await page.getByTestId('message-body').innerText();
    if (body !== '<order>\n  <qty>42</qty>\n</order>') throw new Error(`the body reads ${JSON.stringify(body)}`);
    // folders fold: MQMD's fields go away and come back
    await page.getByRole('button', { name: 'Collapse MQMD' }).click();
    if (await page.locator('[data-path="Root.MQMD.Format"]').count()) throw new Error('MQMD did not fold');
    await page.getByRole('button', { name: 'Expand MQMD' }).click();
    await page.locator('[data-path="Root.MQMD.Format"]').waitFor();
    await clickEdge('in.out->c.in');
    await page.locator('[data-path="Root.XMLNSC.order.qty"]').getByText('21', { exact: true }).waitFor();
    await shot('exerciser-02-connection-tree');
  });

  await step("a test message that does not parse gets the parser's line and column in the dialog", async () => {
    await page.locator('[data-id="in"]').click();
    await panel().getByRole('button', { name: 'Send test message…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send a test message' });
    await dialog.waitFor();
    await dialog.getByLabel('Message body').fill('<order>\n  <qty>3</qyt>\n</order>');
    await dialog.getByRole('button', { name: 'Send and record' }).click();
    const error = dialog.getByTestId('test-message-error');
    await error.waitFor({ timeout: 15000 });
    const text = await error.innerText();
    if (!text.startsWith('line 2, column 15: XMLNSC: malformed XML at line 2, column 15'))
      throw new Error(`the dialog says ${JSON.stringify(text)}`);
    await dialog.locator('.cm-lintRange-error').waitFor();
    await shot('exerciser-03-parse-error');
    const put = await rest('GET', `/api/queues/${queueIn}/messages`);
    if (put.body.length !== 0) throw new Error(`a refused message reached the queue: ${JSON.stringify(put.body)}`);
  });

  await step('a test message sent from the canvas is kept with the flow and its recorded path opens', async () => {
    const dialog = page.getByRole('dialog', { name: 'Send a test message' });
    await dialog.getByLabel('Message body').fill('<order><qty>3</qty></order>');
    await dialog.getByLabel('Test message name').fill('three');
    await dialog.getByRole('button', { name: 'Keep with flow' }).click();
    await dialog.getByRole('button', { name: 'Send and record' }).click();
    await dialog.waitFor({ state: 'detached', timeout: 20000 });
    await panel().getByText('Ended: 1 message recorded').waitFor({ timeout: 20000 });
    const path = page.getByTestId('crossed-connections');
    await path.getByRole('button', { name: 'in.out->c.in' }).waitFor();
    await path.getByRole('button', { name: 'c.out->out.in' }).click();
    await page.getByTestId('connection-crossings').getByRole('heading', { name: 'c.out->out.in' }).waitFor();
    const qty = await fieldValue('Root.XMLNSC.order.qty');
    if (qty !== '6') throw new Error(`qty reads ${qty}`);
    await shot('exerciser-04-sent-path');
    // kept on the node: saved with the flow, there after a reload
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').getByText(/^Saved .* version 2$/).waitFor();
    await openFlow(flowId);
    await page.locator('[data-id="in"]').click();
    await panel().getByRole('button', { name: 'Send test message…' }).click();
    const again = page.getByRole('dialog', { name: 'Send a test message' });
    await again.getByLabel('Saved test messages').locator('option', { hasText: 'three' }).waitFor({ state: 'attached' });
    const body = await again.getByLabel('Message body').innerText();
    if (body !== '<order><qty>3</qty></order>') throw new Error(`the kept body reads ${JSON.stringify(body)}`);
    await again.getByRole('button', { name: 'Close' }).click();
  });

  await step('a test case made from the recording passes in Tests, and fails once the ESQL is changed', async () => {
    await clickEdge('c.out->out.in');
    await panel().getByRole('button', { name: 'Create test case…' }).click();
    const form = panel().getByRole('form', { name: 'New test case' });
    await form.getByLabel('Test case name').fill('doubles three');
    await form.getByLabel('Mark Root.MQMD.CorrelId').check();
    await form.getByRole('button', { name: 'Save test case' }).click();
    await panel().getByText('Test case “doubles three” saved with the flow; run it in Tests.').waitFor({ timeout: 15000 });
    const stored = await rest('GET', `/api/flows/${flowId}`);
    const ignore = stored.body.document.tests?.[0]?.ignore ?? [];
    if (!ignore.includes('Root.MQMD.CorrelId')) throw new Error(`the case ignores ${JSON.stringify(ignore)}`);
    const runTests = async (summary) => {
      // the flow's properties (with its Tests) show when no node is chosen
      await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
      await page.getByRole('button', { name: 'Tests (1)', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Flow tests' });
      await dialog.getByRole('button', { name: 'Run tests' }).click();
      await dialog.getByTestId('test-summary').filter({ hasText: summary }).waitFor({ timeout: 120_000 });
      await shot(summary.startsWith('1') ? 'exerciser-07-test-case' : 'exerciser-08-test-case-fails');
      await dialog.getByRole('button', { name: 'Close' }).click();
    };
    await runTests('1 of 1 passed');
    // the ESQL is changed in the designer's store, as the property panel changes it, and saved
    await page.evaluate((text) => window.__designer.getState().setProperty('c', 'esql', text), DOUBLE.replace('* 2', '* 5'));
    await Promise.all([
      page.waitForResponse((r) => r.url().includes(`/api/flows/${flowId}`) && r.request().method() === 'PUT'),
      page.getByRole('button', { name: 'Save', exact: true }).click(),
    ]);
    await runTests('0 of 1 passed');
  });

  await step('a viewer sees the recordings but can neither record nor send', async () => {
    const viewer = `viewer${stamp}`;
    const made = await rest('POST', '/api/users', { username: viewer, password: 'viewer-pass-123', role: 'viewer' });
    if (made.status !== 201) throw new Error(`creating the viewer answered ${made.status}`);
    await page.evaluate(() => sessionStorage.clear());
    await login(page, base, viewer, 'viewer-pass-123');
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.reload();
    await page.locator('[data-id="c"]').waitFor();
    await openPanel();
    await panel().getByText('default/default').waitFor({ timeout: 15000 });
    if (await panel().getByRole('button', { name: 'Record' }).count()) throw new Error('a viewer is offered Record');
    await page.locator('[data-id="in"]').click();
    if (await panel().getByRole('button', { name: 'Send test message…' }).count()) throw new Error('a viewer is offered a test message');
    await clickEdge('c.out->out.in');
    await page.getByTestId('message-view').waitFor();
    await shot('exerciser-05-viewer');
    await page.evaluate(() => sessionStorage.clear());
    await login(page, base, username, password);
  });

  await step('a 10 MB message is recorded cut short, with a notice', async () => {
    const bigId = await deployed(document(`Big_${stamp}`, `EX.BIG.IN.${stamp}`, `EX.BIG.OUT.${stamp}`, 'BLOB', BIG));
    await openFlow(bigId);
    await page.locator('[data-id="in"]').click();
    await panel().getByRole('button', { name: 'Send test message…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send a test message' });
    await dialog.getByLabel('Message body').fill('start');
    await dialog.getByRole('button', { name: 'Send and record' }).click();
    await dialog.waitFor({ state: 'detached', timeout: 20000 });
    await panel().getByText('Ended: 1 message recorded').waitFor({ timeout: 60000 });
    await clickEdge('c.out->out.in');
    const notices = page.locator('.message-notices');
    await notices.getByText('the body is 10,485,760 bytes: only the first 262,144 are shown').waitFor({ timeout: 15000 });
    const heading = await page.locator('.message-body h3').innerText();
    if (!heading.startsWith('BLOB body · 10,485,760 bytes')) throw new Error(`the body heading reads ${heading}`);
    await shot('exerciser-06-truncated');
  });
} finally {
  await close();
}
finish();
