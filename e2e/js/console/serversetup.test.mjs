// A server set up for the MCP gateway from the console alone, then used:
// an ADMIN registers the sample notes server with its endpoint and its
// credential's name, compares its tools/list with the registry (nothing
// registered yet), imports the three tools, and writes a rule for each on
// the server's page (allow notes.read, deny notes.delete, ask for
// notes.write). An agent on the official MCP TypeScript SDK then sees
// notes.read and notes.write, reads, is refused a delete, and its write
// waits until the ADMIN approves it on the Approvals page, arguments in
// view. Run in API-key mode, where e2e/console_test.go starts the notes
// server (CONSOLE_MCP_ENDPOINT) behind its credential (CONSOLE_MCP_CREDENTIAL).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, configured, launch, newPage, signIn, axe, screenshot, submit } from './lib.mjs';

const admin = env.accounts.find((a) => a.role === 'ADMIN');
const endpoint = process.env.CONSOLE_MCP_ENDPOINT;
const credential = process.env.CONSOLE_MCP_CREDENTIAL;
const skip = (!configured && 'run by e2e/console_test.go: go test -tags e2e -run TestConsole ./e2e') ||
  (!endpoint && 'no MCP server in this mode (API-key mode has one)') || (!admin && 'no ADMIN account in this mode');
let browser;
before(async () => { if (!skip) browser = await launch(); });
after(async () => { await browser?.close(); });

const flash = (page, text) => page.getByRole('status').filter({ hasText: text }).first().waitFor({ timeout: 10000 });

test('an ADMIN sets a server up in the console, and an agent uses it', { skip }, async () => {
  const page = await newPage(browser);
  await signIn(page, admin, '/console/catalog');
  const me = await (await page.context().request.get(env.url + '/api/v2/me')).json();
  const role = me.roles[0];

  // Register: the endpoint and the credential's name; the URL is left to
  // be the gateway's resource.
  await page.getByLabel('Name').first().fill('notes');
  await page.getByLabel('MCP endpoint (for the gateway)', { exact: true }).fill(endpoint);
  await page.getByLabel('Credential file', { exact: true }).fill(credential);
  await submit(page, page.getByRole('button', { name: 'Register server' }));
  await flash(page, 'server notes registered');
  await page.getByRole('heading', { name: 'Server notes' }).waitFor();
  const gateway = (await page.locator('dt:has-text("Agents connect to") + dd').innerText()).trim();
  assert.equal(gateway, env.url + '/mcp/notes');
  assert.equal((await page.locator('dt:has-text("Agent tokens name") + dd').innerText()).trim(), gateway);

  // The diff first, registering nothing; then the import.
  await submit(page, page.getByRole('button', { name: "Compare with the server's tools" }));
  const diff = page.locator('table.diff');
  for (const [tool, ro] of [['notes.delete', 'no'], ['notes.read', 'yes'], ['notes.write', 'no']]) {
    const row = diff.locator('tr', { has: page.locator('code', { hasText: tool }) });
    assert.deepEqual((await row.locator('td').allInnerTexts()).slice(0, 3).map((s) => s.trim()), [tool, ro, 'registers it (new)']);
  }
  assert.match(await page.locator('main').innerText(), /No tools registered on notes/);
  assert.deepEqual(await axe(page), []);
  await screenshot(page, 'server-diff');
  await submit(page, page.getByRole('button', { name: 'Register the 3 new tools' }));
  await flash(page, 'imported notes.delete, notes.read, notes.write');

  // A rule for each tool, from the server's page.
  for (const [effect, tool] of [['allow', 'notes.read'], ['deny', 'notes.delete'], ['ask', 'notes.write']]) {
    await page.getByLabel('Effect').selectOption(effect);
    await page.getByLabel('Tool', { exact: true }).selectOption(tool);
    await page.getByLabel('Role, project id or subject').fill(role);
    await submit(page, page.getByRole('button', { name: 'Add rule' }));
    await flash(page, `${effect} ${tool} for role ${role}`);
    assert.equal(new URL(page.url()).pathname, '/console/catalog/servers/notes', 'back on the server page');
  }
  const rules = page.locator('table', { has: page.locator('caption', { hasText: 'Rules that match tools of notes' }) });
  for (const [effect, tool] of [['allow', 'notes.read'], ['deny', 'notes.delete'], ['ask', 'notes.write']]) {
    const row = rules.locator('tr', { has: page.locator('code', { hasText: tool }) });
    assert.deepEqual((await row.locator('td').allInnerTexts()).slice(0, 4).map((s) => s.trim()), [effect, tool, tool, `role ${role}`]);
  }
  assert.deepEqual(await axe(page), []);
  await screenshot(page, 'server-set-up');

  // An agent of a session of the ADMIN's, through the gateway.
  const api = async (method, path, data) => {
    const res = await page.context().request.fetch(env.url + path, { method, data });
    assert.ok(res.status() < 300, `${method} ${path}: ${res.status()} ${await res.text()}`);
    return res.json();
  };
  const session = await api('POST', '/api/v2/sessions', { title: 'notes from the console', mode: 'auto' });
  const agent = await api('POST', `/api/v2/sessions/${session.id}/agents`, {});
  const token = (await api('POST', `/api/v2/sessions/${session.id}/agents/${agent.id}/token`, { audience: 'notes' })).access_token;
  const client = new Client({ name: 'console-e2e-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['notes.read', 'notes.write']);
  const read = await client.callTool({ name: 'notes.read', arguments: { name: 'welcome' } });
  assert.match(read.content[0].text, /^Hello from the notes server/);
  await assert.rejects(client.callTool({ name: 'notes.delete', arguments: { name: 'welcome' } }), (e) => e.code === -32001);
  const write = client.callTool({ name: 'notes.write', arguments: { name: 'from-console', text: 'approved in the browser' } }, undefined, { timeout: 120000 });

  // The write waits for the ADMIN, who approves it seeing its arguments.
  let card;
  for (const deadline = Date.now() + 60000; ;) {
    await page.goto(env.url + '/console/approvals');
    card = page.locator('section.approval', { hasText: 'notes from the console' });
    if (await card.count() > 0) break;
    assert.ok(Date.now() < deadline, 'the held write did not reach the Approvals page within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const text = await card.innerText();
  for (const want of ['notes.write', 'from-console', 'approved in the browser', agent.id]) assert.ok(text.includes(want), `the approval shows ${want}:\n${text}`);
  await submit(page, card.getByRole('button', { name: /^Approve/ }));
  await flash(page, 'approved');
  assert.equal((await write).content[0].text, 'note "from-console" written');
  await client.close();

  await page.goto(env.url + '/console/gateway');
  const calls = await page.locator('main table').innerText();
  for (const want of ['notes.read', 'notes.delete', 'notes.write']) assert.ok(calls.includes(want), `Gateway calls lists ${want}`);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
