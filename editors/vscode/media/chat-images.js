// Pasted images (issue 36): an image pasted into the chat input (the paste event's clipboard
// files) is posted to the extension ({type: 'pasteImage', mimeType, data, thumb, name}), which
// makes it a context chip sized by the daemon (src/chat/images.ts). The thumbnail is drawn here,
// small, so the view state never carries the whole image. Loaded after chat.js, whose post it
// uses (window.agentdChat).
(function () {
  const text = document.getElementById('text');
  const post = (m) => window.agentdChat.post(m);
  const read = (file) => new Promise((res, rej) => {
    const r = new FileReader();
    r.onload = () => res(String(r.result));
    r.onerror = () => rej(r.error);
    r.readAsDataURL(file);
  });
  // thumbnail: the image drawn at most 40 pixels high and 80 wide, as a PNG data URL ('' when the
  // webview cannot draw this type).
  const thumbnail = (url) => new Promise((res) => {
    const img = new Image();
    img.onload = () => {
      const k = Math.min(1, 40 / img.naturalHeight, 80 / img.naturalWidth);
      const c = document.createElement('canvas');
      c.width = Math.max(1, Math.round(img.naturalWidth * k));
      c.height = Math.max(1, Math.round(img.naturalHeight * k));
      c.getContext('2d').drawImage(img, 0, 0, c.width, c.height);
      res(c.toDataURL('image/png'));
    };
    img.onerror = () => res('');
    img.src = url;
  });
  text.addEventListener('paste', (e) => {
    const files = Array.from((e.clipboardData && e.clipboardData.files) || []).filter((f) => f.type.startsWith('image/'));
    if (!files.length) return; // text pastes as text
    e.preventDefault();
    for (const f of files) {
      read(f).then(async (url) => {
        const data = url.slice(url.indexOf(',') + 1);
        post({ type: 'pasteImage', mimeType: f.type, data, thumb: await thumbnail(url), name: f.name || undefined });
      }, () => undefined);
    }
  });
})();
