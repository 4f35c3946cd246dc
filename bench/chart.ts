/**
 * Draw a bench result as an SVG bar chart: `deno run -A bench/chart.ts IN.json OUT.svg`.
 * For each shape, the kernel's GB/s beside its peer's, labelled with the ratio.
 */
interface Row {
  dtype: string;
  n: number;
  k: number;
  gb_per_s: number;
  peer_read_probe_gb_per_s: number;
  ratio_to_peer: number;
}

const [input, output] = Deno.args;
if (!input || !output) {
  console.error("usage: deno run -A bench/chart.ts IN.json OUT.svg");
  Deno.exit(2);
}
const report = JSON.parse(await Deno.readTextFile(input)) as {
  bench: string;
  adapter: string;
  results: Row[];
};
const rows = report.results;
const max = Math.max(...rows.flatMap((r) => [r.gb_per_s, r.peer_read_probe_gb_per_s]));
const W = 760, barH = 14, gap = 12, left = 150, top = 48;
const H = top + rows.length * (2 * barH + gap) + 30;
const x = (v: number) => ((W - left - 80) * v) / max;
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
const parts = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="100%" height="100%" fill="white"/>`,
  `<text x="10" y="20" font-size="14" font-weight="bold">${
    esc(report.bench)
  }: GB/s, kernel vs read probe</text>`,
  `<text x="10" y="36" fill="#555">${esc(report.adapter)}</text>`,
];
rows.forEach((r, i) => {
  const y = top + i * (2 * barH + gap);
  parts.push(`<text x="10" y="${y + barH + 4}">${r.dtype} ${r.n}×${r.k}</text>`);
  parts.push(
    `<rect x="${left}" y="${y}" width="${x(r.gb_per_s)}" height="${barH}" fill="#d9480f"/>`,
  );
  parts.push(
    `<text x="${left + x(r.gb_per_s) + 4}" y="${y + 11}">${r.gb_per_s.toFixed(0)} (×${
      r.ratio_to_peer.toFixed(2)
    })</text>`,
  );
  parts.push(
    `<rect x="${left}" y="${y + barH}" width="${
      x(r.peer_read_probe_gb_per_s)
    }" height="${barH}" fill="#868e96"/>`,
  );
  parts.push(
    `<text x="${left + x(r.peer_read_probe_gb_per_s) + 4}" y="${y + barH + 11}">${
      r.peer_read_probe_gb_per_s.toFixed(0)
    }</text>`,
  );
});
parts.push(
  `<text x="10" y="${
    H - 10
  }" fill="#555">orange: kernel, grey: peer (8 × 16-byte loads in flight per thread)</text>`,
  "</svg>",
);
await Deno.writeTextFile(output, parts.join("\n") + "\n");
