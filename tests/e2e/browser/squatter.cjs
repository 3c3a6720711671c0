// Drives headless Chromium for tests/e2e/attacks.rs: logs in to the page at LOGIN_URL and
// keeps the tab open; once told "squatted" on stdin (another user now holds the page's
// port), it reports what the open tab did, then opens the address as the person would next
// and lets the squatter's own page run; once told "back" (the daemon holds its port
// again), it reloads the first tab.
const { chromium } = require('playwright-core');
const readline = require('readline');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const told = async (word) => {
  const { value } = await lines.next();
  if (value !== word) throw new Error('expected ' + word + ', was told ' + value);
};

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(process.env.LOGIN_URL);
    await page.waitForURL((u) => u.pathname === '/');
    await page.locator('#hook-post-task').waitFor();
    say({ step: 'logged in' });
    await told('squatted');
    // The open tab's poll meets the squatter.
    await page.locator('#untrusted').waitFor({ timeout: 60000 });
    say({
      step: 'untrusted',
      poll: await page.evaluate(() => window.hooksAppPoll),
      text: await page.locator('#untrusted').textContent(),
    });
    // The person opens the address again: the squatter's page runs on the page's origin.
    const second = await context.newPage();
    await second.goto(new URL('/', process.env.LOGIN_URL).toString());
    await second.waitForFunction(() => document.title.startsWith('loot'), null, { timeout: 60000 });
    say({ step: 'looted', title: await second.title() });
    await second.close();
    await told('back');
    await page.reload();
    await page.locator('#hook-post-task').waitFor({ timeout: 60000 });
    say({ step: 'back' });
  } finally {
    await browser.close();
  }
  process.exit(0);
})().catch((e) => { say({ step: 'failed', error: String(e && e.stack || e) }); process.exit(1); });
