/**
 * For tests: strings drawn from a regex tree (mostly printable ASCII where a set allows it,
 * short repetitions), and random edits of strings, from a seeded generator.
 */
import { type CharSet, intersect, SCALARS } from "./charset.ts";
import type { Regex } from "./regex.ts";

/** A seeded generator of integers below `n`. */
export function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13, s >>>= 0, s ^= s >>> 17, s ^= s << 5, s >>>= 0;
    return s % n;
  };
}

function pick(set: CharSet, r: (n: number) => number): string {
  const printable = intersect(set, [[0x20, 0x7e]]);
  const from = printable.length > 0 && r(10) > 0 ? printable : intersect(set, SCALARS);
  const total = from.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
  let k = r(total);
  for (const [lo, hi] of from) {
    if (k <= hi - lo) return String.fromCodePoint(lo + k);
    k -= hi - lo + 1;
  }
  throw new Error("pick: an empty set");
}

/** A string of `node`'s language (anchors ignored), repetitions at most `extra` past their minimum. */
export function sample(node: Regex, r: (n: number) => number, extra = 3): string {
  switch (node.kind) {
    case "set":
      return pick(node.set, r);
    case "seq":
      return node.items.map((i) => sample(i, r, extra)).join("");
    case "alt":
      return sample(node.alts[r(node.alts.length)]!, r, extra);
    case "repeat": {
      const n = node.min + r(Math.min(node.max, node.min + extra) - node.min + 1);
      let out = "";
      for (let i = 0; i < n; i++) out += sample(node.node, r, extra);
      return out;
    }
    default:
      return "";
  }
}

/** `s` with one random edit: a code point deleted, replaced, inserted or doubled (from `pool`). */
export function mutate(s: string, pool: string, r: (n: number) => number): string {
  const cps = [...s], chars = [...pool];
  const at = r(cps.length + 1), c = chars[r(chars.length)]!;
  switch (r(4)) {
    case 0:
      cps.splice(at, 1);
      break;
    case 1:
      cps.splice(at, 1, c);
      break;
    case 2:
      cps.splice(at, 0, c);
      break;
    default:
      cps.splice(at, 0, cps[at] ?? c);
  }
  return cps.join("");
}
