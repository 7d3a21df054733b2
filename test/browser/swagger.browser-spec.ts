import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', 'artifacts');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Swagger UI (/docs) as a new user clicks it: Authorize, then "Try it out" and "Execute" with what
 * the page pre-fills. Two "Create a session" clicks make two sessions (the page sends a fresh
 * Idempotency-Key each time), and "Start a run" with its pre-filled example is accepted.
 */
describe('Swagger UI (/docs) in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `swagger-${name}.png`), fullPage: false });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startTestApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    page.setDefaultTimeout(20_000);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Opens an operation, clicks Try it out (fills `params`), Execute; returns the status and body shown. */
  async function execute(operationId: string, tag: string, params: Record<string, string> = {}): Promise<{ status: number; body: any; block: Locator }> {
    const block = page.locator(`#operations-${tag}-${operationId}`);
    if (!(await block.locator('.try-out').isVisible().catch(() => false))) await block.locator('.opblock-summary').first().click();
    const tryOut = block.locator('button.try-out__btn');
    if ((await tryOut.textContent())?.includes('Try it out')) await tryOut.click();
    for (const [name, value] of Object.entries(params)) await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
    // A previous answer of this operation is cleared first: its status cell would satisfy the wait below at once (a stale answer on a loaded machine).
    const clear = block.locator('button.btn-clear');
    if (await clear.isVisible().catch(() => false)) {
      await clear.click();
      await block.locator('.live-responses-table').waitFor({ state: 'detached' });
    }
    await block.locator('button.execute').click();
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    const text = (await block.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '';
    const code = Number((await status.textContent())?.trim().slice(0, 3));
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: code, body, block };
  }

  it('Authorize, then Create a session twice and Start a run with the pre-filled examples', async () => {
    await page.goto(`${t.url}/docs`);
    await page.locator('.swagger-ui .btn.authorize').first().click();
    await page.locator('.modal-ux input[type="text"], .modal-ux input[type="password"]').first().fill(KEYS.adminA);
    await page.locator('.modal-ux .auth-btn-wrapper button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();

    const sentKey = async (block: Locator) => /Idempotency-Key: ([0-9a-f-]{36})/.exec((await block.locator('.curl').first().textContent()) ?? '')?.[1];
    const first = await execute('Sessions_create', 'Sessions');
    expect(first.status).toBe(201);
    const firstKey = await sentKey(first.block);
    // The pre-filled key was left as it was: the page sent a fresh UUID instead, each time.
    expect(firstKey).toMatch(/^[0-9a-f]{8}-/);
    const again = await execute('Sessions_create', 'Sessions');
    expect(again.status).toBe(201);
    expect(await sentKey(again.block)).not.toBe(firstKey);
    expect(again.body.id).toMatch(/^sess_/);
    expect(again.body.id).not.toBe(first.body.id);
    await shot('1-create-session');

    const run = await execute('Runs_create', 'Runs', { id: again.body.id });
    expect(run.status).toBe(202);
    expect(run.body).toMatchObject({ status: 'queued', session_id: again.body.id });
    await shot('2-start-run');
  }, 90_000);
});
