/**
 * Prometheus text format 0.0.4 and OpenMetrics 1.0 rendering, chosen by an `Accept` header.
 */
import type { Labels, MetricFamily, Registry } from "./registry.ts";

/** The two exposition formats. */
export type Format = "prometheus" | "openmetrics";

/** The `Content-Type` header of each format. */
export const CONTENT_TYPES: Record<Format, string> = {
  prometheus: "text/plain; version=0.0.4; charset=utf-8",
  openmetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8",
};

/** OpenMetrics when the client asks for it (`application/openmetrics-text`), else 0.0.4 text. */
export function negotiate(
  accept: string | null | undefined,
): { format: Format; contentType: string } {
  const wantsOpenMetrics = (accept ?? "").split(",").some((part) => {
    const [type, ...params] = part.trim().split(";").map((s) => s.trim());
    if (type?.toLowerCase() !== "application/openmetrics-text") return false;
    const q = params.find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
  const format: Format = wantsOpenMetrics ? "openmetrics" : "prometheus";
  return { format, contentType: CONTENT_TYPES[format] };
}

function escapeHelp(text: string, format: Format): string {
  let out = text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
  if (format === "openmetrics") out = out.replace(/"/g, '\\"');
  return out;
}

/** A label value escaped for exposition text (backslash, double quote, newline). */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return "";
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
}

function renderFamily(f: MetricFamily, format: Format, out: string[]): void {
  const typeName = f.type === "counter" && format === "prometheus" ? `${f.name}_total` : f.name;
  out.push(`# HELP ${typeName} ${escapeHelp(f.help, format)}`);
  out.push(`# TYPE ${typeName} ${f.type}`);
  for (const s of f.series.values()) {
    if (f.type === "counter") {
      out.push(`${f.name}_total${labelText(s.labels)} ${formatValue(s.value)}`);
    } else if (f.type === "gauge") {
      out.push(`${f.name}${labelText(s.labels)} ${formatValue(s.value)}`);
    } else {
      let cumulative = 0;
      f.buckets.forEach((b, i) => {
        cumulative += s.bucketCounts![i]!;
        out.push(`${f.name}_bucket${labelText(s.labels, ["le", formatValue(b)])} ${cumulative}`);
      });
      out.push(`${f.name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${s.count}`);
      out.push(`${f.name}_sum${labelText(s.labels)} ${formatValue(s.sum!)}`);
      out.push(`${f.name}_count${labelText(s.labels)} ${s.count}`);
    }
  }
}

/** Render every family of the registries (and their callbacks' foreign text) in `format`. */
export function render(registries: readonly Registry[], format: Format): string {
  const out: string[] = [];
  for (const r of registries) for (const f of r.families.values()) renderFamily(f, format, out);
  let text = out.length > 0 ? `${out.join("\n")}\n` : "";
  for (const r of registries) {
    for (const cb of r.callbacks) {
      const foreign = cb();
      if (foreign.length > 0) text += foreign.endsWith("\n") ? foreign : `${foreign}\n`;
    }
  }
  if (format === "openmetrics") text += "# EOF\n";
  return text;
}
