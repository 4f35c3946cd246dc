/**
 * The live panel: reads the engine's Prometheus text (the same text a scraper gets from
 * `/metrics`), derives tokens/s, time to first token, KV cache use and prefix-cache hit rate, and
 * draws each as a number and a small chart of its recent values.
 */

/** Sum of every series of each metric name in a Prometheus text exposition. */
export function parseExposition(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (Number.isFinite(v)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + v);
  }
  return out;
}

interface Panel {
  key: string;
  label: string;
  format: (v: number) => string;
}

const PANELS: Panel[] = [
  { key: "tps", label: "tokens/s", format: (v) => v.toFixed(1) },
  { key: "ttft", label: "time to first token", format: (v) => `${(v * 1000).toFixed(0)} ms` },
  { key: "kv", label: "KV cache use", format: (v) => `${(v * 100).toFixed(1)} %` },
  { key: "hit", label: "prefix-cache hit rate", format: (v) => `${(v * 100).toFixed(1)} %` },
];

const HISTORY = 60;
const F = "dynamo_frontend_";
const C = "dynamo_component_";

export class MetricsPanel {
  readonly #history = new Map<string, number[]>();
  #last: { t: number; tokens: number; ttftSum: number; ttftCount: number } | undefined;
  readonly #cells = new Map<string, { value: HTMLElement; chart: SVGSVGElement }>();
  /** Scrapes read so far (tests wait on it). */
  scrapes = 0;

  constructor(readonly root: HTMLElement) {
    for (const p of PANELS) {
      const cell = document.createElement("div");
      cell.className = "metric";
      cell.dataset.metric = p.key;
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = p.label;
      const value = document.createElement("span");
      value.className = "value";
      value.textContent = "–";
      const chart = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      chart.setAttribute("viewBox", `0 0 ${HISTORY} 20`);
      chart.setAttribute("preserveAspectRatio", "none");
      cell.append(label, value, chart);
      root.append(cell);
      this.#cells.set(p.key, { value, chart });
    }
  }

  /** Take one scrape of Prometheus text taken at `t` ms. */
  update(text: string, t = performance.now()): void {
    const m = parseExposition(text);
    const ttftCount = m.get(`${F}time_to_first_token_seconds_count`) ?? 0;
    const ttftSum = m.get(`${F}time_to_first_token_seconds_sum`) ?? 0;
    const tokens = ttftCount + (m.get(`${F}inter_token_latency_seconds_count`) ?? 0);
    const now = { t, tokens, ttftSum, ttftCount };
    const prev = this.#last;
    this.#last = now;
    this.scrapes++;
    if (prev) {
      const dt = (t - prev.t) / 1000;
      this.#push("tps", dt > 0 ? (tokens - prev.tokens) / dt : 0);
      const n = ttftCount - prev.ttftCount;
      if (n > 0) this.#push("ttft", (ttftSum - prev.ttftSum) / n);
    }
    this.#push("kv", m.get(`${C}gpu_cache_usage_percent`) ?? 0);
    const hit = m.get(`${C}kv_cache_hit_rate`);
    if (hit !== undefined) this.#push("hit", hit);
  }

  #push(key: string, v: number): void {
    const h = this.#history.get(key) ?? [];
    h.push(v);
    if (h.length > HISTORY) h.shift();
    this.#history.set(key, h);
    const panel = PANELS.find((p) => p.key === key)!;
    const cell = this.#cells.get(key)!;
    cell.value.textContent = panel.format(v);
    const max = Math.max(...h, 1e-9);
    const pts = h.map((x, i) => `${HISTORY - h.length + i},${(20 - (x / max) * 18).toFixed(2)}`);
    cell.chart.innerHTML = `<polyline fill="none" stroke="currentColor" stroke-width="1" ` +
      `vector-effect="non-scaling-stroke" points="${pts.join(" ")}"/>`;
  }
}
