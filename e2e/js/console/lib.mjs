// Shared helpers of the console's browser tests: the environment the Go
// e2e test (e2e/console_test.go) sets, Chromium, sign-in, axe-core.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export const env = {
  url: process.env.CONSOLE_URL,
  mode: process.env.CONSOLE_MODE,
  // accounts: [{role, signIn: 'key'|'password'|'provider', key | username+password}]
  accounts: JSON.parse(process.env.CONSOLE_ACCOUNTS || '[]'),
  artifacts: process.env.CONSOLE_ARTIFACTS,
};

export const configured = Boolean(env.url && env.mode && env.artifacts);

// The sections each built-in role sees: those whose permission it holds
// (domain.DefaultGrants), in navigation order.
export const navOf = {
  ADMIN: ['Who am I', 'Sessions', 'Approvals', 'Gateway calls', 'Dashboard', 'Projects', 'Settings', 'Policies', 'Servers & tools', 'Roles', 'API keys', 'Connections', 'Audit log'],
  USER: ['Who am I', 'Sessions', 'Approvals', 'Gateway calls', 'Projects', 'API keys', 'Connections'],
  LEAD: ['Who am I', 'Sessions', 'Approvals', 'Gateway calls', 'Dashboard', 'Projects', 'API keys', 'Connections'],
  AUDITOR: ['Who am I', 'Sessions', 'Gateway calls', 'Projects', 'Policies', 'Servers & tools', 'API keys', 'Connections', 'Audit log'],
};

export const sectionPath = {
  'Who am I': '/console/', Sessions: '/console/sessions', Approvals: '/console/approvals', 'Gateway calls': '/console/gateway', Dashboard: '/console/dashboard',
  Projects: '/console/projects', Settings: '/console/settings', Policies: '/console/policies', 'Servers & tools': '/console/catalog',
  Roles: '/console/roles', 'API keys': '/console/keys', Connections: '/console/connections', 'Audit log': '/console/audit',
};

// The permission a section's URL names on its 403 page.
export const sectionNeeds = {
  Approvals: 'toolcalls:approve', Dashboard: 'dashboard:read', Settings: 'settings:read', Policies: 'policies:read',
  'Servers & tools': 'servers:read', Roles: 'settings:read', 'Audit log': 'audit:read',
};

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

// newPage opens a page that records every console error, failed request
// and CSP violation report (none may happen).
export async function newPage(browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.problems = [];
  page.on('console', (m) => {
    // Chrome reports a document answered 401 or 403 as an error; the tests
    // ask for those on purpose and check their status themselves.
    if (m.type() !== 'error' || (m.text().startsWith('Failed to load resource') && m.location().url === page.url())) return;
    // The provider's own sign-in page (OIDC mode) is not ours to judge.
    if (!m.location().url.startsWith(env.url)) return;
    page.problems.push('console: ' + m.text() + ' at ' + m.location().url);
  });
  page.on('pageerror', (e) => page.problems.push('page error: ' + e.message));
  page.on('requestfailed', (r) => {
    // A download the test does not wait for is aborted on purpose.
    if (!r.url().includes('/api/v2/audit/export')) page.problems.push('request failed: ' + r.url() + ' ' + r.failure()?.errorText);
  });
  return page;
}

// signIn signs account in from the sign-in page (the body of the 401 of
// the console's URL), by its method, and waits for the console.
export async function signIn(page, account, returnTo = '/console/') {
  const res = await page.goto(env.url + returnTo);
  if (res.status() !== 401) throw new Error(`anonymous ${returnTo}: status ${res.status()}, want 401`);
  switch (account.signIn) {
    case 'key':
      await page.getByLabel('Key').fill(account.key);
      await page.getByRole('button', { name: 'Sign in' }).last().click();
      break;
    case 'password':
      await page.getByLabel('Username').fill(account.username);
      await page.getByLabel('Password').fill(account.password);
      await page.getByRole('button', { name: 'Sign in' }).first().click();
      break;
    case 'provider':
      await page.getByRole('link', { name: /^Sign in with/ }).click();
      await page.locator('#username').fill(account.username);
      await page.locator('#password').fill(account.password);
      await page.locator('#kc-login').click();
      break;
    default:
      throw new Error('unknown sign-in ' + account.signIn);
  }
  await page.waitForURL(env.url + returnTo, { timeout: 30000 });
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}

export async function navTitles(page) {
  return page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allInnerTexts();
}

// axe runs axe-core in the page (through the DevTools protocol, which the
// page's CSP does not govern) and returns the serious and critical
// violations.
export async function axe(page) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

export async function screenshot(page, name) {
  const dir = path.join(env.artifacts, env.mode);
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, name.replace(/[^a-zA-Z0-9_-]+/g, '-') + '.png'), fullPage: true });
}

// readmeShot keeps the top of a page at a README's size (the README's
// screenshots in docs/img are these, compressed with pngquant).
export async function readmeShot(page, name) {
  const dir = path.join(env.artifacts, env.mode);
  fs.mkdirSync(dir, { recursive: true });
  await page.setViewportSize({ width: 1100, height: 640 });
  await page.screenshot({ path: path.join(dir, 'readme-' + name + '.png') });
  await page.setViewportSize({ width: 1280, height: 720 });
}

// submit clicks a form's button and waits for the page the redirect
// lands on (POST-redirect-GET).
export async function submit(page, button) {
  const [res] = await Promise.all([page.waitForNavigation(), button.click()]);
  return res;
}
