// End-to-end through the browser against a running `flowbroker up`: a flow with two test cases
// (one right, one wrong on purpose) opens in the designer, its Tests panel lists them, runs them
// on a private engine, shows one green and one red, and the red one's diff names the tree path
// with the expected and actual values; after the flow is changed and saved, the right one fails too.
// The steps build on each other. Prints one JSON line of step results; exits 1 when any fails.
import { launch, login, rest as restCall, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? '/tmp/flow-tests';
const flow = process.env.FLOW_NAME ?? 'E2eTests';

let page = null;
const { step, shot, finish } = stepRunner(out, () => page, { chained: true });
const rest = (method, path, body) => restCall(page, method, path, body);

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

const document = {
  name: flow,
  nodes: [
    { id: 'in', type: 'MQInput', properties: { queueName: `${flow}.IN`, messageDomain: 'XMLNSC' }, position: { x: 40, y: 80 } },
    {
      id: 'calc',
      type: 'Compute',
      properties: { esql: 'SET OutputRoot = InputRoot;\nSET OutputRoot.XMLNSC.Order.Total = InputRoot.XMLNSC.Order.Qty * 2;\n' },
      position: { x: 240, y: 80 },
    },
    { id: 'out', type: 'MQOutput', properties: { queueName: `${flow}.OUT` }, position: { x: 440, y: 80 } },
  ],
  connections: [
    { from: { node: 'in', terminal: 'out' }, to: { node: 'calc', terminal: 'in' } },
    { from: { node: 'calc', terminal: 'out' }, to: { node: 'out', terminal: 'in' } },
  ],
};

const caseOf = (name, qty, total) => ({
  name,
  input: { body: `<Order><Qty>${qty}</Qty></Order>` },
  outputs: { [`${flow}.OUT`]: [{ body: `<Order><Qty>${qty}</Qty><Total>${total}</Total></Order>` }] },
});

async function runTests(summary) {
  await page.getByRole('button', { name: 'Tests (2)', exact: true }).click();
  await page.getByRole('dialog', { name: 'Flow tests' }).waitFor();
  await page.getByRole('button', { name: 'Run tests' }).click();
  await page.getByTestId('test-summary').filter({ hasText: summary }).waitFor({ timeout: 120_000 });
}

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());
let flowId = null;
try {
  await step('a flow with two test cases is stored', async () => {
    await login(page, base, username, password);
    const created = await rest('POST', '/api/flows', document);
    expect(created.status === 201, `create: ${created.status} ${JSON.stringify(created.body)}`);
    flowId = created.body.id;
    for (const c of [caseOf('doubles the quantity', 3, 6), caseOf('wrong on purpose', 3, 9)]) {
      const added = await rest('POST', `/api/flows/${flowId}/tests`, c);
      expect(added.status === 201, `add case: ${added.status} ${JSON.stringify(added.body)}`);
    }
  });

  await step('the Tests panel lists the cases, not run yet', async () => {
    await page.goto(`${base}/#/designer/${flowId}`);
    await page.reload();
    await page.getByRole('button', { name: 'Tests (2)', exact: true }).click();
    const rows = page.getByTestId('test-case');
    await rows.first().waitFor();
    const texts = await rows.allInnerTexts();
    expect(texts.length === 2 && texts.every((t) => t.includes('not run')), `rows: ${JSON.stringify(texts)}`);
    expect(texts[0].includes('→ ' + flow + '.OUT'), `summary: ${texts[0]}`);
  });

  await step('a run shows one case green and one red with its tree diff', async () => {
    await page.getByRole('button', { name: 'Run tests' }).click();
    await page.getByTestId('test-summary').filter({ hasText: '1 of 2 passed' }).waitFor({ timeout: 120_000 });
    const passed = page.locator('tr.test-passed');
    const failed = page.locator('tr.test-failed');
    expect((await passed.count()) === 1 && (await passed.innerText()).includes('doubles the quantity'), 'green row');
    expect((await failed.count()) === 1 && (await failed.innerText()).includes('wrong on purpose'), 'red row');
    await failed.getByRole('button', { name: 'show diff' }).click();
    const diff = page.getByTestId('test-diff');
    await diff.waitFor();
    const cells = await diff.locator('tbody tr').first().locator('td').allInnerTexts();
    expect(
      JSON.stringify(cells) === JSON.stringify([`${flow}.OUT #1`, 'XMLNSC.Order.Total', 'changed', '9', '6']),
      `diff row: ${JSON.stringify(cells)}`,
    );
    // the message that arrived, as the message view shows it, with the differing field marked
    await page.getByTestId('test-actual').locator('summary').click();
    const tree = page.getByTestId('test-actual').getByTestId('message-view');
    await tree.waitFor();
    expect((await tree.innerText()).includes('Total'), 'the actual tree shows the Total field');
    await shot('flow-tests-01-run');
    await page.getByRole('button', { name: 'Close' }).click();
  });

  await step('after the flow is changed and saved, the right case fails too', async () => {
    const stored = await rest('GET', `/api/flows/${flowId}`);
    const esql = stored.body.document.nodes[1].properties.esql.replace('* 2', '* 5');
    // the change is made in the designer's store, as the property panel makes it, then saved
    await page.evaluate((text) => window.__designer.getState().setProperty('calc', 'esql', text), esql);
    await Promise.all([
      page.waitForResponse((r) => r.url().includes(`/api/flows/${flowId}`) && r.request().method() === 'PUT'),
      page.getByRole('button', { name: 'Save', exact: true }).click(),
    ]);
    await runTests('0 of 2 passed');
    expect((await page.locator('tr.test-failed').count()) === 2, 'both red');
    await shot('flow-tests-02-changed');
  });
} finally {
  await close();
}
finish();
