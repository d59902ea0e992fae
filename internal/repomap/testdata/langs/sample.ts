export interface Options { depth: number }
export type Mode = "a" | "b";
export class Walker {
  walk(dir: string): void {}
}
export function makeWalker(): Walker { return new Walker(); }
export const helper = (x: number) => x + 1;
enum Color { Red }
