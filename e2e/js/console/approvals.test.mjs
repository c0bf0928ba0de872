// An approver sees what it approves: a tool call that a rule holds for
// approval, asked with arguments (one of them long), is shown on the
// Approvals page with every argument (the long one folded behind its start
// and opened whole), the tool's description, the session, the agent chain,
// who asked and the rule that asked, before the Approve button is clicked;
// the approval then holds for exactly those arguments.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, configured, launch, newPage, signIn, axe, screenshot, submit } from './lib.mjs';

const admin = env.accounts.find((a) => a.role === 'ADMIN');
const skip = (!configured && 'run by e2e/console_test.go: go test -tags e2e -run TestConsole ./e2e') || (!admin && 'no ADMIN account in this mode');
let browser;
before(async () => { if (!skip) browser = await launch(); });
after(async () => { await browser?.close(); });

test('the approver sees the arguments before approving', { skip }, async () => {
  const page = await newPage(browser);
  await signIn(page, admin, '/console/approvals');
  // The API with the browser's own sign-in (its cookie).
  const api = async (method, path, data) => {
    const res = await page.context().request.fetch(env.url + path, { method, data });
    assert.ok(res.status() < 300, `${method} ${path}: ${res.status()} ${await res.text()}`);
    return res.status() === 204 ? null : res.json();
  };
  const tag = Math.random().toString(36).slice(2, 8);
  const server = `appr-${tag}`;
  const tool = `appr${tag}.write`;
  const description = 'Writes content to a file at path, replacing what was there.';
  await api('POST', '/api/v2/servers', { name: server, url: `https://127.0.0.1/${server}` });
  await api('POST', '/api/v2/tools', { name: tool, server, description });
  const me = await api('GET', '/api/v2/me');
  const role = me.roles[0];
  await api('POST', '/api/v2/policies', { effect: 'allow', tool: `appr${tag}.*`, scope: 'role', value: role });
  const rule = (await api('POST', '/api/v2/policies', { effect: 'ask', tool, scope: 'role', value: role })).id;
  const session = await api('POST', '/api/v2/sessions', { title: `approvals ${tag}`, mode: 'auto' });
  const root = await api('POST', `/api/v2/sessions/${session.id}/agents`, {});
  // A name is text its maker chose: the page shows it as text, beside the id.
  const helper = `<img src=x onerror=alert(1)> helper ${tag}`;
  const child = await api('POST', `/api/v2/sessions/${session.id}/agents`, { parent: root.id, name: helper });
  assert.equal(child.name, helper);
  const content = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of the new configuration`).join('\n') + '\nLAST LINE: replicas: 0';
  const args = { path: '/srv/app/config.yaml', env: 'prod', content };
  const call = await api('POST', `/api/v2/sessions/${session.id}/tool-calls`, { agent: child.id, tool, arguments: args });
  assert.equal(call.decision, 'ask', JSON.stringify(call));
  assert.equal(call.rule, rule);

  await page.goto(env.url + '/console/approvals');
  const card = page.locator('section.approval', { has: page.locator(`#call-${call.id}`) });
  await card.waitFor();
  const text = await card.innerText();
  for (const want of [tool, description, `approvals ${tag}`, session.id, root.id, child.id, `${helper} ${child.id}`, me.subject, rule, '/srv/app/config.yaml', 'prod', call.args_sha256]) {
    assert.ok(text.includes(want), `the approval shows ${want}:\n${text}`);
  }
  assert.equal(await card.locator('img').count(), 0, 'the agent\'s name is text, not markup');
  // Each argument is in a row of its own, by name.
  for (const [name, value] of [['path', '/srv/app/config.yaml'], ['env', 'prod']]) {
    const row = card.locator('table.arguments tr', { has: page.locator('th', { hasText: name }) });
    assert.equal((await row.locator('td').innerText()).trim(), value);
  }
  // The long argument is folded, saying so, and opens whole.
  const folded = card.locator('table.arguments tr', { has: page.locator('th', { hasText: 'content' }) });
  await folded.getByText(`${content.length} characters of text; show all`).waitFor();
  assert.equal(await folded.getByText('LAST LINE: replicas: 0').isVisible(), false, 'folded until opened');
  await folded.locator('summary').click();
  await folded.getByText('LAST LINE: replicas: 0').waitFor({ state: 'visible' });
  assert.equal((await folded.locator('pre').innerText()).trim(), content, 'the whole value, not a part');
  assert.deepEqual(await axe(page), []);
  await screenshot(page, 'approvals');

  // Seen: approve.
  const res = await submit(page, card.getByRole('button', { name: /^Approve/ }));
  assert.ok(res.status() < 400);
  await page.getByRole('status').filter({ hasText: `tool call ${call.id} approved` }).waitFor();
  const list = await api('GET', `/api/v2/sessions/${session.id}/tool-calls`);
  const stored = list.tool_calls.find((c) => c.id === call.id);
  assert.equal(stored.status, 'approved');
  assert.deepEqual(stored.arguments, args);
  assert.equal(stored.args_sha256, call.args_sha256);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
