// Loads every page of the built book (argument: target/book/html) in
// headless Chromium at 1280 px and 390 px and fails, naming page and width,
// on any request that leaves 127.0.0.1, any failed request or image, any
// KaTeX error or unrendered `$`, any console error, any element wider than
// the viewport that is not inside a scroll container, and any link inside
// the book to a page or an `#anchor` that does not exist. Links that leave
// the book are listed, not fetched (the book reads offline).
//
// Run by `cargo xtask test`, which installs playwright-core (no browser
// download) and finds Debian's Chromium (`apt-get install chromium`).
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'target/book/html');
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const widths = [1280, 390];

const types = {
  '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf', '.csv': 'text/csv', '.txt': 'text/plain',
};
const server = http.createServer((req, res) => {
  let p = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
  if (p === '/favicon.ico') {
    // Chromium asks for it on pages without an icon link (toc.html); no book page links it.
    res.writeHead(204);
    res.end();
    return;
  }
  if (p.endsWith('/')) p += 'index.html';
  const file = path.join(root, p);
  if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const pages = fs.readdirSync(root).filter((f) => f.endsWith('.html')).sort();
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

const problems = [];
const ids = new Map(); // page → the ids an `#anchor` can name
const links = []; // [page, href] of every link, checked once all ids are known
for (const width of widths) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  for (const name of pages) {
    const page = await context.newPage();
    const where = `${name} at ${width} px`;
    const report = (what) => problems.push(`${where}: ${what}`);
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (!['data:', 'blob:', 'about:'].includes(url.protocol) && url.hostname !== '127.0.0.1') {
        report(`request leaves 127.0.0.1: ${r.url()}`);
      }
    });
    page.on('requestfailed', (r) => report(`request failed: ${r.url()} (${r.failure()?.errorText})`));
    page.on('response', (r) => {
      if (r.status() >= 400) report(`HTTP ${r.status()} for ${r.url()}`);
    });
    page.on('console', (m) => { if (m.type() === 'error') report(`console error: ${m.text()}`); });
    page.on('pageerror', (e) => report(`page error: ${e.message}`));
    await page.goto(`${base}/${name}`, { waitUntil: 'load' });
    await page.waitForLoadState('networkidle');
    const found = await page.evaluate(() => {
      const out = [];
      for (const img of document.querySelectorAll('img')) {
        if (!img.complete || img.naturalWidth === 0) out.push(`image did not load: ${img.getAttribute('src')}`);
      }
      const errors = document.querySelectorAll('.katex-error');
      if (errors.length) out.push(`${errors.length} KaTeX errors, first: ${errors[0].textContent.slice(0, 60)}`);
      // Screen readers read the MathML KaTeX writes beside its HTML.
      const silent = [...document.querySelectorAll('.katex')].filter((k) => !k.querySelector('.katex-mathml math'));
      if (silent.length) out.push(`${silent.length} equations without MathML, first: "${silent[0].textContent.slice(0, 60)}"`);
      const content = document.querySelector('main') ?? document.body;
      const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.textContent.includes('$') && !n.parentElement.closest('pre, code, script, style, .katex')) {
          out.push(`unrendered math: "${n.textContent.trim().slice(0, 60)}"`);
        }
      }
      const limit = document.documentElement.clientWidth + 1;
      const scrolls = (el) => ['auto', 'scroll', 'hidden'].includes(getComputedStyle(el).overflowX);
      for (const el of content.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.right <= limit) continue;
        let a = el;
        while (a && a !== content && !(scrolls(a) && a.getBoundingClientRect().right <= limit)) a = a.parentElement;
        if (!a || a === content) {
          const what = `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
          out.push(`wider than the viewport (${Math.round(r.right)} px), outside a scroll container: ${what} "${el.textContent.trim().slice(0, 40)}"`);
          break;
        }
      }
      return out;
    });
    found.forEach(report);
    if (width === widths[0]) {
      const { pageIds, hrefs } = await page.evaluate(() => ({
        pageIds: [...document.querySelectorAll('[id], a[name]')].map((e) => e.id || e.name),
        hrefs: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
      }));
      ids.set(name, new Set(pageIds));
      hrefs.forEach((href) => links.push([name, href]));
    }
    // Printing opens every collapsed solution and answer (theme/print-answers.js).
    const closed = await page.evaluate(() => {
      window.dispatchEvent(new Event('beforeprint'));
      return document.querySelectorAll('details:not([open])').length;
    });
    if (closed) report(`${closed} solutions or answers stay closed when printing`);
    await page.close();
  }
  await context.close();
}
await browser.close();
server.close();

// Every link inside the book must reach a page and, with `#anchor`, an
// element of that page with that id; links that leave it are listed.
const outside = new Set();
for (const [from, href] of links) {
  const url = new URL(href, `${base}/${from}`);
  if (url.origin !== base) {
    if (['http:', 'https:'].includes(url.protocol)) outside.add(url.href);
    continue;
  }
  let target = decodeURIComponent(url.pathname).replace(/^\//, '');
  if (target === '' || target.endsWith('/')) target += 'index.html';
  if (!fs.existsSync(path.join(root, target))) {
    problems.push(`${from}: link to a missing page: ${href}`);
  } else if (url.hash && target.endsWith('.html')) {
    const anchor = decodeURIComponent(url.hash.slice(1));
    if (!ids.get(target)?.has(anchor)) problems.push(`${from}: link to a missing anchor: ${href}`);
  }
}

if (problems.length) {
  console.error(problems.join('\n'));
  console.error(`\n${problems.length} problems on ${pages.length} pages`);
  process.exit(1);
}
console.log(`links leaving the book (listed, not fetched): ${outside.size}`);
for (const href of [...outside].sort()) console.log(`  ${href}`);
console.log(`browser check: ${pages.length} pages at ${widths.join(' px and ')} px, ${links.length} links, no problems`);
