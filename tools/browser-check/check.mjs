// Loads every page of the built book (argument: target/book/html) in
// headless Chromium at 1280 px and 390 px and fails, naming page and width,
// on any request that leaves 127.0.0.1, any failed request or image, any
// KaTeX error or unrendered `$`, any console error, any element wider than
// the viewport that is not inside a scroll container, any display formula
// wider than its box without the shadows that show it scrolls, and any link inside
// the book to a page or an `#anchor` that does not exist. Links that leave
// the book are listed, not fetched (the book reads offline).
//
// Quizzes: on each page, one question is answered wrong with the mouse and
// one right with the keyboard (theme/quiz.js), and the marking is checked.
// With a second argument (target/book/student), every page of the student
// edition is loaded too: it must have no solution or answer, and its text
// must equal the full edition's with those blocks taken out.
//
// Widgets: each interactive figure (theme/widgets.js) is driven through its
// controls to every case of wasm/golden/widgets.json (the crate's results,
// computed natively), and the numbers the page shows, computed by the
// WebAssembly build, must equal the case's; with the module blocked, the
// widget must show no numbers at all.
//
// Run by `cargo xtask test`, which installs playwright-core (no browser
// download) and finds Debian's Chromium (`apt-get install chromium`).
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'target/book/html');
const studentRoot = process.argv[3] ? path.resolve(process.argv[3]) : null;
const golden = process.env.WIDGETS_GOLDEN ? JSON.parse(fs.readFileSync(process.env.WIDGETS_GOLDEN, 'utf8')).cases : null;
const widgetsBuilt = fs.existsSync(path.join(root, 'widgets/attn-wasm.js'));
const widgetOf = { query_among_keys: 'query', saturation: 'saturation', masked_weights: 'mask', rope_score: 'rope', lm_write: 'writer', vit_read: 'digit', gpu_reference: 'gpu' };
let widgetCases = 0; // golden cases checked in the page
const weights = []; // each widget page's weight and time to ready
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const widths = [1280, 390];

