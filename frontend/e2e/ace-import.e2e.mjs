// End-to-end through the browser against a running `flowbroker up`: the designer's Import ACE…
// button uploads a zipped Toolkit workspace (ACE_ZIP), the report dialog says what each flow
// became and what was left out, the imported flows are offered in the toolbar afterwards and open
// without problems (a subflow node shows the subflow's terminals, a node of a type flowbroker lacks is drawn as a
// marked Unsupported node with its connections and is not offered in the palette); a
// file that is not a zip is refused in the problems list. Prints one JSON line of step results;
// exits 1 when any step fails.
import { join } from 'node:path';
import { launch, login, stepRunner } from './browser.mjs';

const base = process.env.FLOWBROKER_URL ?? 'http://127.0.0.1:8080';
const username = process.env.FLOWBROKER_USER ?? 'admin';
const password = process.env.FLOWBROKER_PASSWORD ?? '';
const out = process.env.OUTPUT_DIR ?? '/tmp/ace-import';
const zip = process.env.ACE_ZIP ?? '';
const notZip = process.env.NOT_ZIP ?? '';

let page = null;
const { step, finish } = stepRunner(out, () => page);

async function designer() {
  await page.goto(base + '/#/designer');
  await page.reload();
  await page.locator('.palette-item[data-type="MQInput"]').waitFor();
}

const { context, close } = await launch();
page = context.pages()[0] ?? (await context.newPage());
await page.setViewportSize({ width: 1440, height: 900 });

try {
  await login(page, base, username, password);

  await step('Import ACE… stores the workspace and shows the report', async () => {
    await designer();
    await page.getByTestId('import-ace-file').setInputFiles(zip);
    const dialog = page.getByRole('dialog', { name: 'ACE import report' });
    await dialog.waitFor({ timeout: 30000 });
    const headline = await page.getByTestId('ace-import-headline').innerText();
    if (!headline.includes('2 flows, 8/9 nodes mapped')) throw new Error(`headline: ${headline}`);
    const flows = await page.getByTestId('ace-import-flows').innerText();
    for (const want of [
      'orders.OrderRouter: created, 5/6 nodes',
      'to replace Check stock (JavaCompute): no flowbroker node type yet',
      'common.Stamp: created, 3/3 nodes',
    ])
      if (!flows.includes(want)) throw new Error(`flows list lacks ${want}: ${flows}`);
    await page.screenshot({ path: join(out, 'ace-01-report.png') });
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });
    const offered = await page.getByLabel('Open flow').locator('option').allInnerTexts();
    if (!offered.includes('orders.OrderRouter (v1)')) throw new Error(`the toolbar offers ${offered.join(', ')}`);
    await page.getByLabel('Open flow').selectOption({ label: 'orders.OrderRouter (v1)' });
    await page.getByTestId('flow-title').filter({ hasText: 'orders.OrderRouter · v1' }).waitFor({ timeout: 10000 });
    await page.locator('[data-id="FCMComposite_1_3"]').waitFor();
    // the JavaCompute node stands as a marked Unsupported node, wired as it was (Enrich.out1 → it)
    const placeholder = page.getByTestId('node-FCMComposite_1_5');
    await placeholder.waitFor();
    if (!(await placeholder.getAttribute('class'))?.includes('cat-unsupported')) throw new Error('not marked unsupported');
    const label = await placeholder.locator('.fb-node-type').innerText();
    if (label !== 'Unsupported node: ComIbmJavaCompute') throw new Error(`placeholder label: ${label}`);
    await page.getByTestId('rf__edge-FCMComposite_1_2.out1->FCMComposite_1_5.in').waitFor({ timeout: 5000 });
    if (await page.locator('.palette-item[data-type="Unsupported"]').count()) throw new Error('Unsupported offered in the palette');
    // the subflow node is drawn with its Input and Output terminals, so its wiring is sound
    // the only problem is the node to replace before deploying
    const problems = await page.locator('.problems li').allInnerTexts();
    if (problems.length !== 1 || !problems[0].includes("node 'Check stock' is an unsupported ACE node (ComIbmJavaCompute)"))
      throw new Error(`problems: ${problems.join(' | ')}`);
    await page.screenshot({ path: join(out, 'ace-02-opened.png') });
    // it saves as it is: the server refuses it only on deploy
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved orders.OrderRouter version 2').waitFor({ timeout: 10000 });
  });

  await step('a file that is not a zip is refused in the problems list', async () => {
    await designer();
    await page.getByTestId('import-ace-file').setInputFiles(notZip);
    await page
      .locator('.problems li')
      .filter({ hasText: 'ACE import refused: not a zip archive' })
      .waitFor({ timeout: 10000 });
  });
} finally {
  await close();
}

finish();
