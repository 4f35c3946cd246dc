/**
 * The `kiln-bench` report as one SVG: decode tokens/s per shape and batch (and per context),
 * prefill tokens/s per prompt length, batch-1 weight reads beside the read probe, and Kiln ÷ peer
 * ratios when peers ran and the guard let them be published (`guard.ts`). Each panel has its own scale. The
 * caption names each CPU peer's thread count and every count it tried, and why a ratio is
 * missing.
 */
import type { BenchReport } from "./report.ts";
import { publishable, withheldBecause } from "./guard.ts";
import { describeSweep } from "./threads.ts";

interface Bar {
  label: string;
  value: number;
  text: string;
  grey?: boolean;
}

interface Panel {
  title: string;
  bars: Bar[];
  /** Draw a reference line at this value (ratios: 1). */
  mark?: number;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const num = (x: number, d = 1) => x.toFixed(x >= 100 ? 0 : x >= 10 ? d : 2);

function panels(r: BenchReport): Panel[] {
  const ok = r.shapes.filter((s) => !s.error);
  const out: Panel[] = [
    {
      title: "decode tokens/s, all streams (greedy)",
      bars: ok.flatMap((s) =>
        (s.decode ?? []).map((d) => ({
          label: `${s.shape} ×${d.batch}`,
          value: d.tokens_per_s,
          text: `${num(d.tokens_per_s, 2)} tokens/s`,
        }))
      ),
    },
    {
      title: "guided (JSON Schema) decode tokens/s, all streams; then without forced stretches; " +
        "grey: the same streams free",
      bars: ok.flatMap((s) =>
        (s.guided?.decode ?? []).flatMap((d) => [
          {
            label: `${s.shape} ×${d.batch}`,
            value: d.guided_tps,
            text: `${num(d.guided_tps, 2)} tokens/s (×${d.ratio.toFixed(2)} of free)`,
          },
          ...(d.guided_unforced_tps === undefined ? [] : [{
            label: "",
            value: d.guided_unforced_tps,
            text: `${num(d.guided_unforced_tps, 2)} unforced (×${d.ratio_unforced.toFixed(2)})`,
          }]),
          { label: "", value: d.free_tps, text: num(d.free_tps, 2), grey: true },
        ])
      ),
    },
    {
      title: "prefill tokens/s, one request (time to first token)",
      bars: ok.flatMap((s) =>
        (s.prefill ?? []).map((p) => ({
          label: `${s.shape} ${p.prompt_tokens}`,
          value: p.tokens_per_s,
          text: `${num(p.tokens_per_s)} tokens/s, TTFT ${p.ttft_s.toFixed(2)} s`,
        }))
      ),
    },
    {
      title: "decode tokens/s of one stream after a prompt of each length (context)",
      bars: ok.flatMap((s) =>
        (s.contexts ?? []).map((c) => ({
          label: `${s.shape} ctx ${c.prompt_tokens}`,
          value: c.tokens_per_s,
          text: `${num(c.tokens_per_s, 2)} tokens/s (×${c.ratio_to_shortest.toFixed(2)})`,
        }))
      ),
    },
    {
      title: "weight reads at batch 1, GB/s (grey: read probe)",
      bars: ok.flatMap((s) => {
        const w = s.weight_reads;
        if (!w) return [];
        return [
          {
            label: s.shape,
            value: w.gb_per_s,
            text: `${num(w.gb_per_s, 2)} GB/s (×${w.ratio_to_probe.toFixed(2)} of probe)`,
          },
          { label: "", value: w.probe_gb_per_s, text: `${num(w.probe_gb_per_s, 2)}`, grey: true },
        ];
      }),
    },
  ];
  const ratios = ok.flatMap((s) =>
    (s.peers ?? []).filter(publishable).flatMap((p) => [
      ...(p.decode ?? []).map((d) => ({
        label: `${s.shape} ${p.name} ×${d.batch}`,
        value: d.kiln_over_peer,
        text: `×${d.kiln_over_peer.toFixed(2)}`,
      })),
      ...(p.prefill ?? []).map((d) => ({
        label: `${s.shape} ${p.name} prefill ${d.prompt_tokens}`,
        value: d.kiln_over_peer,
        text: `×${d.kiln_over_peer.toFixed(2)}`,
      })),
    ])
  );
  if (ratios.length > 0) {
    out.push({ title: "Kiln ÷ peer (median of interleaved rounds)", bars: ratios, mark: 1 });
  }
  return out.filter((p) => p.bars.length > 0);
}

const clip = (s: string, n = 118) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Caption lines: each CPU peer's thread choice per workload, and each withheld ratio. */
export function peerCaption(r: BenchReport): string[] {
  const out: string[] = [];
  for (const s of r.shapes) {
    for (const p of s.peers ?? []) {
      for (const d of p.decode ?? []) {
        if (d.threads) {
          out.push(`${s.shape} ${p.name}, batch ${d.batch}: ${describeSweep(d.threads)}`);
        }
      }
      for (const d of p.prefill ?? []) {
        if (d.threads) {
          out.push(`${s.shape} ${p.name}, prefill ${d.prompt_tokens}: ${describeSweep(d.threads)}`);
        }
      }
      if ((p.decode ?? p.prefill) && !publishable(p)) {
        const why = withheldBecause(p);
        const more = why.length > 1 ? ` (${why.length} reasons in the JSON)` : "";
        out.push(clip(`${s.shape} ${p.name}: Kiln ÷ peer withheld${more}: ${why[0]}`));
      }
    }
  }
  return out;
}

/** The SVG document for a report. */
export function renderBenchChart(r: BenchReport): string {
  const captions = [
    ...(typeof r.options.caption === "string" ? [r.options.caption] : []),
    ...peerCaption(r),
  ];
  const W = 820, left = 210, right = 230, barH = 16, gap = 4, top = 52 + 18 * captions.length;
  // Generated checkpoints carry a manifest hash; a model folder given with --model does not.
  const random = r.shapes.every((s) => s.checkpoint_sha256 !== undefined || s.error);
  const title = random
    ? "Kiln benchmark: random-weight checkpoints of real model shapes"
    : `Kiln benchmark: ${r.shapes.map((s) => s.shape).join(", ")}`;
  const parts: string[] = [];
  let y = top;
  for (const p of panels(r)) {
    parts.push(`<text x="10" y="${y + 14}" font-weight="bold">${esc(p.title)}</text>`);
    y += 24;
    const max = Math.max(p.mark ?? 0, ...p.bars.map((b) => b.value)) || 1;
    const x = (v: number) => ((W - left - right) * v) / max;
    for (const b of p.bars) {
      parts.push(
        `<text x="${left - 6}" y="${y + 12}" text-anchor="end">${esc(b.label)}</text>`,
        `<rect x="${left}" y="${y}" width="${x(b.value).toFixed(1)}" height="${barH}" fill="${
          b.grey ? "#868e96" : "#d9480f"
        }"/>`,
        `<text x="${(left + x(b.value) + 4).toFixed(1)}" y="${y + 12}">${esc(b.text)}</text>`,
      );
      y += barH + gap;
    }
    if (p.mark !== undefined) {
      const mx = (left + x(p.mark)).toFixed(1);
      parts.push(
        `<line x1="${mx}" y1="${
          y - p.bars.length * (barH + gap)
        }" x2="${mx}" y2="${y}" stroke="#333" stroke-dasharray="3 3"/>`,
      );
    }
    y += 14;
  }
  for (const s of r.shapes.filter((s) => s.error)) {
    parts.push(
      `<text x="10" y="${y + 12}" fill="#a00">${
        esc(`${s.shape}: not measured: ${s.error}`)
      }</text>`,
    );
    y += 18;
  }
  const H = y + 24;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<text x="10" y="38" fill="#555">${esc(`${r.adapter}, ${r.date.slice(0, 10)}`)}</text>`,
    ...captions.map((c, i) => `<text x="10" y="${56 + 18 * i}" fill="#555">${esc(c)}</text>`),
    ...parts,
    `<text x="10" y="${H - 10}" fill="#555">${
      esc(
        `${
          random ? "F16 weights; " : ""
        }decode: greedy, ignore_eos, first token to last; read probe: ${
          r.probe.bytes / 2 ** 20
        } MiB, ${r.probe.gb_per_s.toFixed(2)} GB/s`,
      )
    }</text>`,
    "</svg>",
    "",
  ].join("\n");
}
