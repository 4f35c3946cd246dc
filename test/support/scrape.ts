/**
 * For tests: values read from a Prometheus text scrape (`/metrics`), by series name and,
 * optionally, labels the series must carry; and the scrape parsed into families by
 * `parse-prometheus-text-format`, typed.
 */
import parse from "parse-prometheus-text-format";

/** One metric family as `parse-prometheus-text-format` reads it. */
export interface ParsedFamily {
  name: string;
  type: string;
  help: string;
  metrics: {
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    sum?: string;
    count?: string;
  }[];
}

/** `text` parsed by `parse-prometheus-text-format` (an independent parser), one entry a family. */
export const parseFamilies = (text: string): ParsedFamily[] => parse(text) as ParsedFamily[];

/**
 * The value of the one series named `name` whose labels include every `labels` pair (as
 * `key="value"`); throws when there is none or more than one.
 */
export function scrapeValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const found: number[] = [];
  for (const line of text.split("\n")) {
    const m = line.match(/^([^\s{]+)(?:\{([^}]*)\})? (\S+)$/);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",");
    if (want.every((w) => have.includes(w))) found.push(Number(m[3]));
  }
  if (found.length !== 1) {
    throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} series in the scrape`);
  }
  return found[0]!;
}

/** The sum of every series named `name` whose labels include `labels` (0 when none). */
export function scrapeSum(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = line.match(/^([^\s{]+)(?:\{([^}]*)\})? (\S+)$/);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",");
    if (want.every((w) => have.includes(w))) sum += Number(m[3]);
  }
  return sum;
}