const types = {
  '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf', '.csv': 'text/csv', '.txt': 'text/plain',
};
// The full edition at /, the student edition at /student/.
const server = http.createServer((req, res) => {
  let p = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
  let dir = root;
  if (studentRoot && p.startsWith('/student/')) {
    dir = studentRoot;
    p = p.slice('/student'.length);
  }
  if (p === '/favicon.ico') {
    // Chromium asks for it on pages without an icon link (toc.html); no book page links it.
    res.writeHead(204);
    res.end();
    return;
  }
  if (p.endsWith('/')) p += 'index.html';
  const file = path.join(dir, p);
  if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
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
  // WebGPU on SwiftShader, a GPU in software, for chapter 21's widget.
  args: ['--no-sandbox', '--disable-gpu', '--enable-unsafe-webgpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

const problems = [];
const texts = new Map(); // page → its text without solutions and answers
let quizPages = 0; // pages whose quizzes were answered

// The page's text (whitespace squeezed) without its solution and answer
// blocks: what the student edition must show, character for character.
function answerlessText() {
  const main = (document.querySelector('main') ?? document.body).cloneNode(true);
  for (const s of main.querySelectorAll('summary')) {
    if (['Answer', 'Solution'].includes(s.textContent.trim())) s.parentElement.remove();
  }
  for (const s of main.querySelectorAll('.quiz-status')) s.remove();
  for (const w of main.querySelectorAll('.attn-widget')) w.replaceChildren(); // drawn when its module loads
  return main.textContent.replace(/\s+/g, ' ').trim();
}

// Every widget on the page computes with the WebAssembly module what the
// crate computes natively (the golden cases), shows it, and shows nothing
// without the module.
async function widgetProblems(page, name) {
  const names = await page.evaluate(() => [...document.querySelectorAll('.attn-widget[data-widget]')].map((w) => w.dataset.widget));
  if (!names.length) return [];
  if (!widgetsBuilt) {
    return process.env.CI ? ['widgets/attn-wasm.js was not built (cargo xtask widgets)'] : [];
  }
  const out = [];
  for (const widget of names) {
    const root = page.locator(`.attn-widget[data-widget="${widget}"]`);
    try {
      await root.and(page.locator('[data-ready]')).waitFor({ timeout: 10000 });
    } catch {
      out.push(`widget ${widget} never became ready`);
      continue;
    }
    const cases = (golden ?? []).filter((c) => widgetOf[c.export] === widget);
    if (!cases.length) out.push(`widget ${widget} has no golden cases in wasm/golden/widgets.json`);
    for (const c of cases) {
      const where = `widget ${widget} at ${JSON.stringify(c.controls)}`;
      for (const missing of await setControls(root, c.controls)) out.push(`${where}: ${missing}`);
      if (widget === 'gpu' && !(await ranWith(page, c.controls))) {
        out.push(`${where}: the kernel never ran (${await root.locator('[data-readout="adapter"]').textContent()})`);
        continue;
      }
      if (widget === 'writer') {
        // Writing is asked for with a button, and takes a moment.
        const before = await root.getAttribute('data-written');
        await root.locator('[data-action="write"]').click();
        await page.waitForFunction(([r, b]) => {
          const w = document.querySelector(r).dataset.written;
          return w && w !== b;
        }, ['.attn-widget[data-widget="writer"]', before], { timeout: 60000 });
      }
      let shown = JSON.parse((await root.getAttribute('data-out')) ?? 'null');
      widgetCases += 1;
      if (widget === 'writer' && c.status === 0) {
        if (shown?.text !== c.text) {
          out.push(`${where}: wrote ${JSON.stringify(shown?.text)}, the crate ${JSON.stringify(c.text)}`);
          continue;
        }
        shown = shown.out;
      }
      if (c.status !== 0) {
        const error = await root.locator('.attn-widget-error').textContent();
        if (shown !== c.out || error !== c.out) out.push(`${where}: shows "${error}", the crate says "${c.out}"`);
        continue;
      }
      const far = (a, b) => Math.abs(a - b) > 1e-5 * Math.max(1, Math.abs(b));
      if (!Array.isArray(shown) || shown.length !== c.out.length || shown.some((v, i) => far(v, c.out[i]))) {
        out.push(`${where}: computed ${JSON.stringify(shown)?.slice(0, 120)}, the crate ${JSON.stringify(c.out).slice(0, 120)}`);
        continue;
      }
      // What the reader sees: the numbers in the widget's text and drawing.
      const seen = await visible(root, widget);
      const wanted = expectedVisible(widget, c);
      const wrong = seen.findIndex((v, i) => !near(v, wanted[i]));
      if (seen.length !== wanted.length || wrong >= 0) {
        out.push(`${where}: the page shows ${JSON.stringify(seen).slice(0, 200)}, the crate's numbers would show ${JSON.stringify(wanted).slice(0, 200)}`);
      }
    }
  }
  // With every number the module returns moved by 0.37, every number the
  // reader sees must move: none may come from the script's own arithmetic.
  const poisoned = await page.context().newPage();
  await poisoned.addInitScript(poison);
  await poisoned.goto(`${base}/${name}`, { waitUntil: 'load' });
  for (const widget of names.filter((w) => w !== 'writer')) {
    const c = (golden ?? []).find((g) => widgetOf[g.export] === widget && g.status === 0);
    const root = poisoned.locator(`.attn-widget[data-widget="${widget}"]`);
    try {
      await root.and(poisoned.locator('[data-ready]')).waitFor({ timeout: 10000 });
    } catch {
      out.push(`widget ${widget}, module poisoned: never ready`);
      continue;
    }
    for (const missing of await setControls(root, c.controls)) out.push(`widget ${widget}, module poisoned: ${missing}`);
    if (widget === 'gpu') await ranWith(poisoned, c.controls);
    const seen = await visible(root, widget);
    const wanted = expectedVisible(widget, c);
    // Chapter 21's widget shows how far the GPU's numbers, computed from
    // the module's (poisoned) inputs, are from the module's (poisoned)
    // results: no longer near 0, though not by 0.37 exactly.
    const still = widget === 'gpu' ? 1e-3 : 0.3;
    const kept = seen.filter((v, i) => typeof wanted[i] === 'number' && typeof v === 'number' && Math.abs(v - wanted[i]) < still);
    if (!seen.length || kept.length) {
      out.push(`widget ${widget}, module poisoned: ${kept.length} of ${seen.length} numbers shown did not move (${kept.slice(0, 5).join(', ')}): the page computes them itself`);
    }
  }
  await poisoned.close();
  // At phone width in a dark theme: the widgets draw, with no error, and
  // what the page weighs and how long its widgets take to be ready.
  const dark = await browser.newContext({ viewport: { width: 390, height: 900 } });
  await dark.addInitScript(() => localStorage.setItem('mdbook-theme', 'coal'));
  const phone = await dark.newPage();
  // Each response's size, awaited before they are added up: read as they
  // arrive, bodies still in transit went uncounted, and the weight varied.
  const sizes = [];
  phone.on('response', (r) => sizes.push(r.body().then((b) => b.length, () => 0)));
  phone.on('console', (m) => { if (m.type() === 'error') out.push(`coal theme at 390 px: console error: ${m.text()}`); });
  phone.on('pageerror', (e) => out.push(`coal theme at 390 px: page error: ${e.message}`));
  const started = Date.now();
  await phone.goto(`${base}/${name}`, { waitUntil: 'load' });
  try {
    await phone.waitForFunction((n) => document.querySelectorAll('.attn-widget[data-ready]').length === n, names.length, { timeout: 10000 });
  } catch {
    out.push('coal theme at 390 px: the widgets never became ready');
  }
  const ready = Date.now() - started;
  const themed = await phone.evaluate(() => document.documentElement.classList.contains('coal'));
  if (!themed) out.push('coal theme at 390 px: the page did not take the theme');
  await phone.waitForLoadState('networkidle'); // every byte counted
  const bytes = (await Promise.all(sizes)).reduce((sum, n) => sum + n, 0);
  weights.push(`${name}: ${(bytes / 1e6).toFixed(2)} MB, widgets ready in ${ready} ms`);
  await dark.close();

  // Without WebGPU, chapter 21's widget says so and shows no numbers.
  if (names.includes('gpu')) {
    const plain = await page.context().newPage();
    await plain.addInitScript(() => { delete Navigator.prototype.gpu; });
    await plain.goto(`${base}/${name}`, { waitUntil: 'load' });
    const root = plain.locator('.attn-widget[data-widget="gpu"]');
    try {
      await root.and(plain.locator('[data-ready]')).waitFor({ timeout: 10000 });
      const said = await root.textContent();
      if (!said.includes('no WebGPU') || (await root.getAttribute('data-out'))) {
        out.push(`widget gpu without WebGPU: shows "${said.slice(0, 80)}"`);
      }
    } catch {
      out.push('widget gpu without WebGPU: never ready');
    }
    await plain.close();
  }

  // Without the module, no numbers: the page cannot compute them itself.
  const blocked = await page.context().newPage();
  await blocked.route('**/widgets/attn-wasm.js', (route) => route.abort());
  await blocked.goto(`${base}/${name}`, { waitUntil: 'load' });
  await blocked.waitForTimeout(300);
  const orphans = await blocked.evaluate(() => [...document.querySelectorAll('.attn-widget')]
    .filter((w) => w.dataset.out || !w.classList.contains('attn-widget-missing')).map((w) => w.dataset.widget));
  if (orphans.length) out.push(`widgets ${orphans.join(', ')} show numbers, or no notice, without the WebAssembly module`);
  await blocked.close();
  return out;
}

// Sets a widget's controls as a reader would (value, then the input and
// change events) to a golden case's `controls`; returns the controls it
// could not set so.
async function setControls(root, controls) {
  const missing = [];
  for (const [input, value] of Object.entries(controls)) {
    const found = await root.locator(`[data-input="${input}"]`).evaluate((el, v) => {
      el.value = String(v);
      el.dispatchEvent(new Event('input'));
      el.dispatchEvent(new Event('change'));
      return el.value === String(v) || Number(el.value) === Number(v);
    }, value).catch(() => false);
    if (!found) missing.push(`no control ${input} that takes ${value}`);
  }
  return missing;
}

// Whether chapter 21's widget finished a run with `controls` (its
// data-ran): the GPU answers asynchronously, and a run started while the
// controls were being set may finish first.
async function ranWith(page, controls) {
  return page.waitForFunction((c) => {
    const ran = JSON.parse(document.querySelector('.attn-widget[data-widget="gpu"]').dataset.ran ?? 'null');
    return ran !== null && Object.keys(c).every((k) => Number(ran[k]) === Number(c[k]));
  }, controls, { timeout: 30000 }).then(() => true, () => false);
}

// Run in a page before its scripts: every export that returns numbers
// returns them plus 0.37 (the widgets' poisoned module).
function poison() {
  const instantiate = WebAssembly.instantiate;
  const getters = ['out_ptr', 'out_len', 'error_ptr', 'error_len', 'text_ptr', 'text_len', 'bytes_buffer'];
  WebAssembly.instantiate = async (...args) => {
    const result = await instantiate.apply(WebAssembly, args);
    const x = result.instance.exports;
    const exports = {};
    for (const [name, f] of Object.entries(x)) {
      exports[name] = typeof f !== 'function' || getters.includes(name) ? f : (...a) => {
        const status = f(...a);
        if (status === 0) {
          const out = new Float64Array(x.memory.buffer, x.out_ptr(), x.out_len());
          for (let i = 0; i < out.length; i += 1) out[i] += 0.37;
        }
        return status;
      };
    }
    return { module: result.module, instance: { exports } };
  };
}

// The numbers (or "×" for a masked entry, or text) a widget shows, read
// from its text and its drawing, in a fixed order per widget.
async function visible(root, widget) {
  return root.evaluate((r, w) => {
    const number = (s) => Number((s.match(/-?\d+(\.\d+)?(e-?\d+)?/g) ?? ['NaN']).pop());
    const attr = (sel, a) => Number(r.querySelector(sel).getAttribute(a));
    if (w === 'query') {
      const cells = [...r.querySelectorAll('td')].map((td) => td.textContent);
      const [x, y] = cells[4].replace(/[()]/g, '').split(',').map(Number);
      return cells.slice(0, 4).map(number).concat([x, y]);
    }
    if (w === 'saturation') {
      const bars = [...r.querySelectorAll('rect.attn-bar')].map((b) => Number(b.getAttribute('height')) / 100);
      const largest = number(r.querySelector('[data-readout="largest"]').textContent);
      const norm = number(r.querySelector('[data-readout="jacobian"]').textContent);
      return bars.concat([largest, norm]);
    }
    if (w === 'mask') {
      return [...r.querySelectorAll('text.attn-on-cell')].map((e) => (e.textContent === '×' ? '×' : Number(e.textContent)));
    }
    if (w === 'rope') {
      const score = number(r.querySelector('[data-readout="score"]').textContent);
      const offset = number(r.querySelector('[data-readout="offset"]').textContent);
      return [score, offset, attr('circle.attn-query', 'cx')];
    }
    if (w === 'digit') {
      const probabilities = [...Array(10).keys()].map((k) => number(r.querySelector(`[data-readout="p${k}"]`).textContent));
      const weights = [...r.querySelectorAll('rect.attn-digit-weight')].map((c) => Number(c.getAttribute('data-w')));
      return probabilities.concat(weights);
    }
    if (w === 'gpu') {
      return ['o-diff', 'lse-diff'].map((k) => number(r.querySelector(`[data-readout="${k}"]`).textContent));
    }
    if (w === 'writer') {
      const chars = [...r.querySelectorAll('.attn-char')].map((c) => Number(c.style.getPropertyValue('--w')));
      return [r.querySelector('.attn-widget-text').textContent].concat(chars);
    }
    return [];
  }, widget);
}

// What a widget must show for golden case `c`, in the order `visible` reads.
function expectedVisible(widget, c) {
  const o = c.out;
  if (widget === 'query') return o.slice(0, 4).concat([o[4], o[5]]);
  if (widget === 'saturation') return o.slice(0, 8).concat([o[17], o[16]]);
  if (widget === 'mask') {
    const [n, m] = o;
    return Array.from({ length: n * m }, (_, i) => (o[2 + i] === 1 ? o[2 + n * m + i] : '×'));
  }
  if (widget === 'rope') return [o[0], o[1], 20 + (o[1] + 63) * 300 / 126];
  if (widget === 'digit') return o;
  if (widget === 'gpu') return [0, 0]; // the GPU's largest differences from the crate
  if (widget === 'writer') {
    const t = Math.min(c.text.length, 64); // the chosen head (1.1) from the newest character
    return [c.text].concat(o.slice(0, t));
  }
  return [];
}

// A shown number against the crate's: as close as its rounding allows.
function near(shown, wanted) {
  if (typeof wanted !== 'number' || typeof shown !== 'number') return shown === wanted;
  return Math.abs(shown - wanted) <= 0.0051 + 1e-5 * Math.abs(wanted);
}

// Every quiz question answers back: its options are buttons; the first
// question is answered wrong with a click, the second (or the first again)
// right with the keyboard. The right letter is read here from the answer's
// text, not from the script.
async function quizProblems(page) {
  const quizzes = await page.evaluate(() => [...document.querySelectorAll('details')]
    .filter((d) => d.querySelector('summary')?.textContent.trim() === 'Answer')
    .map((d) => ({
      ready: d.previousElementSibling?.previousElementSibling?.dataset.quiz === 'ready',
      right: d.querySelector('p')?.textContent.match(/^\s*\(([a-z])\)/)?.[1] ?? null,
    })));
  const out = [];
  quizzes.forEach((q, i) => {
    if (!q.ready) out.push(`quiz question ${i + 1} does not answer back (options are not buttons)`);
    if (!q.right) out.push(`quiz question ${i + 1}: its answer does not start with "(letter)"`);
  });
  if (!quizzes.length || out.length) return out;
  quizPages += 1;
  const answer = async (index, choose, how) => {
    const details = page.locator('details:has(> summary:text-is("Answer"))').nth(index);
    const list = page.locator('ul[data-quiz="ready"]').nth(index);
    const letters = await list.locator('> li').evaluateAll((lis) => lis.map((li) => li.textContent.match(/^\s*\(([a-z])\)/)?.[1]));
    const pick = letters.findIndex(choose);
    const button = list.locator('> li > button.quiz-option').nth(pick);
    if (how === 'keyboard') {
      await button.focus();
      await page.keyboard.press('Enter');
    } else {
      await button.click();
    }
    return {
      letter: letters[pick],
      marked: await button.getAttribute('class'),
      mark: await button.locator('.quiz-mark').textContent(),
      status: await list.evaluate((ul) => {
        const s = ul.nextElementSibling;
        return s.getAttribute('role') === 'status' ? s.textContent : 'no role=status line after the options';
      }),
      open: await details.evaluate((d) => d.open),
    };
  };
  const wrong = await answer(0, (l) => l && l !== quizzes[0].right, 'mouse');
  if (!wrong.marked.includes('quiz-wrong') || wrong.marked.includes('quiz-right') || !wrong.mark.includes('not')
      || !wrong.status.includes(`(${wrong.letter}) is not right`) || wrong.open) {
    out.push(`quiz question 1 answered (${wrong.letter}), a wrong option: marked "${wrong.marked}", "${wrong.mark}", "${wrong.status}", explanation open: ${wrong.open}`);
  }
  const second = Math.min(1, quizzes.length - 1);
  const right = await answer(second, (l) => l === quizzes[second].right, 'keyboard');
  if (!right.marked.includes('quiz-right') || right.marked.includes('quiz-wrong') || !right.mark.includes('right')
      || !right.status.includes(`(${right.letter}) is right`) || !right.open) {
    out.push(`quiz question ${second + 1} answered (${right.letter}), the right option, with the keyboard: marked "${right.marked}", "${right.mark}", "${right.status}", explanation open: ${right.open}`);
  }
  return out;
}
// Pages are checked two at a time: most of a page's time is spent waiting
// on Chromium, and two pages keep the machine's cores busier than one.
const pagesAtOnce = 2;
async function eachPage(names, check) {
  let next = 0;
  const worker = async () => {
    while (next < names.length) await check(names[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(pagesAtOnce, names.length) }, worker));
}
const ids = new Map(); // page → the ids an `#anchor` can name
const links = []; // [page, href] of every link, checked once all ids are known
for (const width of widths) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  await eachPage(pages, async (name) => {
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
    // Images hold the load event back; fonts (KaTeX's) do not. Waiting for
    // both, rather than for the network to be idle half a second, saves
    // that half second on each of the pages' loads.
    await page.evaluate(() => document.fonts.ready.then(() => true));
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
      // A display formula wider than its box scrolls in it, and shows that
      // it does: the edge shadows of theme/math.css.
      for (const d of content.querySelectorAll('.katex-display')) {
        if (d.scrollWidth <= d.clientWidth + 1) continue;
        const style = getComputedStyle(d);
        const cued = ['auto', 'scroll'].includes(style.overflowX)
          && (style.backgroundImage.match(/gradient/g) ?? []).length >= 4
          && style.backgroundAttachment.includes('local') && style.backgroundAttachment.includes('scroll');
        if (!cued) {
          out.push(`a formula ${d.scrollWidth} px wide in a ${d.clientWidth} px box without a sign that it scrolls: "${d.textContent.trim().slice(0, 40)}"`);
          break;
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
    if (width === widths[0]) {
      texts.set(name, await page.evaluate(answerlessText));
      // print.html prints itself on load, which opens every answer.
      if (name !== 'print.html') (await quizProblems(page)).forEach(report);
      if (name !== 'print.html') (await widgetProblems(page, name)).forEach(report);
    }
    // Printing opens every collapsed solution and answer (theme/print-answers.js).
    const closed = await page.evaluate(() => {
      window.dispatchEvent(new Event('beforeprint'));
      return document.querySelectorAll('details:not([open])').length;
    });
    if (closed) report(`${closed} solutions or answers stay closed when printing`);
    await page.close();
  });
  await context.close();
}

// The student edition: same pages, no answers, the same text otherwise.
if (studentRoot) {
  const context = await browser.newContext({ viewport: { width: widths[0], height: 900 } });
  const studentPages = fs.readdirSync(studentRoot).filter((f) => f.endsWith('.html')).sort();
  if (studentPages.join() !== pages.join()) problems.push('the student edition has other pages than the full one');
  await eachPage(studentPages, async (name) => {
    const page = await context.newPage();
    const report = (what) => problems.push(`student edition, ${name}: ${what}`);
    page.on('console', (m) => { if (m.type() === 'error') report(`console error: ${m.text()}`); });
    page.on('pageerror', (e) => report(`page error: ${e.message}`));
    page.on('requestfailed', (r) => report(`request failed: ${r.url()}`));
    await page.goto(`${base}/student/${name}`, { waitUntil: 'load' });
    const answers = await page.evaluate(() => [...document.querySelectorAll('summary')]
      .filter((s) => ['Answer', 'Solution'].includes(s.textContent.trim())).length);
    if (answers) report(`${answers} solutions or answers left`);
    const text = await page.evaluate(answerlessText);
    const full = texts.get(name) ?? '';
    if (text !== full) {
      let i = 0;
      while (i < text.length && text[i] === full[i]) i += 1;
      report(`text differs from the full edition's without answers at character ${i}: "${text.slice(i, i + 60)}" where it has "${full.slice(i, i + 60)}"`);
    }
    await page.close();
  });
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

// A check that drove nothing has checked nothing.
if (quizPages === 0) problems.push('no quiz was answered on any page');
if (golden && widgetsBuilt && widgetCases === 0) problems.push('no widget case was checked');
if (problems.length) {
  console.error(problems.join('\n'));
  console.error(`\n${problems.length} problems on ${pages.length} pages`);
  process.exit(1);
}
console.log(`widget pages at 390 px, coal theme, from this machine's server (chapter 16's weights load on Write: ${
  fs.existsSync(path.join(root, 'widgets/ch16-weights.js')) ? (fs.statSync(path.join(root, 'widgets/ch16-weights.js')).size / 1e6).toFixed(2) : '?'} MB more):`);
for (const w of weights.sort()) console.log(`  ${w}`);
console.log(`links leaving the book (listed, not fetched): ${outside.size}`);
for (const href of [...outside].sort()) console.log(`  ${href}`);
console.log(`browser check: ${pages.length} pages at ${widths.join(' px and ')} px, ${links.length} links, quizzes answered on ${quizPages} pages, ${widgetCases} widget cases equal to the crate's${studentRoot ? ', the student edition without answers' : ''}: no problems`);
