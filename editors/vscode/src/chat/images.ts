// Pasted images as context chips of the chat view (issue 36): the webview (media/chat-images.js)
// posts an image pasted into the chat input; it becomes a chip whose item is the image itself
// ({image: {mimeType, data}}, docs/protocol.md "Context"). Its size in tokens, and why it cannot
// be sent (the model in force takes no images: the daemon says how to configure vision), are the
// daemon's answer to agentd/context/size, as every chip's are; a chip that cannot be sent blocks
// sending. No `vscode` import: the unit tests run it under Node.
import type { Chip } from './model';

/** What the webview posts for a pasted image: its type, its bytes in base64, a small thumbnail
 *  (a data URL the webview drew) and the file's name, if the clipboard gave one. */
export interface PasteImage { type: 'pasteImage'; mimeType: string; data: string; thumb?: string; name?: string }

/** imageChip: the chip of a pasted image. The same image pasted twice is one chip (its key is a
 *  hash of its bytes). */
export function imageChip(m: PasteImage): Chip {
  const kind = (m.mimeType.replace(/^image\//, '') || 'image').toUpperCase();
  // Browsers name a pasted screenshot "image.png": that says nothing, the type says as much.
  const named = m.name && !/^image\.\w+$/i.test(m.name) ? m.name : undefined;
  const thumb = m.thumb && /^data:image\/(png|jpeg|gif|webp);base64,/.test(m.thumb) ? m.thumb : undefined;
  return { key: `image:${hash(m.data)}`, label: named ?? `pasted image (${kind})`, item: { image: { mimeType: m.mimeType, data: m.data } }, thumb };
}

/** hash: FNV-1a of s, in hex, with its length (keys, not security). */
function hash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193); }
  return `${(h >>> 0).toString(16)}-${s.length}`;
}
