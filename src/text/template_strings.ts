/**
 * Python built-ins that chat templates rely on. Templates are written for jinja2, where
 * `s.strip(chars)`, `s.lstrip(chars)`, `s.rstrip(chars)` and the `trim(chars)` filter are Python's
 * `str.strip` family: `chars` names the characters to remove, and without it "whitespace" is
 * Python's set. `@huggingface/jinja` (0.5) ignores `chars` (Qwen3's `content.lstrip('\n')` and
 * SmolLM3's then also remove spaces) and strips JavaScript's whitespace (U+FEFF but not U+0085 or
 * U+001C..U+001F). The render's interpreter routes those calls here, and `strftime_now` (which
 * transformers defines as Python's `datetime.now().strftime`) to {@linkcode pythonStrftime}.
 */
import { EngineError } from "../contract/errors.ts";

/** The code points Python's `str.isspace()` accepts (all in the BMP). */
const PY_SPACE: ReadonlySet<number> = new Set([
  0x09,
  0x0a,
  0x0b,
  0x0c,
  0x0d,
  0x1c,
  0x1d,
  0x1e,
  0x1f,
  0x20,
  0x85,
  0xa0,
  0x1680,
  ...Array.from({ length: 11 }, (_, i) => 0x2000 + i),
  0x2028,
  0x2029,
  0x202f,
  0x205f,
  0x3000,
]);

/** Which ends to strip: Python's `strip`, `lstrip`, `rstrip`. */
export type StripSide = "both" | "left" | "right";

/**
 * Python's `s.strip(chars)` (`lstrip`, `rstrip` by `side`): `chars` null removes Python's
 * whitespace, a string removes any of its code points (surrogate pairs count as one).
 */
export function pythonStrip(s: string, chars: string | null, side: StripSide): string {
  const set = chars === null ? PY_SPACE : new Set(Array.from(chars, (c) => c.codePointAt(0)!));
  let start = 0;
  let end = s.length;
  if (side !== "right") {
    while (start < end) {
      const c = s.codePointAt(start)!;
      if (!set.has(c)) break;
      start += c > 0xffff ? 2 : 1;
    }
  }
  if (side !== "left") {
    while (end > start) {
      const low = s.charCodeAt(end - 1);
      const pair = end - 2 >= start && low >= 0xdc00 && low <= 0xdfff &&
        s.charCodeAt(end - 2) >= 0xd800 && s.charCodeAt(end - 2) <= 0xdbff;
      const c = pair ? s.codePointAt(end - 2)! : low;
      if (!set.has(c)) break;
      end -= pair ? 2 : 1;
    }
  }
  return s.slice(start, end);
}

/** The methods of a template string that take Python's semantics, and their side. */
export const STRIP_METHODS: ReadonlyMap<string, StripSide> = new Map([
  ["strip", "both"],
  ["lstrip", "left"],
  ["rstrip", "right"],
]);

/** A runtime value of `@huggingface/jinja`, structurally (its classes are not exported). */
export interface RuntimeLike {
  readonly type: string;
  readonly value: unknown;
}

/** The `chars` argument of a strip call: absent or `none` is null, a string is itself. */
export function stripChars(name: string, args: readonly RuntimeLike[]): string | null {
  if (args.length > 1) {
    throw EngineError.invalidArgument(`chat template: ${name}() takes at most one argument`);
  }
  const a = args[0];
  if (a === undefined || a.type === "NullValue" || a.type === "UndefinedValue") return null;
  if (a.type === "StringValue") return a.value as string;
  throw EngineError.invalidArgument(`chat template: ${name}() argument must be a string or none`);
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/**
 * Python's `d.strftime(format)` in the C locale, for the date and time codes (`%a %A %b %B %d %e
 * %H %I %j %m %M %p %S %y %Y %%`, local time); other codes are left as written.
 */
export function pythonStrftime(d: Date, format: string): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  const day = DAYS[d.getDay()]!;
  const month = MONTHS[d.getMonth()]!;
  const yearStart = new Date(d.getFullYear(), 0, 1);
  const dayOfYear = Math.round(
    (Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()) -
      Date.UTC(yearStart.getFullYear(), 0, 1)) / 86_400_000,
  ) + 1;
  const codes: Record<string, string> = {
    a: day.slice(0, 3),
    A: day,
    b: month.slice(0, 3),
    B: month,
    d: pad(d.getDate()),
    e: String(d.getDate()).padStart(2, " "),
    H: pad(d.getHours()),
    I: pad(d.getHours() % 12 || 12),
    j: pad(dayOfYear, 3),
    m: pad(d.getMonth() + 1),
    M: pad(d.getMinutes()),
    p: d.getHours() < 12 ? "AM" : "PM",
    S: pad(d.getSeconds()),
    y: pad(d.getFullYear() % 100),
    Y: String(d.getFullYear()),
    "%": "%",
  };
  return format.replace(/%(.)/g, (all, c: string) => codes[c] ?? all);
}
