// What holds for anyone: an anonymous request to any console URL gets the
// sign-in page as the body of a 401 (JSON for API clients), offering the
// mode's sign-in methods; a failed sign-in says why in plain words; a
// cross-origin form post (same site, so SameSite=Lax sends the cookie) is
// refused by the Origin / Sec-Fetch-Site rule and changes nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { env, configured, sectionPath, launch, newPage, signIn, axe, screenshot, readmeShot, submit } from './lib.mjs';

const skip = !configured && 'run by e2e/console_test.go: go test -tags e2e -run TestConsole ./e2e';
let browser;
before(async () => { if (!skip) browser = await launch(); });
after(async () => { await browser?.close(); });

test('anonymous requests to console URLs get the sign-in page as a 401', { skip }, async () => {
  const page = await newPage(browser);
  for (const path of ['/', ...Object.values(sectionPath), '/console/sessions/ses_x', '/console/audit/1', '/console/nowhere']) {
    const res = await page.goto(env.url + path);
    assert.equal(res.status(), 401, path);
    assert.match(res.headers()['www-authenticate'], /^Bearer/);
    assert.match(res.headers()['content-security-policy'], /frame-ancestors 'none'/);
    await page.getByRole('heading', { name: 'Sign in to agentauth' }).waitFor();
  }
  const oidc = env.mode === 'oidc';
  assert.equal(await page.getByLabel('Key').count(), oidc ? 0 : 1, 'the API-key form is offered outside OIDC mode');
  assert.equal(await page.getByRole('link', { name: /^Sign in with/ }).count(), oidc ? 1 : 0, 'the provider is offered in OIDC mode');
  assert.equal(await page.getByLabel('Password').count(), oidc ? 1 : 0, 'the password form is offered in OIDC mode');
  assert.equal(await page.locator('script').count(), 0);
  assert.deepEqual(await axe(page), []);
  await screenshot(page, 'sign-in');
  await readmeShot(page, 'sign-in');
  assert.deepEqual(page.problems, []);
  await page.context().close();

  const api = await fetch(env.url + '/api/v2/me', { headers: { Accept: 'application/json' } });
  assert.equal(api.status, 401);
  assert.equal((await api.json()).error.code, 'unauthenticated', 'API clients keep JSON');
});

test('a failed sign-in says why on the same page', { skip }, async () => {
  const page = await newPage(browser);
  await page.goto(env.url + '/console/');
  let res;
  if (env.mode === 'oidc') {
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill('not-bobs-password');
    res = await submit(page, page.getByRole('button', { name: 'Sign in' }).first());
    await page.getByRole('alert').filter({ hasText: 'The username or password is not right' }).waitFor();
  } else {
    await page.getByLabel('Key').fill('not-a-key-of-this-service');
    res = await submit(page, page.getByRole('button', { name: 'Sign in' }));
    await page.getByRole('alert').filter({ hasText: 'This key is not valid here' }).waitFor();
  }
  assert.equal(res.status(), 401);
  assert.deepEqual(await axe(page), []);
  await screenshot(page, 'sign-in-failed');
  await page.context().close();
});

// A page of another origin on the same site (another port of 127.0.0.1):
// SameSite=Lax sends the cookie with its form posts, so only the origin
// rule stands between it and the console.
function attacker(target) {
  const server = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><html lang="en"><title>x</title><form method="post" action="${target}/console/sessions">
<input name="title" value="csrf-attempt"><button>go</button></form>
<form method="post" action="${target}/auth/key"><input name="key" value="debug-admin"><button>login</button></form></html>`);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a cross-origin form post is refused and changes nothing', { skip: skip || env.accounts.length === 0 }, async () => {
  const server = await attacker(env.url);
  try {
    const page = await newPage(browser);
    await signIn(page, env.accounts[0]);
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    let res = await submit(page, page.getByRole('button', { name: 'go' }));
    assert.equal(res.status(), 403);
    assert.match(await page.locator('main').innerText(), /cross-site request refused \(Sec-Fetch-Site: same-site\)/);
    await screenshot(page, 'csrf-refused');
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    res = await submit(page, page.getByRole('button', { name: 'login' }));
    assert.equal(res.status(), 403, 'a cross-origin sign-in (login CSRF) is refused too');
    await page.goto(env.url + '/console/sessions');
    assert.equal(await page.getByText('csrf-attempt').count(), 0, 'the refused post created nothing');
    await page.context().close();
  } finally {
    server.close();
  }
});
