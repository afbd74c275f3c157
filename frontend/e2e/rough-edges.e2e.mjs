// End-to-end through the browser against a running `flowbroker up`, at 1440 × 900: the Queues
// page's define form fits its column, a purge empties a queue whose message an open unit of work
// holds (the caller holds RE.HELD's first message so), the monitoring page of a flow without a
// user trace says so instead of showing a query error, the problems list names each problem once
// by node name and property label and forgets a deleted node's, a pasted node is selected and
// shown in the property panel, and the open flow is in the address so a reload reopens it.
// Every step is independent of the others. Prints one JSON line of step results; exits 1 when any
// step fails.
import { launch, login, rest as restCall, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? '/tmp/rough-edges';
const heldQueue = process.env.HELD_QUEUE ?? 'RE.HELD';

let page = null;
const { step, shot, finish } = stepRunner(out, () => page);

const rest = (method, path, body) => restCall(page, method, path, body);

async function openPage(name) {
  await page.getByRole('link', { name }).click();
  await page.getByRole('heading', { name, exact: true }).waitFor();
}

/** A fresh, empty designer. */
async function newDesigner() {
  await page.goto(base + '/#/designer');
  await page.reload();
  await page.locator('.palette-item[data-type="MQInput"]').waitFor();
}

async function problemTexts() {
  return page.locator('.problems li').allInnerTexts();
}

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());
await page.setViewportSize({ width: 1440, height: 900 });
page.on('dialog', (d) => void d.accept());
const stamp = Date.now();

