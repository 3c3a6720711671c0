// Drives the hooks-app page in headless Chromium for tests/e2e/browser.rs. Reads
// LOGIN_URL, SCREENSHOT (1280 px wide), SCREENSHOT_PHONE (390 px), RUN_SESSION from the
// environment; prints one line per step as
// JSON, and "ready" when the test should queue a follow-up.
const { chromium } = require('playwright-core');
const readline = require('readline');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    // The login page keeps the session in this origin's storage and goes on to the page.
    await page.goto(process.env.LOGIN_URL);
    await page.waitForURL((u) => u.pathname === '/');
    const row = page.locator('#hook-post-task');
    say({ step: 'logged in', url: new URL(page.url()).pathname, chip: (await row.locator('[data-status]').innerText()).trim() });

    // The toggle: the button says what it would do next.
    await Promise.all([page.waitForNavigation(), row.locator('button[name=toggle]').click()]);
    say({ step: 'toggled', button: (await page.locator('#hook-post-task button[name=toggle]').innerText()).trim() });

    // An invalid delay: the error shows next to its field.
    const details = page.locator('#hook-post-task + tr details');
    await details.locator('summary').click();
    await details.locator('input[name=delaySeconds]').fill('soon');
    // Refused, the form's answer is shown in place (no navigation).
    await details.locator('button[type=submit]').click();
    const err = page.locator('.err[data-field=delaySeconds]');
    await err.waitFor();
    say({ step: 'invalid delay', error: (await err.innerText()).trim(), visible: await err.isVisible() });

    // Back to the page, enabled again; then a run appears without a reload by hand.
    await page.goto(new URL('/', process.env.LOGIN_URL).toString());
    await Promise.all([page.waitForNavigation(), page.locator('#hook-post-task button[name=toggle]').click()]);
    say({ step: 'ready' });
    const rl = readline.createInterface({ input: process.stdin });
    await new Promise((resolve) => rl.once('line', resolve));
    await page.locator('#runs', { hasText: process.env.RUN_SESSION }).waitFor({ timeout: 30000 });
    const runRow = page.locator('#runs tr', { hasText: process.env.RUN_SESSION });
    const started = runRow.locator('time');
    // The follow-up's reply opens in place, in the row under its run.
    const replyRow = runRow.locator('xpath=following-sibling::tr[1]');
    await replyRow.locator('details.reply summary').click();
    const reply = (await replyRow.locator('details.reply pre').innerText()).trim();
    say({ step: 'run shown', row: (await runRow.innerText()).replace(/\s+/g, ' ').trim(),
      chip: (await page.locator('#hook-post-task [data-status]').innerText()).trim(),
      started: (await started.innerText()).trim(), startedTitle: await started.getAttribute('title'),
      sessionHref: await runRow.locator('a[data-session]').getAttribute('href'), reply });

    // On a phone nothing scrolls sideways.
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    // The phone's own chart, drawn near its size.
    const phoneChart = { height: (await page.locator('#chart-phone').boundingBox())?.height ?? 0,
      wideShown: await page.locator('#chart').isVisible() };
    await page.screenshot({ path: process.env.SCREENSHOT_PHONE, fullPage: true });

    // The session link opens its lookup, in sentences.
    await Promise.all([page.waitForNavigation(), runRow.locator('a[data-session]').click()]);
    const lookup = (await page.locator('#session').innerText()).replace(/\s+/g, ' ').trim();
    say({ step: 'lookup', widths, lookup, phoneChart });

    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(new URL('/', process.env.LOGIN_URL).toString());
    await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
    // Wide, an opened reply takes the table's width, and the page ends where its content does.
    await page.locator('#runs details.reply summary').first().click();
    const replyWidth = (await page.locator('#runs details.reply pre').first().boundingBox()).width;
    const [scrollHeight, contentBottom] = await page.evaluate(() => {
      const last = [...document.body.children].filter((e) => getComputedStyle(e).position !== 'absolute' && e.getBoundingClientRect().height > 0).pop();
      return [document.documentElement.scrollHeight, last.getBoundingClientRect().bottom + window.scrollY];
    });
    say({ step: 'wide', chartShown: [await page.locator('#chart').isVisible(), await page.locator('#chart-phone').isVisible()], replyWidth, tableWidth: (await page.locator('#runs').boundingBox()).width, scrollHeight, contentBottom });

    // The kill switch: pause, see it said, resume.
    await Promise.all([page.waitForNavigation(), page.locator('button[name=pause]').click()]);
    const banner = (await page.locator('.paused').innerText()).trim();
    const resume = (await page.locator('button[name=pause]').innerText()).trim();
    say({ step: 'paused', banner, resume });
    await Promise.all([page.waitForNavigation(), page.locator('button[name=pause]').click()]);
    say({ step: 'resumed', banners: await page.locator('.paused').count(),
      button: (await page.locator('button[name=pause]').innerText()).trim() });
    say({ step: 'done' });
  } finally {
    await browser.close();
  }
})().catch((e) => { say({ step: 'failed', error: String(e && e.stack || e) }); process.exit(1); });
