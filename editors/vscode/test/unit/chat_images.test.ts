// Pasted images as chips (src/chat/images.ts): a pasted image is a chip whose item is the image,
// one chip per image, with its thumbnail; the daemon's "takes no images" makes it unsendable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imageChip } from '../../src/chat/images';
import { ChatModel, chipView } from '../../src/chat/model';

const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==';

test('a pasted image is a chip carrying the image, one per image, with its thumbnail', () => {
  const c = imageChip({ type: 'pasteImage', mimeType: 'image/png', data: png, thumb: 'data:image/png;base64,AAAA', name: 'image.png' });
  assert.deepEqual(c.item, { image: { mimeType: 'image/png', data: png } });
  assert.equal(c.label, 'pasted image (PNG)');
  assert.equal(chipView(c).thumb, 'data:image/png;base64,AAAA');
  assert.equal(imageChip({ type: 'pasteImage', mimeType: 'image/jpeg', data: 'abc', name: 'shot.jpg' }).label, 'shot.jpg');
  // A thumbnail that is not an image data URL is not drawn.
  assert.equal(imageChip({ type: 'pasteImage', mimeType: 'image/png', data: png, thumb: 'javascript:alert(1)' }).thumb, undefined);
  const m = new ChatModel();
  assert.ok(m.addChip(c));
  assert.ok(!m.addChip(imageChip({ type: 'pasteImage', mimeType: 'image/png', data: png })), 'the same image twice is one chip');
  assert.ok(m.addChip(imageChip({ type: 'pasteImage', mimeType: 'image/png', data: png + 'A' })));
});

test('an image the model cannot take: the chip says why and cannot be sent', () => {
  const m = new ChatModel();
  const c = imageChip({ type: 'pasteImage', mimeType: 'image/png', data: png });
  m.addChip(c);
  const why = 'the model openai:fake is not configured to take images; if it is a vision model, ...';
  m.sized(m.sending(), { items: [{ title: 'image (PNG 1x1)', tokens: 255, error: why }], total: 255 });
  const v = chipView(m.sending()[0]);
  assert.equal(v.bad, true);
  assert.equal(v.size, 'cannot be sent');
  assert.ok(v.title.startsWith(why));
  m.sized(m.sending(), { items: [{ title: 'image (PNG 1x1)', tokens: 255 }], total: 255 });
  assert.equal(chipView(m.sending()[0]).size, '255 tokens');
});
