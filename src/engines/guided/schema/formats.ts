/**
 * JSON Schema 2020-12's `format` values as exact regular languages, each written here as an
 * ECMA-262 pattern (whole-string, no anchors) from its RFC's grammar and compiled like any
 * pattern. Where the RFC's language is not regular, or too large to enforce, the language is a
 * documented subset of it (every string it allows is valid):
 *
 * - `date` (RFC 3339 full-date): months 01-12, days within each month, February 29 in leap
 *   years only (years divisible by 4 but not 100, or by 400; the year is four digits).
 * - `time` (RFC 3339 full-time): `T`-less `HH:MM:SS[.frac]` and `Z`/`z` or `±HH:MM`; second
 *   60 only as `23:59:60` with a zero offset (`Z`, `+00:00`, `-00:00`), the one leap second a
 *   string alone shows to be at the end of a UTC day.
 * - `date-time`: `date`, `T` or `t`, `time`.
 * - `duration` (RFC 3339 Appendix A, upper case): `P1Y2M3D`, `PT4H5M6S`, `P2W`...; a unit may
 *   be left out only as that grammar allows (`PT1H1S` is not in it).
 * - `hostname` (RFC 1123): labels of letters, digits and hyphens, not starting or ending with a
 *   hyphen; subset: 1-4 labels of 1-63 characters (a fourth of at most 61), or 5-8 labels of
 *   1-30, so the whole is at most 253 characters (no trailing dot).
 * - `email` (RFC 5321 Mailbox, subset): a dot-atom local part (`atext` runs joined by single
 *   dots) `@` a hostname of at least two labels (as above); no quoted local parts, no address
 *   literals.
 * - `ipv4` (dotted decimal, no leading zeros), `ipv6` (RFC 4291 text forms, hex either case,
 *   an embedded IPv4 tail, no zone), `uuid` (8-4-4-4-12 hex digits, either case, no `urn:`).
 * - `uri`, `uri-reference` (RFC 3986 `URI`, `URI-reference`; ASCII only); subset: a `uri`'s
 *   hier-part is not empty (`a:` and `a:?q` are RFC 3986 URIs that ajv-formats refuses).
 * - `json-pointer` (RFC 6901), `relative-json-pointer` (a non-negative integer then `#` or a
 *   JSON Pointer; subset: without 2020-12's index manipulation, `1+2/a`).
 *
 * Refused by name: `idn-email`, `idn-hostname`, `iri`, `iri-reference` (Unicode rules Kiln does
 * not write), `uri-template`, `regex` (ECMA-262's syntax nests: not a regular language), and any
 * other name.
 */
import { parseRegex, PatternRefusal, type Regex } from "./regex.ts";

const D = "[0-9]";
const HEX = "[0-9A-Fa-f]";

const DATE = (() => {
  const day31 = "(?:0[1-9]|[12][0-9]|3[01])", day30 = "(?:0[1-9]|[12][0-9]|30)";
  const days = `(?:(?:0[13578]|1[02])-${day31}|(?:0[469]|11)-${day30}|02-(?:0[1-9]|1[0-9]|2[0-8]))`;
  // Leap years: a multiple of 4 that is not a century, or a century that is a multiple of 400.
  const leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
  return `(?:${D}{4}-${days}|${leap}-02-29)`;
})();

const TIME = (() => {
  const hms = `(?:[01]${D}|2[0-3]):[0-5]${D}:[0-5]${D}`, frac = `(?:\\.${D}+)?`;
  const offset = `(?:[Zz]|[+-](?:[01]${D}|2[0-3]):[0-5]${D})`;
  return `(?:${hms}${frac}${offset}|23:59:60${frac}(?:[Zz]|[+-]00:00))`;
})();

const DURATION = (() => {
  const n = `${D}+`;
  const second = `${n}S`, minute = `${n}M(?:${second})?`, hour = `${n}H(?:${minute})?`;
  const time = `T(?:${hour}|${minute}|${second})`;
  const day = `${n}D`, month = `${n}M(?:${day})?`, year = `${n}Y(?:${month})?`;
  return `P(?:(?:${day}|${month}|${year})(?:${time})?|${time}|${n}W)`;
})();

/** A label of at most `n` characters (n ≥ 2). */
const label = (n: number) => `[A-Za-z0-9](?:[A-Za-z0-9-]{0,${n - 2}}[A-Za-z0-9])?`;

/** Hostnames of at least `min` labels (1 or 2) in Kiln's subset (see above). */
const hostname = (min: number) =>
  `(?:${label(63)}(?:\\.${label(63)}){${min - 1},2}(?:\\.${label(61)})?` +
  `|${label(30)}(?:\\.${label(30)}){4,7})`;

const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";

