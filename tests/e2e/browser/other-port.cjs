// Drives headless Chromium for tests/e2e/security.rs: logs in to the page at LOGIN_URL,
// then opens OTHER_URL, a page of another server on the same host (another port), and
// prints what that page can see of the login: what the browser sent it is recorded by the
// test's own server; what its script can read of this host's storage is printed here.
const { chromium } = require('playwright-core');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(process.env.LOGIN_URL);
    await page.waitForURL((u) => u.pathname === '/');
    await page.locator('#hook-post-task').waitFor();
    say({ step: 'logged in' });
    await page.goto(process.env.OTHER_URL);
    const seen = await page.evaluate(async () => {
      const stored = Object.keys(localStorage).map((k) => k + '=' + localStorage.getItem(k));
      return { stored, cookies: document.cookie };
    });
    say({ step: 'other port', ...seen });
    // The page is still logged in where it was.
    await page.goto(new URL('/', process.env.LOGIN_URL).toString());
    await page.locator('#hook-post-task').waitFor();
    say({ step: 'done' });
  } finally {
    await browser.close();
  }
})().catch((e) => { say({ step: 'failed', error: String(e && e.stack || e) }); process.exit(1); });
