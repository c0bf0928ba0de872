// For each account the Go e2e test names (one per role, by each sign-in
// method of the mode): the navigation shows exactly the role's sections,
// every section renders under the CSP without errors and passes axe-core,
// the sections the role lacks answer a 403 page naming the permission, one
// action per section succeeds, and every action is in the audit log.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, configured, navOf, sectionPath, sectionNeeds, launch, newPage, signIn, navTitles, axe, screenshot, readmeShot, submit } from './lib.mjs';

const skip = !configured && 'run by e2e/console_test.go: go test -tags e2e -run TestConsole ./e2e';
let browser;
// done lists the actions to find in the audit log: {subject, line}.
const done = [];

before(async () => { if (!skip) browser = await launch(); });
after(async () => { await browser?.close(); });

// flash waits for the outcome shown after a form's redirect.
async function flash(page, text) {
  await page.getByRole('status').filter({ hasText: text }).first().waitFor({ timeout: 30000 });
}

async function post(page, subject, formButton, path, outcome) {
  const res = await submit(page, formButton);
  assert.ok(res.status() < 400, `${path}: status ${res.status()}: ${await page.locator('main').innerText()}`);
  if (outcome) await flash(page, outcome);
  done.push({ subject, line: 'POST ' + path });
}

const actions = {
  // keys makes a key of the caller's (its secret shown once on the answer)
  // and revokes it. Not in debug mode: debug principals make no keys.
  async keys(page, subject) {
    await page.goto(env.url + '/console/keys');
    await page.getByLabel('Name').fill('e2e-' + subject);
    await page.getByRole('checkbox', { name: 'me:read' }).check();
    const res = await submit(page, page.getByRole('button', { name: 'Make key' }));
    assert.equal(res.status(), 201, `POST /console/keys: ${await page.locator('main').innerText()}`);
    assert.match(await page.locator('#secret').inputValue(), /^aak_[A-Za-z0-9]+_/);
    done.push({ subject, line: 'POST /console/keys' });
    const row = page.locator('tbody tr', { hasText: 'e2e-' + subject });
    const action = await row.locator('form').getAttribute('action');
    await post(page, subject, row.getByRole('button', { name: /^Revoke/ }), action, 'revoked');
  },
  async admin(page, subject) {
    await page.goto(env.url + '/console/catalog');
    await page.getByLabel('Name').first().fill('gh-srv');
    await page.getByLabel('URL', { exact: true }).fill('https://127.0.0.1/mcp');
    await post(page, subject, page.getByRole('button', { name: 'Register server' }), '/console/catalog/servers', 'server gh-srv registered');
    await page.getByRole('heading', { name: 'Server gh-srv' }).waitFor(); // its set-up page
    await page.goto(env.url + '/console/catalog');
    await page.locator('#tname').fill('gh.read');
    await post(page, subject, page.getByRole('button', { name: 'Register tool' }), '/console/catalog/tools', 'tool gh.read registered');

    await page.goto(env.url + '/console/policies');
    for (const role of ['USER', 'LEAD', 'ADMIN']) {
      await page.getByLabel('Tool pattern').fill('gh.*');
      await page.getByLabel('Role, project id or subject').fill(role);
      await post(page, subject, page.getByRole('button', { name: 'Add rule' }), '/console/policies', 'added');
    }
    await page.getByLabel('Tool pattern').fill('shell.*');
    await page.getByLabel('Effect').selectOption('deny');
    await page.getByLabel('Role, project id or subject').fill('USER');
    await post(page, subject, page.getByRole('button', { name: 'Add rule' }), '/console/policies', 'added');
    const row = page.locator('tbody tr', { hasText: 'shell.*' });
    const action = await row.locator('form').getAttribute('action');
    await post(page, subject, row.getByRole('button', { name: 'Remove' }), action, 'rule removed');
    await page.getByLabel('Role', { exact: true }).selectOption('USER');
    await page.getByLabel('Action, or a whole permission').fill('write');
    await page.getByLabel(/^Resource/).fill('policies');
    await submit(page, page.getByRole('button', { name: 'Ask' }));
    await page.getByRole('status').filter({ hasText: 'deny: role USER lacks policies:write' }).waitFor();
    await page.getByLabel('Role', { exact: true }).selectOption('ADMIN');
    await page.getByLabel('Action, or a whole permission').fill('settings:read');
    await page.getByLabel(/^Resource/).fill('');
    await submit(page, page.getByRole('button', { name: 'Ask' }));
    await page.getByRole('status').filter({ hasText: 'allow: role ADMIN grants settings:read' }).waitFor();

    await page.goto(env.url + '/console/settings');
    await post(page, subject, page.getByRole('button', { name: 'Save settings' }), '/console/settings', 'settings saved');
    await page.goto(env.url + '/console/roles');
    await page.getByRole('cell', { name: 'AUDITOR', exact: true }).waitFor();
  },

  // sessions: create one, an agent, an agent token (shown once), make the
  // session stricter (auto to ask), a tool call there waits for approval
  // (asked through the API with the browser's cookie), approve it, close
  // the session.
  async sessions(page, subject, role) {
    await page.goto(env.url + '/console/sessions');
    await page.getByLabel('Title').fill(`${role} session`);
    await page.getByLabel('Mode').selectOption('auto');
    await post(page, subject, page.getByRole('button', { name: 'Create session' }), '/console/sessions', 'session created');
    const sid = new URL(page.url()).pathname.split('/').pop();
    const base = `/console/sessions/${sid}`;
    await post(page, subject, page.getByRole('button', { name: 'Create agent' }), base + '/agents', 'created');
    const agent = (await page.locator('tbody tr td code').first().innerText()).trim();
    if (await page.locator('select#audience').count() === 0) await page.getByLabel('Tool server').fill('gh-srv');
    await page.getByLabel('Lifetime (empty: the maximum)').fill('5m');
    const res = await submit(page, page.getByRole('button', { name: 'Mint token' }));
    assert.equal(res.status(), 201, await page.locator('main').innerText());
    const token = (await page.locator('.secret').innerText()).trim();
    assert.match(token, /^ey[\w-]+\.[\w-]+\.[\w-]+$/);
    await page.getByText(`Chain`).waitFor();
    done.push({ subject, line: `POST ${base}/tokens` });
    await page.goto(env.url + base);
    assert.equal(await page.locator('.secret').count(), 0, 'the token is shown once only');

    await page.getByLabel('Change mode').selectOption('ask');
    await post(page, subject, page.getByRole('button', { name: 'Set mode' }), base + '/mode', 'mode set to ask');
    const call = await page.context().request.post(`${env.url}/api/v2/sessions/${sid}/tool-calls`, { data: { agent, tool: 'gh.read' } });
    assert.equal(call.status(), 201, await call.text());
    const callId = (await call.json()).id;
    await page.goto(env.url + '/console/approvals');
    const pending = page.locator('section.approval', { hasText: `${role} session` });
    await post(page, subject, pending.getByRole('button', { name: 'Approve' }), `${base}/tool-calls/${callId}/approve`, 'approved');

    await page.goto(env.url + base);
    await post(page, subject, page.getByRole('button', { name: 'Close session' }), base + '/close', 'session closed');
  },

  async lead(page, subject) {
    await page.goto(env.url + '/console/dashboard');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(env.url + '/console/projects');
    await page.getByLabel('Name').fill('apollo');
    await page.getByLabel(/^Members/).fill('someone');
    await post(page, subject, page.getByRole('button', { name: 'Create project' }), '/console/projects', 'project created');
    const path = new URL(page.url()).pathname + '/members';
    await page.getByLabel(/^Members/).fill(`lead:${subject}\nsomeone\nsomeone-else`);
    await post(page, subject, page.getByRole('button', { name: 'Save members' }), path, 'members saved');
    await page.getByRole('cell', { name: 'someone-else' }).waitFor();
  },

  async audit(page) {
    await page.goto(env.url + '/console/audit?decision=deny');
    await page.locator('tbody tr td a').first().click();
    await page.getByRole('heading', { name: /^Audit record \d+$/ }).waitFor();
    await page.goto(env.url + '/console/audit/verify');
    await page.getByRole('status').filter({ hasText: 'Intact' }).waitFor();
    await page.goto(env.url + '/console/audit');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export (NDJSON)' }).click()]);
    const first = (await (await download.createReadStream()).toArray()).join('').split('\n')[0];
    assert.equal(JSON.parse(first).seq, 1, 'the export starts at the first record');
  },
};