const OCTET = `(?:25[0-5]|2[0-4]${D}|1${D}{2}|[1-9]?${D})`;
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`;

const IPV6 = (() => {
  const h16 = `${HEX}{1,4}`, ls32 = `(?:${h16}:${h16}|${IPV4})`;
  const head = (j: number) =>
    j === 0 ? "" : j === 1 ? `(?:${h16})?` : `(?:(?:${h16}:){0,${j - 1}}${h16})?`;
  const tails = [
    `(?:${h16}:){5}${ls32}`,
    `(?:${h16}:){4}${ls32}`,
    `(?:${h16}:){3}${ls32}`,
    `(?:${h16}:){2}${ls32}`,
    `${h16}:${ls32}`,
    ls32,
    h16,
    "",
  ];
  return `(?:(?:${h16}:){6}${ls32}|${tails.map((t, j) => `${head(j)}::${t}`).join("|")})`;
})();

const URI_PARTS = (() => {
  const unreserved = "A-Za-z0-9\\-._~", sub = "!$&'()*+,;=", pct = `%${HEX}{2}`;
  const pchar = `(?:[${unreserved}${sub}:@]|${pct})`;
  const segment = `${pchar}*`, nz = `${pchar}+`, nzNc = `(?:[${unreserved}${sub}@]|${pct})+`;
  const ipFuture = `[Vv]${HEX}+\\.[${unreserved}${sub}:]+`;
  // IPv4address is a reg-name too, so `host` needs no branch of its own for it.
  const host = `(?:\\[(?:${IPV6}|${ipFuture})\\]|(?:[${unreserved}${sub}]|${pct})*)`;
  const authority = `(?:(?:[${unreserved}${sub}:]|${pct})*@)?${host}(?::${D}*)?`;
  const abempty = `(?:/${segment})*`, absolute = `/(?:${nz}(?:/${segment})*)?`;
  const rest = `(?:\\?(?:${pchar}|[/?])*)?(?:#(?:${pchar}|[/?])*)?`;
  return {
    // hier-part not empty: ajv-formats reads `a:` (path-empty) as no URI, so Kiln writes none.
    uri:
      `[A-Za-z][A-Za-z0-9+\\-.]*:(?://${authority}${abempty}|${absolute}|${nz}(?:/${segment})*)${rest}`,
    uriReference:
      `[A-Za-z][A-Za-z0-9+\\-.]*:(?://${authority}${abempty}|${absolute}|${nz}(?:/${segment})*)?${rest}`,
    relative: `(?://${authority}${abempty}|${absolute}|${nzNc}(?:/${segment})*)?${rest}`,
  };
})();

const POINTER = "(?:/(?:[^~/]|~[01])*)*";

/** Each enforced format's pattern (whole string). */
export const FORMAT_PATTERNS: Readonly<Record<string, string>> = {
  "date": DATE,
  "time": TIME,
  "date-time": `${DATE}[Tt]${TIME}`,
  "duration": DURATION,
  "hostname": hostname(1),
  "email": `${ATEXT}+(?:\\.${ATEXT}+)*@${hostname(2)}`,
  "ipv4": IPV4,
  "ipv6": IPV6,
  "uuid": `${HEX}{8}-(?:${HEX}{4}-){3}${HEX}{12}`,
  "uri": URI_PARTS.uri,
  "uri-reference": `(?:${URI_PARTS.uriReference}|${URI_PARTS.relative})`,
  "json-pointer": POINTER,
  "relative-json-pointer": `(?:0|[1-9]${D}*)(?:#|${POINTER})`,
};

const REFUSED: Readonly<Record<string, string>> = {
  "idn-email": "internationalized addresses (RFC 6531) are not enforced",
  "idn-hostname": "IDNA2008's rules are not enforced",
  "iri": "IRIs (RFC 3987) are not enforced",
  "iri-reference": "IRIs (RFC 3987) are not enforced",
  "uri-template": "URI templates (RFC 6570) are not enforced",
  "regex": "ECMA-262 regular expressions nest, so no regular language is exactly them",
};

const trees = new Map<string, Regex>();

/** The tree of format `name`'s language (whole string); `PatternRefusal` for one not enforced. */
export function formatRegex(name: string): Regex {
  const known = trees.get(name);
  if (known !== undefined) return known;
  if (!Object.hasOwn(FORMAT_PATTERNS, name)) {
    const why = Object.hasOwn(REFUSED, name)
      ? REFUSED[name]!
      : "is not a format Kiln enforces (JSON Schema 2020-12's are named in docs/guided_decoding.md)";
    throw new PatternRefusal(`${JSON.stringify(name)}: ${why}`);
  }
  const tree = parseRegex(FORMAT_PATTERNS[name]!);
  trees.set(name, tree);
  return tree;
}
