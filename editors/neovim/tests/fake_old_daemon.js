// A stand-in daemon that answers initialize with the protocol version in
// $FAKE_PROTOCOL (absent: none at all), for tests/protocol.lua.
let buf = Buffer.alloc(0);
const send = (msg) => {
  const body = Buffer.from(JSON.stringify(msg));
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
};
process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, end).toString())[1]);
    if (buf.length < end + 4 + len) return;
    const msg = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString());
    buf = buf.subarray(end + 4 + len);
    if (msg.method === 'initialize') {
      const agentd = process.env.FAKE_PROTOCOL ? { protocolVersion: Number(process.env.FAKE_PROTOCOL) } : {};
      send({ jsonrpc: '2.0', id: msg.id, result: { capabilities: { experimental: { agentd } }, serverInfo: { name: 'agentd' } } });
    } else if (msg.method === 'shutdown') {
      send({ jsonrpc: '2.0', id: msg.id, result: null });
    } else if (msg.method === 'exit') {
      process.exit(0);
    }
  }
});