try {
  await login(page, base, username, password);

  await step('the Define button of the Queues page is on screen at 1440 px', async () => {
    await openPage('Queues');
    const define = page.getByRole('button', { name: 'Define' });
    await define.waitFor();
    await shot('rough-01-queues-1440');
    const button = await define.boundingBox();
    const form = await page.getByRole('form', { name: 'Define a queue' }).boundingBox();
    const { scrollWidth, clientWidth } = await page.locator('main').evaluate((m) => ({
      scrollWidth: m.scrollWidth,
      clientWidth: m.clientWidth,
    }));
    if (button.x + button.width > 1440 || button.x + button.width > form.x + form.width + 1)
      throw new Error(`Define ends at x=${button.x + button.width}, its form at ${form.x + form.width}, the window at 1440`);
    if (scrollWidth > clientWidth) throw new Error(`the page scrolls sideways: ${scrollWidth} > ${clientWidth} px`);
  });

  await step('Purge empties a queue whose message an open unit of work holds', async () => {
    await openPage('Queues');
    const depth = page.getByTestId(`depth-${heldQueue}`);
    await depth.filter({ hasText: /^2$/ }).waitFor({ timeout: 10000 });
    await page.getByRole('button', { name: `Purge ${heldQueue}` }).click();
    const status = page.getByRole('status').filter({ hasText: /^Purged/ });
    await status.waitFor({ timeout: 10000 });
    // the page asks for the depths again at once, and every 3 s
    await depth.filter({ hasText: /^0$/ }).waitFor({ timeout: 5000 });
    await shot('rough-02-purged');
    const said = await status.innerText();
    if (said !== `Purged 2 messages of ${heldQueue}`) throw new Error(`the purge reported "${said}"`);
  });

  await step('a flow without a user trace shows "No user trace yet", not a query error', async () => {
    const flow = `RE_NoTrace_${stamp}`;
    for (const name of ['RE.TRACE.IN', 'RE.TRACE.OUT']) await rest('POST', '/api/queues', { name });
    const deployed = await rest('POST', '/api/deployments', {
      flowName: flow,
      document: {
        name: flow,
        nodes: [
          { id: 'in', type: 'MQInput', name: 'In', properties: { queueName: 'RE.TRACE.IN' } },
          { id: 'out', type: 'MQOutput', name: 'Out', properties: { queueName: 'RE.TRACE.OUT' } },
        ],
        connections: [{ from: { node: 'in', terminal: 'out' }, to: { node: 'out', terminal: 'in' } }],
      },
    });
    if (deployed.status !== 202) throw new Error(`deploying answered ${deployed.status}: ${JSON.stringify(deployed.body)}`);
    await openPage('Monitoring');
    const row = page.getByRole('button', { name: flow, exact: true });
    await row.waitFor({ timeout: 60000 });
    await row.click();
    await page.getByRole('heading', { name: 'User trace' }).waitFor();
    // the trace is asked for when the flow is chosen (and again every 5 s): let the answer arrive
    await page.waitForTimeout(1500);
    await shot('rough-03-no-trace');
    const shown = await page.locator('section[aria-label="Monitoring"]').innerText();
    if (/undefined/.test(shown)) throw new Error(`the page shows a query error: ${shown.match(/.*undefined.*/)[0]}`);
    const trace = await page.getByLabel('User trace', { exact: true }).innerText();
    if (!trace.startsWith('No user trace yet')) throw new Error(`the trace reads "${trace}"`);
  });

  await step("problems are listed once, by node name and property label, and go with their node", async () => {
    await newDesigner();
    await page.getByRole('button', { name: 'Add MQInput node' }).click();
    await page.locator('[data-id="mqinput1"]').waitFor();
    await page.getByLabel('Node name').fill('Orders in');
    // the server refuses the save: its answer joins the designer's own check
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/flows'),
      page.getByRole('button', { name: 'Save', exact: true }).click(),
    ]);
    if (answer.status() !== 422) throw new Error(`saving a node without its queue name answered ${answer.status()}`);
    await page.getByRole('button', { name: 'Save', exact: true }).waitFor();
    await page.waitForTimeout(300);
    await shot('rough-04-problems');
    const texts = await problemTexts();
    const queueName = texts.filter((t) => /queue ?name/i.test(t));
    if (queueName.length !== 1) throw new Error(`the missing queue name is listed ${queueName.length} times: ${JSON.stringify(texts)}`);
    if (!queueName[0].startsWith('Orders in · Queue name'))
      throw new Error(`not named by node name and property label: ${queueName[0]}`);
    const raw = texts.filter((t) => t.includes('/nodes/') || t.includes('mqinput1'));
    if (raw.length) throw new Error(`internal ids or JSON pointers listed: ${JSON.stringify(raw)}`);
    await page.locator('[data-id="mqinput1"]').click();
    await page.keyboard.press('Delete');
    await page.locator('[data-id="mqinput1"]').waitFor({ state: 'detached' });
    const left = await problemTexts();
    if (left.length) throw new Error(`problems of the deleted node stay: ${JSON.stringify(left)}`);
    await page.locator('.problems').getByText('No problems.').waitFor();
  });

  await step('after a paste the pasted node is selected and in the property panel', async () => {
    await newDesigner();
    await page.getByRole('button', { name: 'Add Compute node' }).click();
    await page.locator('[data-id="compute1"]').waitFor();
    await page.getByLabel('Node name').fill('Enrich');
    await page.locator('[data-id="compute1"]').click();
    await page.keyboard.press('Control+c');
    await page.keyboard.press('Control+v');
    await page.locator('[data-id="compute2"]').waitFor();
    await shot('rough-05-pasted');
    await page.getByRole('complementary', { name: 'Properties of Enrich1' }).waitFor({ timeout: 3000 });
    const selected = await page.locator('.react-flow__node.selected').evaluateAll((ns) => ns.map((n) => n.dataset.id));
    if (JSON.stringify(selected) !== '["compute2"]') throw new Error(`selected after the paste: ${JSON.stringify(selected)}`);
  });

  await step('the open flow is in the address, and a reload reopens it', async () => {
    await newDesigner();
    const flow = `RE_Url_${stamp}`;
    await page.getByLabel('Name', { exact: true }).fill(flow);
    await page.getByRole('button', { name: 'Add MQInput node' }).click();
    await page.locator('#prop-mqinput1-queueName').fill('RE.URL.IN');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByTestId('notice').filter({ hasText: `Saved ${flow} version 1` }).waitFor({ timeout: 10000 });
    const saved = await rest('GET', '/api/flows');
    const id = saved.body.find((f) => f.name === flow)?.id;
    if (!id) throw new Error(`${flow} was not saved`);
    await page.waitForFunction((want) => window.location.hash === want, `#/designer/${id}`, { timeout: 3000 });
    await page.reload();
    await page.getByTestId('flow-title').filter({ hasText: `${flow} · v1` }).waitFor({ timeout: 10000 });
    await page.locator('[data-id="mqinput1"]').waitFor();
    // choosing another flow in the toolbar moves the address along
    await page.getByLabel('Open flow').selectOption('');
    await page.waitForFunction(() => window.location.hash === '#/designer', null, { timeout: 3000 });
    await page.getByLabel('Open flow').selectOption(String(id));
    await page.waitForFunction((want) => window.location.hash === want, `#/designer/${id}`, { timeout: 3000 });
    await shot('rough-06-reopened');
  });
} finally {
  await close();
}

finish();