for (const account of env.accounts) {
  test(`${account.role} signed in with ${account.signIn}`, { skip }, async () => {
    const page = await newPage(browser);
    await signIn(page, account);
    const subject = (await page.locator('dt:text-is("Subject") + dd').innerText()).trim();
    assert.equal((await page.locator('dt:text-is("Role") + dd').innerText()).trim(), account.role);
    assert.deepEqual(await navTitles(page), navOf[account.role], 'the navigation shows exactly the role\'s sections');

    for (const title of navOf[account.role]) {
      const res = await page.goto(env.url + sectionPath[title]);
      assert.equal(res.status(), 200, title);
      assert.match(res.headers()['content-security-policy'], /^default-src 'none'; style-src 'sha256-[^']+'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$/);
      assert.deepEqual(await axe(page), [], `${title}: axe-core serious or critical violations`);
      await screenshot(page, `${account.role}-${title}`);
      if (account.role === 'ADMIN') { // ADMIN sees every section: each in the dark scheme too
        await page.emulateMedia({ colorScheme: 'dark' });
        assert.deepEqual(await axe(page), [], `${title} (dark): axe-core serious or critical violations`);
        await screenshot(page, `${account.role}-${title}-dark`);
        await page.emulateMedia({ colorScheme: 'light' });
      }
    }
    for (const [title, perm] of Object.entries(sectionNeeds)) {
      if (navOf[account.role].includes(title)) continue;
      const res = await page.goto(env.url + sectionPath[title]);
      assert.equal(res.status(), 403, `${title} as ${account.role}`);
      await page.getByText(`needs the permission ${perm}`).waitFor();
      assert.deepEqual(await axe(page), [], `403 page of ${title}`);
      await screenshot(page, `${account.role}-403-${title}`);
    }

    if (account.role === 'ADMIN') await actions.admin(page, subject);
    if (account.role !== 'AUDITOR') await actions.sessions(page, subject, account.role);
    if (account.role === 'LEAD') await actions.lead(page, subject);
    if (account.role !== 'AUDITOR' && env.mode !== 'debug') await actions.keys(page, subject);
    if (account.role === 'AUDITOR' || account.role === 'ADMIN') await actions.audit(page);
    assert.deepEqual(page.problems, [], 'no console error, failed request or CSP violation');
    await page.goto(env.url + { ADMIN: '/console/policies', USER: '/console/', LEAD: '/console/projects', AUDITOR: '/console/audit' }[account.role]);
    await readmeShot(page, account.role);

    await submit(page, page.getByRole('button', { name: 'Sign out' }));
    await page.getByText('You are signed out.').waitFor();
    const again = await page.goto(env.url + '/console/');
    assert.equal(again.status(), 401, 'signed out: the console asks to sign in again');
    await page.context().close();
  });
}

test('every console action is in the audit log, allowed, under its subject', { skip: skip || !env.accounts.some((a) => a.role === 'ADMIN') }, async () => {
  const page = await newPage(browser);
  await signIn(page, env.accounts.find((a) => a.role === 'ADMIN'));
  for (const subject of new Set(done.map((d) => d.subject))) {
    let rows = [];
    await page.goto(`${env.url}/console/audit?${new URLSearchParams({ subject, decision: 'allow' })}`);
    for (let pages = 0; pages < 20; pages++) {
      rows = rows.concat(await page.locator('tbody tr').allInnerTexts());
      const older = page.getByRole('link', { name: 'Older records' });
      if (await older.count() === 0) break;
      await submit(page, older);
    }
    for (const d of done.filter((x) => x.subject === subject)) {
      assert.ok(rows.some((r) => r.includes(d.line) && r.includes('allow')), `${subject}: no allowed record of ${d.line}`);
    }
  }
  await page.context().close();
});
