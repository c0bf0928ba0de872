// connect drives a person through the console's Connections page in a real
// Chromium (playwright-core): it signs in at START (agentauth's GET
// /auth/login, whose identity provider shows a plain form:
// input[name=username], input[name=password], a submit button), lands on
// the Connections page, and then, for ACTION connect, clicks Connect for
// SERVER (signing in at the authorization server again when it asks) until
// the page says it is connected; for ACTION disconnect, clicks Disconnect
// for SERVER until the page says the connection was removed. It prints one
// JSON line: {url, body} (the final page's text).
//
//   node connect.mjs START USER PASSWORD ACTION SERVER
import { chromium } from 'playwright-core';

const [start, user, password, action, server] = process.argv.slice(2);
if (!server || !['connect', 'disconnect'].includes(action)) {
  console.error('usage: node connect.mjs START USER PASSWORD connect|disconnect SERVER');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});

async function signIn(page) {
  await page.fill('input[name=username]', user);
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForNavigation({ timeout: 30000 }), page.click('button[type=submit], input[type=submit]')]);
}

try {
  const page = await browser.newPage();
  await page.goto(start);
  await signIn(page);
  await page.waitForURL(/\/console\/connections/, { timeout: 30000 });
  if (action === 'connect') {
    const row = page.getByRole('row').filter({ hasText: server });
    await Promise.all([page.waitForNavigation({ timeout: 30000 }), row.getByRole('link', { name: /^Connect/ }).click()]);
    // The authorization server may ask the person to sign in there too.
    if (await page.locator('input[name=username]').count() > 0) {
      await signIn(page);
    }
    await page.waitForURL(/\/console\/connections\?connected=/, { timeout: 30000 });
    await page.getByText('Connected to ' + server).waitFor({ timeout: 10000 });
  } else {
    await Promise.all([page.waitForNavigation({ timeout: 30000 }), page.getByRole('button', { name: 'Disconnect ' + server }).click()]);
    await page.getByText('removed').first().waitFor({ timeout: 10000 });
  }
  const body = await page.textContent('body');
  process.stdout.write(JSON.stringify({ url: page.url(), body }) + '\n');
} finally {
  await browser.close();
}
