// browser-login signs in through a real Chromium, driven by playwright-core:
// it opens START (agentauth's GET /auth/login), fills the provider's login
// form (input[name=username], input[name=password], a submit button),
// waits until the browser lands on LANDING and prints one JSON line:
// {url, body, cookies} (the landing page's text and the cookies of its
// origin). The e2e suite (build tag e2e) runs it against real providers.
//
//   node browser-login.mjs START USER PASSWORD LANDING
import { chromium } from 'playwright-core';

const [start, user, password, landing] = process.argv.slice(2);
if (!landing) {
  console.error('usage: node browser-login.mjs START USER PASSWORD LANDING');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const page = await browser.newPage();
  await page.goto(start);
  await page.fill('input[name=username]', user);
  await page.fill('input[name=password]', password);
  await Promise.all([
    page.waitForURL(landing, { timeout: 30000 }),
    page.click('button[type=submit], input[type=submit]'),
  ]);
  const body = await page.textContent('body');
  const cookies = await page.context().cookies(landing);
  process.stdout.write(JSON.stringify({ url: page.url(), body, cookies }) + '\n');
} finally {
  await browser.close();
}
