// A node:test reporter that ends the run with "N passed, N failed".
export default async function* summary(source) {
  let passed = 0;
  let failed = 0;
  for await (const ev of source) {
    if (ev.data?.nesting !== 0 || ev.data?.details?.type === "suite") continue;
    if (ev.type === "test:pass" && !ev.data.skip && !ev.data.todo) passed++;
    if (ev.type === "test:fail") failed++;
  }
  yield `${passed} passed, ${failed} failed\n`;
}
