import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createSession, script, startRun, userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

async function streamText(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', 'artifacts');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('web console (/console) in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `console-${name}.png`), fullPage: true });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH)`);
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startTestApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
    page.setDefaultTimeout(15_000);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('is public: /console redirects to the page, which asks for a key', async () => {
    const res = await fetch(`${t.url}/console`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console/');
    await page.goto(`${t.url}/console`);
    await expect(page.getByRole('heading', { name: 'Open the console' }).isVisible()).resolves.toBe(true);
    await page.getByLabel('API key').fill('wrong-key-0000');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('This key is not known to the service.').waitFor();
    await shot('1-key');
  });

  it('chats: creates a session, streams the answer, approves the ticket, shows the final answer', async () => {
    await page.getByLabel('API key').fill(KEYS.adminA);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await expect(page.evaluate<string | null>("sessionStorage.getItem('agent-api-console.key')")).resolves.toBe(KEYS.adminA);
    await page.getByLabel('Title').fill('Order O-1001');
    await page.getByRole('button', { name: 'Create session' }).click();
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill('Please help with order O-1001');
    await composer.press('Enter');

    // The first tool runs without asking; the ticket waits for approval.
    await page.locator('.tool-card[data-status="completed"]', { hasText: 'get_order' }).waitFor();
    // Count typewriter frames: the answer must appear progressively, not in one piece.
    // (evaluated in the page: this project's type-check has no DOM lib)
    await page.evaluate("window.typedFrames = 0; document.getElementById('messages').addEventListener('typed', () => window.typedFrames++)");
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    await expect(page.locator('#run-status').textContent()).resolves.toContain('waiting for approval');
    await shot('2-approval');
    await approve.click();
    await page.locator('.tool-card[data-status="completed"]', { hasText: 'create_ticket' }).waitFor();
    await expect(page.locator('.tool-card', { hasText: 'create_ticket' }).textContent()).resolves.toMatch(/Approved by admin_a/);
    await expect(page.locator('.tool-card', { hasText: 'create_ticket' }).locator('.tool-duration').textContent()).resolves.toMatch(/^\d+ ms$/);

    // Streamed (typed) text, ending with the ticket id; then the run's final status.
    const answer = page.locator('.msg-assistant .bubble', { hasText: /ticket T-[0-9A-Z]+/ });
    await answer.waitFor();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await page.locator('.msg-assistant .bubble.typing').waitFor({ state: 'detached' });
    await shot('3-answer');
    await expect(page.evaluate<number>('window.typedFrames')).resolves.toBeGreaterThan(3);
    const text = (await answer.textContent()) ?? '';
    const ticket = /T-[0-9A-Z]+/.exec(text)![0];
    const sessionId = decodeURIComponent(new URL(page.url()).hash.split('/')[2]);
    const messages = await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sessionId}/messages`);
    const final = messages.body.data.filter((m: { role: string }) => m.role === 'assistant').pop();
    expect(final.content[0].text).toBe(text);
    expect(final.content[0].text).toContain(ticket);

    // Reloading the page shows the history from the API (the key survives in sessionStorage).
    await page.reload();
    await page.locator('.msg-assistant .bubble', { hasText: ticket }).waitFor();
  });

  it('steers: the message box stays enabled while a run is active and what is sent goes to that run', async () => {
    await page.goto(`${t.url}/console/#/sessions`);
    await page.getByLabel('Title').fill('Steering');
    await page.getByRole('button', { name: 'Create session' }).click();
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill(`!script ${JSON.stringify([{ sleep_ms: 1500 }, { text: 'not this' }])}`);
    await composer.press('Enter');
    await page.locator('#run-status', { hasText: 'running' }).waitFor();
    await expect(composer.isEnabled()).resolves.toBe(true);
    await composer.fill(`!script ${JSON.stringify([{ text: 'steered from the console' }])}`);
    await composer.press('Enter');
    await page.locator('.msg-assistant .bubble', { hasText: 'steered from the console' }).waitFor();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    const sessionId = decodeURIComponent(new URL(page.url()).hash.split('/')[2]);
    const runs = await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sessionId}/runs`);
    expect(runs.body.data).toHaveLength(1); // the second message was taken by the active run
    await shot('3b-steered');
  });

  it("shows the pinned agent version's tools on the session page", async () => {
    // Still on the steering session's page: the side panel lists the tools of its agent version.
    const tools = page.locator('#agent-tools');
    await tools.locator('li', { hasText: 'create_ticket' }).waitFor();
    const sessionId = decodeURIComponent(new URL(page.url()).hash.split('/')[2]);
    const session = (await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sessionId}`)).body;
    const version = (await t.call(KEYS.adminA, 'GET', `/v1/agents/${session.agent.id}/versions/${session.agent.version}`)).body;
    expect(version.tools.length).toBeGreaterThan(0);
    const names = await tools.locator('li .mono:not(.tool-args)').allTextContents();
    // Each tool's argument names, from the JSON schema the agent version lists.
    const args = await tools.locator('li .tool-args').allTextContents();
    expect(args).toEqual(version.tools.map((x: { parameters: { properties?: object } }) => `(${Object.keys(x.parameters.properties ?? {}).join(', ')})`));
    expect(args[version.tools.findIndex((x: { name: string }) => x.name === 'get_order')]).toBe('(order_id)');
    expect(names).toEqual(version.tools.map((x: { name: string }) => x.name));
    await expect(tools.locator('li', { hasText: 'create_ticket' }).textContent()).resolves.toContain('approve');
    await shot('3c-agent-tools');
  });

  it('ask_user: the question shows in the tool card, the message box answers it, the same run continues', async () => {
    const agent = await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'asking_agent', description: 'Asks.', instructions: 'Ask when unsure.', tools: ['ask_user'] });
    expect(agent.status).toBe(201);
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'asking_agent', title: 'Asking' });
    const run = await startRun(t, KEYS.adminA, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which order do you mean?' } }] }, { text: 'Looking at that order now.' }])),
    });
    expect(run.status).toBe(202);
    await page.goto(`${t.url}/console/#/sessions/${sid}`);
    const question = page.locator('.input-request', { hasText: 'Which order do you mean?' });
    await question.waitFor();
    await page.locator('#run-status', { hasText: 'waiting for input' }).waitFor();
    await expect(page.locator('.tool-card[data-status="awaiting input"]').count()).resolves.toBe(1);
    // Opened while the run waits: the call is drawn once (its live card), not also as a history line.
    await expect(page.locator('.tool-card').count()).resolves.toBe(1);
    await expect(page.locator('#messages .tool-line').count()).resolves.toBe(0);
    const composer = page.getByRole('textbox', { name: 'Message' });
    await expect(page.evaluate(() => (globalThis as any).document.activeElement?.id)).resolves.toBe('composer-input');
    await shot('3d-ask-user');
    await composer.fill('O-1001');
    await composer.press('Enter');
    await page.locator('.toast', { hasText: 'Answered the agent' }).waitFor();
    await page.locator('.msg-assistant .bubble', { hasText: 'Looking at that order now.' }).waitFor();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await expect(question.locator('.hint').textContent()).resolves.toBe('Answered.');
    // The same run took the answer as the tool's result: one run in the session.
    const runs = await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sid}/runs`);
    expect(runs.body.data.map((r: any) => r.id)).toEqual([run.body.run_id]);
    const events = await t.call(KEYS.adminA, 'GET', `/v1/runs/${run.body.run_id}/events?limit=200`);
    expect(events.body.data.find((e: any) => e.type === 'tool.completed')?.data.result).toEqual(expect.anything());
    expect(JSON.stringify(events.body.data.find((e: any) => e.type === 'tool.completed')?.data.result)).toContain('O-1001');
  });

  it('audit view (admin): records with filters, the record detail and the chain-verified badge', async () => {
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.locator('#verify-badge', { hasText: /Chain verified · \d+ records/ }).waitFor();
    await page.getByLabel('Action').fill('POST /v1/runs/:id/approvals/:approval_id');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const rows = page.locator('.audit-table tbody tr');
    await rows.first().waitFor();
    await expect(rows.count()).resolves.toBe(1);
    await rows.first().getByRole('button').click();
    const detail = page.locator('#audit-detail');
    await expect(detail.textContent()).resolves.toContain('POST /v1/runs/:id/approvals/:approval_id');
    await expect(detail.locator('pre').textContent()).resolves.toContain('"decision": "approve"');
    await shot('4-audit');
    // Export: the ndjson download (the head is signed first), then the latest signed checkpoint is shown.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const file = await download;
    expect(file.suggestedFilename()).toMatch(/^audit-tenant_a-.+\.ndjson$/);
    const lines = (await streamText(await file.createReadStream())).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ kind: 'header', tenant_id: 'tenant_a' });
    expect(lines[lines.length - 1]).toMatchObject({ kind: 'end' });
    await page.locator('#audit-checkpoint', { hasText: /Signed up to #\d+ · .+ · key [0-9a-f]{16}/ }).waitFor();
  });

  it('webhooks view (admin): creates an endpoint, shows its secret once, lists it with its recent deliveries', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await page.getByLabel('URL').fill(receiver.url);
      await page.getByLabel('Description').fill('console test');
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      const secret = (await page.locator('#webhook-secret-value').textContent()) ?? '';
      expect(secret).toMatch(/^whsec_/);
      receiver.secret = secret;
      await expect(page.locator('.webhooks-table').textContent()).resolves.toContain(receiver.url);
      await shot('5-webhooks');

      const sid = await createSession(t, KEYS.memberA1);
      const run = await startRun(t, KEYS.memberA1, sid, { input: userInput(script([{ text: 'notify me' }])), mode: 'sync' });
      await receiver.waitFor('run.completed', run.body.id);
      // The delivery log of the endpoint (re-read until the outcome is recorded).
      const row = page.locator('.deliveries-table tbody tr', { hasText: 'run.completed' });
      for (let i = 0; i < 40 && !(await row.filter({ hasText: 'delivered' }).count()); i++) {
        await page.getByRole('link', { name: `Deliveries of ${receiver.url}` }).click();
        await page.reload();
        await page.locator('#webhook-deliveries').waitFor();
      }
      await expect(row.first().textContent()).resolves.toContain('HTTP 200');
      // Shown once: a new render has no secret.
      await expect(page.locator('#webhook-secret-value').count()).resolves.toBe(0);
      expect(receiver.invalid).toEqual([]);
      await shot('6-webhook-deliveries');
    } finally {
      await receiver.stop();
    }
  });

  it('secrets view (admin): sets a secret from a password field that is cleared, lists names and versions only, rotates and deletes', async () => {
    const value = 'console-secret-value-8c2e41f7';
    await page.getByRole('link', { name: 'Secrets', exact: true }).click();
    await page.getByRole('heading', { name: 'Secrets', exact: true }).waitFor();
    await expect(page.locator('#secret-value').getAttribute('type')).resolves.toBe('password');
    await page.getByLabel('Name').fill('CONSOLE_TOKEN');
    await page.getByLabel('Value').fill(value);
    await page.getByRole('button', { name: 'Save secret' }).click();
    const row = page.locator('.secrets-table tbody tr', { hasText: 'CONSOLE_TOKEN' });
    await row.waitFor();
    await expect(row.locator('td').nth(1).textContent()).resolves.toBe('1');
    await expect(page.locator('#secret-value').inputValue()).resolves.toBe('');
    await shot('7-secrets');

    // Rotate: the row's button names the secret in the form; the value is typed again.
    await page.getByRole('button', { name: 'Rotate CONSOLE_TOKEN' }).click();
    await expect(page.locator('#secret-name').inputValue()).resolves.toBe('CONSOLE_TOKEN');
    await page.getByLabel('Value').fill(`${value}-2`);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.locator('.secrets-table tbody tr', { hasText: 'CONSOLE_TOKEN' }).locator('td').nth(1).filter({ hasText: '2' }).waitFor();
    await expect(page.locator('#secret-value').inputValue()).resolves.toBe('');
    // The value is nowhere in the page (nor was it ever sent back: the API has no route that returns one).
    await expect(page.content()).resolves.not.toContain(value);
    const api = await t.call(KEYS.adminA, 'GET', '/v1/secrets/CONSOLE_TOKEN');
    expect(api.body).toMatchObject({ name: 'CONSOLE_TOKEN', version: 2 });

    // A malformed name is refused by the form before anything is sent.
    await page.getByLabel('Name').fill('lower');
    await page.getByLabel('Value').fill('x');
    await page.getByRole('button', { name: 'Save secret' }).click();
    await expect(page.evaluate<boolean>("document.getElementById('secret-name').validity.patternMismatch")).resolves.toBe(true);
    await expect(page.locator('.secrets-table tbody tr').count()).resolves.toBe(1);

    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete CONSOLE_TOKEN' }).click();
    await page.locator('.secrets-table tbody tr', { hasText: 'CONSOLE_TOKEN' }).waitFor({ state: 'detached' });
    expect((await t.call(KEYS.adminA, 'GET', '/v1/secrets/CONSOLE_TOKEN')).status).toBe(404);
  });

  it('automations view: creates a cron automation, shows its next run, pauses and resumes it, runs it now and links the last invocation to its session', async () => {
    await page.getByRole('link', { name: 'Automations', exact: true }).click();
    await page.getByRole('heading', { name: 'Automations', exact: true }).waitFor();
    await page.getByLabel('Name').fill('Console digest');
    await page.getByLabel('Cron (minute hour day month weekday)').fill('0 9 * * 1-5');
    await page.getByLabel('Time zone (IANA)').fill('Europe/Berlin');
    await page.locator('#auto-agent').selectOption('assistant');
    await page.getByLabel('Input').fill('Summarise the open tickets.');
    await page.getByRole('button', { name: 'Create automation' }).click();
    const row = page.locator('.automations-table tbody tr', { hasText: 'Console digest' });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('cron 0 9 * * 1-5 (Europe/Berlin)');
    const id = (await row.getAttribute('data-id'))!;
    const api = await t.call(KEYS.adminA, 'GET', `/v1/automations/${id}`);
    expect(api.body).toMatchObject({ status: 'active', schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin' } });
    expect(api.body.next_run_at).not.toBeNull();

    await page.getByRole('button', { name: 'Pause Console digest' }).click();
    await page.getByRole('button', { name: 'Resume Console digest' }).waitFor();
    expect((await t.call(KEYS.adminA, 'GET', `/v1/automations/${id}`)).body.status).toBe('paused');
    await page.getByRole('button', { name: 'Resume Console digest' }).click();
    await page.getByRole('button', { name: 'Pause Console digest' }).waitFor();

    await page.getByRole('button', { name: 'Run Console digest now' }).click();
    // The page shows the invocation once it has started (reload until the link to its run appears).
    for (let i = 0; i < 100; i++) {
      await page.reload();
      await page.locator('.automations-table tbody tr', { hasText: 'Console digest' }).waitFor();
      if ((await page.locator('.automations-table tbody tr', { hasText: 'Console digest' }).locator('a', { hasText: 'run_' }).count()) > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const runLink = page.locator('.automations-table tbody tr', { hasText: 'Console digest' }).locator('a', { hasText: 'run_' });
    await expect(runLink.count()).resolves.toBe(1);
    await shot('8-automations');
    await runLink.click();
    await page.getByText('Summarise the open tickets.').first().waitFor();
  });

  it('members see no audit link', async () => {
    const member = await browser.newPage();
    try {
      await member.goto(`${t.url}/console/`);
      await member.getByLabel('API key').fill(KEYS.memberA1);
      await member.getByRole('button', { name: 'Continue' }).click();
      await member.getByRole('heading', { name: 'Sessions' }).waitFor();
      await expect(member.getByRole('link', { name: 'Audit', exact: true }).isVisible()).resolves.toBe(false);
      await expect(member.getByRole('link', { name: 'Webhooks', exact: true }).isVisible()).resolves.toBe(false);
      await expect(member.getByRole('link', { name: 'Secrets', exact: true }).isVisible()).resolves.toBe(false);
    } finally {
      await member.close();
    }
  });

  it('a page opened while a run waits shows each tool call once (no history line beside its live card) and the run status, not the session status', async () => {
    const sid = await createSession(t, KEYS.adminA, { title: 'Opened while waiting' });
    const run = await startRun(t, KEYS.adminA, sid, { input: userInput('Please help with order O-1001'), mode: 'sync' });
    expect(run.body.status).toBe('waiting_for_approval');
    await page.goto(`${t.url}/console/#/sessions/${sid}`);
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    await page.locator('.tool-card[data-status="completed"]', { hasText: 'get_order' }).waitFor();
    // Each call once, as one card: the history does not draw the waiting run's calls again.
    await expect(page.locator('.tool-card', { hasText: 'get_order' }).count()).resolves.toBe(1);
    await expect(page.locator('.tool-card', { hasText: 'create_ticket' }).count()).resolves.toBe(1);
    await expect(page.locator('#messages .tool-line').count()).resolves.toBe(0);
    await expect(page.locator('.msg-user', { hasText: 'Please help with order O-1001' }).count()).resolves.toBe(1);
    // The run's status where the session's (active) used to be.
    await expect(page.locator('#latest-run-status').textContent()).resolves.toBe('waiting for approval');
    await expect(page.locator('#run-status').textContent()).resolves.toBe('waiting for approval');
    await shot('9a-opened-while-waiting');
    await approve.click();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await page.locator('#latest-run-status', { hasText: 'completed' }).waitFor();
    // Reloaded, the finished run is history: still one card per call, now with its result.
    await page.reload();
    await page.locator('.tool-card[data-status="completed"]', { hasText: 'create_ticket' }).waitFor();
    await expect(page.locator('.tool-card').count()).resolves.toBe(2);
    await expect(page.locator('.tool-card', { hasText: 'get_order' }).textContent()).resolves.toMatch(/→ \{.*O-1001/);
    await expect(page.locator('#latest-run-status').textContent()).resolves.toBe('completed');
    // The sessions list shows what the session is doing, too.
    await page.goto(`${t.url}/console/#/sessions`);
    await expect(page.locator('tr', { hasText: 'Opened while waiting' }).locator('.chip').textContent()).resolves.toBe('idle');
  });

  it('handoffs: the example triage agent hands off to billing; the timeline names both agents, live and from the history', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'triage', title: 'Refund question' });
    await page.goto(`${t.url}/console/#/sessions/${sid}`);
    // A hash route: the previous test's page is still there until this session's renders.
    await page.getByRole('heading', { name: 'Refund question' }).waitFor();
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill(script([{ tool_calls: [{ name: 'transfer_to_billing', arguments: { reason: 'a refund' } }] }, { text: 'Billing here: the refund is on its way.' }]));
    await composer.press('Enter');
    const handoff = page.locator('.timeline-entry[data-kind="handoff"]');
    await handoff.waitFor();
    await expect(handoff.textContent()).resolves.toBe('⇄Handed off from triage to billing · a refund');
    await page.locator('.msg-assistant .bubble', { hasText: 'Billing here' }).waitFor();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await page.locator('#current-agent', { hasText: 'billing v1' }).waitFor();
    // In order: the call's card, then the handoff, then billing's answer.
    const order = await page.locator('#messages > *').evaluateAll((els) => els.map((e) => (e as any).className as string));
    expect(order.indexOf('timeline-entry timeline-handoff')).toBeGreaterThan(order.indexOf('tool-card'));
    expect(order.lastIndexOf('msg msg-assistant')).toBeGreaterThan(order.indexOf('timeline-entry timeline-handoff'));
    await shot('9b-handoff');
    await page.reload();
    await page.locator('.msg-assistant .bubble', { hasText: 'Billing here' }).waitFor();
    await expect(handoff.count()).resolves.toBe(1);
    await expect(handoff.textContent()).resolves.toBe('⇄Handed off from triage to billing · a refund');
    await expect(page.locator('.tool-card', { hasText: 'transfer_to_billing' }).count()).resolves.toBe(1);
  });

  it('subagents: the example researcher fans out 3 subagents; the timeline shows each, the tree lists them and opens each as its own session page', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'research_lead', title: 'Market research' });
    await page.goto(`${t.url}/console/#/sessions/${sid}`);
    // A hash route: the previous test's session page (and its composer) is still there until this one renders.
    await page.getByRole('heading', { name: 'Market research' }).waitFor();
    const spawn = (name: string, ms: number) => ({ name: 'create_subagent', arguments: { name, instructions: script([{ sleep_ms: ms, text: `${name}: done` }]) } });
    const composer = page.getByRole('textbox', { name: 'Message' });
    await composer.fill(script([{ tool_calls: [spawn('prices', 4000), spawn('supply', 4000), spawn('demand', 4000)] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: 'All three reported.' }]));
    await composer.press('Enter');
    const created = page.locator('.timeline-entry[data-kind="subagent.created"]');
    const finished = page.locator('.timeline-entry[data-kind="subagent.completed"]');
    await page.locator('#run-status', { hasText: 'waiting for subagents' }).waitFor();
    await expect(created.allTextContents()).resolves.toEqual(['↳Subagent prices started (research_lead)', '↳Subagent supply started (research_lead)', '↳Subagent demand started (research_lead)']);
    // The tree lists the children while they work.
    const tree = page.locator('#subagent-tree');
    await tree.locator('li', { hasText: 'demand' }).waitFor();
    await shot('9c-subagents-waiting');
    await page.locator('.msg-assistant .bubble', { hasText: 'All three reported.' }).waitFor();
    await page.locator('#run-status', { hasText: 'completed' }).waitFor();
    await expect(finished.count()).resolves.toBe(3);
    await expect(finished.first().locator('.chip').textContent()).resolves.toBe('completed');
    await expect(page.locator('#subagent-tree > li > a').allTextContents()).resolves.toEqual(['prices', 'supply', 'demand']);
    await shot('9d-subagents-done');
    // The history draws the same timeline once.
    await page.reload();
    await page.locator('.msg-assistant .bubble', { hasText: 'All three reported.' }).waitFor();
    await expect(created.count()).resolves.toBe(3);
    await expect(finished.count()).resolves.toBe(3);
    await expect(page.locator('.tool-card', { hasText: 'create_subagent' }).count()).resolves.toBe(3);
    // Each child opens as its own session page, which links back to its parent.
    const children = (await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sid}/subagents`)).body.data;
    await tree.getByRole('link', { name: 'supply' }).click();
    await page.getByRole('heading', { name: 'Subagent supply' }).waitFor();
    expect(decodeURIComponent(new URL(page.url()).hash.split('/')[2])).toBe(children[1].id);
    await page.locator('.msg-assistant .bubble', { hasText: 'supply: done' }).waitFor();
    await expect(page.locator('#latest-run-status').textContent()).resolves.toBe('completed');
    await shot('9e-subagent-page');
    await page.locator('#parent-session').click();
    await page.getByRole('heading', { name: 'Market research' }).waitFor();
  });
});
