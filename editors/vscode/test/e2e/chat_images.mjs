// End-to-end case of pasted images in the chat view (issue 36), called at the end of chat.mjs's
// chatCases with the same helpers. An image is pasted into the chat input inside the webview (a
// ClipboardEvent holding a PNG File, as the browser gives a pasted screenshot); with the suite's
// model (openai:fake, no vision) its chip says why it cannot be sent and sending is refused; with
// a vision profile picked in the header it is sized from its dimensions and reaches the fake
// model as an image_url data URL of the plan request.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';

/** png: a w x h PNG of one colour, written by hand (no image library in the test). */
function png(w, h, rgb) {
  const table = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
  const crc = (buf) => { let c = 0xffffffff; for (const b of buf) c = table[(c ^ b) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const sum = Buffer.alloc(4); sum.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, sum]);
  };
  const ihdr = Buffer.alloc(13); ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2; // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.concat(Array.from({ length: w }, () => Buffer.from(rgb)))]);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(Array.from({ length: h }, () => row)))), chunk('IEND', Buffer.alloc(0))]);
}

export async function imageCases(h) {
  const { page, check, until, assert, palette, fakeURL, results, userDir } = h;
  const chat = () => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  const qpInput = page.locator('.quick-input-widget input');
  const qpTitle = () => page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');
  const notice = async () => ((await chat().locator('#notice:not([hidden])').innerText().catch(() => '')) ?? '');
  const requests = async () => (await (await fetch(`${fakeURL}/_fake/requests`)).json()).map((r) => JSON.stringify(r.body));
  const push = async (...replies) => {
    const r = await fetch(`${fakeURL}/_fake/push`, { method: 'POST', body: JSON.stringify(replies) });
    assert(r.ok, `push to the fake model: ${r.status}`);
  };
  async function say(text) {
    const box = chat().locator('#text');
    await box.click();
    await box.fill(text);
    await box.press('Enter');
  }
  async function pickModel(fill, then) {
    await chat().locator('#model').click();
    await until('the model picker', async () => (await qpTitle()).includes('Model of the next request'), 15000);
    await qpInput.fill(fill);
    await page.keyboard.press('Enter');
    if (!then) return;
    await until('the model input', async () => (await qpTitle()).includes('agentd: Model') && !(await qpTitle()).includes('next request'), 15000);
    await qpInput.fill(then);
    await page.keyboard.press('Enter');
  }

  await check('chat images: a pasted image is a chip with a thumbnail and its tokens; refused for a model without vision, sent as an image to a vision profile', async () => {
    // A vision profile in the user's config (XDG_CONFIG_HOME of the daemon, see run.mjs): the
    // model picker's "Other model" names it; the daemon reads the file when the model is set.
    const cfgFile = path.join(path.dirname(userDir), 'xdg', 'agentd', 'config.json');
    fs.mkdirSync(path.dirname(cfgFile), { recursive: true });
    const cfg = fs.existsSync(cfgFile) ? JSON.parse(fs.readFileSync(cfgFile, 'utf8')) : {};
    cfg.profiles = { ...(cfg.profiles ?? {}), eyes: { provider: 'openai', model: 'fake', baseUrl: `${fakeURL}/v1`, vision: true } };
    fs.writeFileSync(cfgFile, JSON.stringify(cfg, null, 1));

    await palette('agentd Chat: Focus on Chat View');
    await chat().locator('#text').waitFor({ timeout: 60000 });
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('#title').innerText()) === 'New chat' && (await chat().locator('.turn').count()) === 0, 15000);
    await chat().locator('#modePlan').click();
    const b64 = png(600, 100, [200, 30, 30]).toString('base64');
    await chat().locator('#text').evaluate((el, data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
      el.focus();
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, b64);
    const chip = chat().locator('.chip[data-chip^="image:"]');
    await until('the image chip, with its thumbnail', async () => (await chip.count()) === 1 && (await chip.locator('img.cthumb').count()) === 1, 15000);
    assert((await chat().locator('#text').inputValue()) === '', 'the paste put no text in the input');
    // openai:fake has no "vision": true: the chip says why it cannot be sent, in the daemon's words.
    await until('the chip cannot be sent', async () => (await chip.innerText()).includes('cannot be sent'), 15000);
    const why = (await chip.getAttribute('title')) ?? '';
    assert(why.includes('not configured to take images') && why.includes('"vision": true'), `the chip's reason: ${why}`);
    assert((await chip.getAttribute('class')).includes('bad'), 'the chip is marked unsendable');
    const before = (await requests()).length;
    await say('do what the picture says');
    await until('the refusal', async () => (await notice()).includes('Not sent') && (await notice()).includes('pasted image (PNG)'), 15000);
    assert((await requests()).length === before, 'nothing went to the model');

    // A vision profile: the chip is counted from the image's size (600x100: two tiles, 425).
    await pickModel('Other model', 'eyes');
    await until('the vision profile in the header', async () => (await chat().locator('#model').innerText()) === 'eyes', 15000);
    await until('the chip counted, sendable', async () => (await chip.innerText()).includes('425 tokens') && !(await chip.getAttribute('class')).includes('bad'), 15000);
    assert(((await chip.getAttribute('title')) ?? '').length > 0, 'the chip has a title');
    await page.mouse.move(0, 0);
    await page.locator('.part.sidebar').first().screenshot({ path: path.join(results, 'chat-image.png') });
    await push({ text: JSON.stringify({ title: 'Read the picture', steps: [{ id: 'l', tool: 'list_dir', args: { path: '.' } }] }) });
    await say('do what the picture says');
    await until('the plan card', async () => (await chat().locator('.turn[data-turn="0"]').innerText().catch(() => '')).includes('Read the picture'), 60000);
    const sent = (await requests()).slice(before);
    assert(sent.some((b) => b.includes(`data:image/png;base64,${b64}`) && b.includes('"image_url"')), `the plan request carries the image as an image_url data URL (${sent.length} requests)`);
    assert((await chip.count()) === 0, 'the chip went with the message');

    await pickModel('Back to the configured');
    await until('the configured model again', async () => (await chat().locator('#model').innerText()) === 'openai:fake', 15000);
  });
}
